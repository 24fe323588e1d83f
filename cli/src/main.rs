//! The `bellows` command (in progress).
fn main() {}
