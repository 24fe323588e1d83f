//! The cuzk API's priority classes on the engine's scale (higher runs first; the Bellows API's
//! jobs default to 0).
//!
//! cuzk orders LOW < NORMAL < HIGH < CRITICAL, and a request that names none takes its kind's
//! class: WinningPoSt CRITICAL (a WinningPoSt is worth nothing after its epoch), WindowPoSt
//! HIGH, PoRep and SnapDeals NORMAL. NORMAL is the Bellows API's default 0, so Curio's PoRep
//! jobs queue beside other clients' jobs; CRITICAL is the top of the scale, ahead of everything,
//! and a CRITICAL partition also has a synthesis worker and a device worker of its own
//! (docs/curio.md, "Priorities").

use crate::proto::cuzk::v1::{Priority, ProofKind};

/// The engine priority of CRITICAL requests: above any other.
pub const CRITICAL: i32 = i32::MAX;
/// HIGH (WindowPoSt's default).
pub const HIGH: i32 = 1000;
/// NORMAL: the Bellows API's default.
pub const NORMAL: i32 = 0;
/// LOW.
pub const LOW: i32 = -1000;

/// The engine priority of a cuzk request with `priority` (the proto's number) for a proof of
/// `proof_kind`: its class, or its kind's default class when it names none.
pub fn priority(priority: i32, proof_kind: i32) -> i32 {
    match Priority::try_from(priority) {
        Ok(Priority::Low) => LOW,
        Ok(Priority::Normal) => NORMAL,
        Ok(Priority::High) => HIGH,
        Ok(Priority::Critical) => CRITICAL,
        _ => match ProofKind::try_from(proof_kind) {
            Ok(ProofKind::WinningPost) => CRITICAL,
            Ok(ProofKind::WindowPostPartition) => HIGH,
            _ => NORMAL,
        },
    }
}

/// The cuzk class of an engine priority (for listings): the class whose value it is at least.
pub fn class(p: i32) -> Priority {
    match p {
        CRITICAL => Priority::Critical,
        p if p >= HIGH => Priority::High,
        p if p >= NORMAL => Priority::Normal,
        _ => Priority::Low,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_order_and_default_by_kind() {
        const { assert!(LOW < NORMAL && NORMAL < HIGH && HIGH < CRITICAL) };
        let winning = ProofKind::WinningPost as i32;
        let window = ProofKind::WindowPostPartition as i32;
        let porep = ProofKind::PorepSealCommit as i32;
        assert_eq!(priority(Priority::Unspecified as i32, winning), CRITICAL);
        assert_eq!(priority(0, window), HIGH);
        assert_eq!(priority(0, porep), NORMAL);
        assert_eq!(
            priority(Priority::Low as i32, winning),
            LOW,
            "an explicit class wins"
        );
        assert_eq!(priority(Priority::Critical as i32, porep), CRITICAL);
        assert_eq!(
            priority(99, porep),
            NORMAL,
            "an unknown class is the kind's default"
        );
        for p in [LOW, NORMAL, HIGH, CRITICAL] {
            assert_eq!(priority(class(p) as i32, porep), p);
        }
    }
}
