//! Test plugin: a shared library that is not a Bellows plugin (it exports an unrelated C
//! function and no root module). Loading it must fail with "not a Bellows plugin".

/// An unrelated exported function.
#[no_mangle]
pub extern "C" fn bellows_test_not_a_plugin_answer() -> u32 {
    42
}
