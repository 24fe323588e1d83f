// Fault modes of the `faulty` test plugin, selected by `BackendConfig::device` (the index in this
// list). Shared with the tests through `include!`, so both always agree.

/// Fault modes: `ok`, `panic:CALL`, `error:CALL`, `wrong-length:CALL`.
pub const MODES: &[&str] = &[
    "ok",
    "panic:create",
    "panic:info",
    "panic:ntt",
    "panic:h_poly",
    "panic:load_bases_g1",
    "panic:load_bases_g2",
    "panic:free_bases",
    "panic:msm_g1",
    "panic:msm_g2",
    "panic:memory_info",
    "panic:set_memory_budget",
    "panic:trim",
    "panic:drop",
    "error:create",
    "error:ntt",
    "error:h_poly",
    "error:load_bases_g1",
    "error:msm_g1",
    "wrong-length:msm_g1",
    "wrong-length:msm_g2",
    "wrong-length:load_bases_g1",
    "panic:groth16_g1",
    "error:groth16_g1",
    "wrong-length:groth16_g1",
];
