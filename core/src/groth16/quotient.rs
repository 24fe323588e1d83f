//! The Groth16 quotient polynomial h(x) = (A(x)·B(x) − C(x)) / Z(x) from primitive transforms.
//!
//! It is the default body of `Ntt::h_poly`, so it lives with the backend traits in
//! bellows-backend-api ([`crate::backend::quotient`]); re-exported here, where the prover's
//! readers look for it.

pub use crate::backend::quotient::{
    coset_generator, h_poly_from_primitives, pointwise_quotient, z_inverse_on_coset,
};
