//! The cuzk API, `cuzk.v1.ProvingEngine` (proto/cuzk/v1/proving.proto): what Curio calls to
//! have its SNARKs proved, served on the same engine as the Bellows API (docs/curio.md).

mod priority;
mod service;
mod status;

pub use priority::{class, priority, CRITICAL, HIGH, LOW, NORMAL};
pub use service::CuzkService;

use prost::Message;
use sha2::{Digest, Sha256};

use crate::proto::cuzk::v1 as pb;

/// SHA-256 of what `req` asks to be proved: every field but the caller's `request_id` and the
/// `priority` (the same proof asked for again, at another priority, is the same job). With the
/// `request_id`, what the journal keeps to tell a request submitted again from another one
/// under the same key.
pub fn content_digest(req: &pb::SubmitProofRequest) -> [u8; 32] {
    let mut c = req.clone();
    c.request_id.clear();
    c.priority = 0;
    Sha256::digest(c.encode_to_vec()).into()
}
