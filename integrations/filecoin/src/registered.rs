//! Filecoin's proof types by number, as the network's actors number them (go-state-types'
//! `abi.RegisteredSealProof`, `abi.RegisteredPoStProof`, `abi.RegisteredUpdateProof`): what
//! lotus and Curio put on the wire, mapped onto filecoin-proofs-api's enums.
//!
//! The seal and update numbers follow the api's declaration order. The PoSt numbers do too,
//! with one renaming: the network's `StackedDrgWindow…V1_1` (10 to 14, WindowPoSt since
//! network version 19) are the api's `StackedDrgWindow…V1_2`, as filecoin-ffi maps them.

use bellows_core::{Error, Result};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

use RegisteredPoStProof as P;
use RegisteredSealProof as S;
use RegisteredUpdateProof as U;

/// `abi.RegisteredSealProof` 0 to 19.
const SEAL: [S; 20] = [
    S::StackedDrg2KiBV1,
    S::StackedDrg8MiBV1,
    S::StackedDrg512MiBV1,
    S::StackedDrg32GiBV1,
    S::StackedDrg64GiBV1,
    S::StackedDrg2KiBV1_1,
    S::StackedDrg8MiBV1_1,
    S::StackedDrg512MiBV1_1,
    S::StackedDrg32GiBV1_1,
    S::StackedDrg64GiBV1_1,
    S::StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
    S::StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
    S::StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
    S::StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
    S::StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
    S::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
    S::StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
    S::StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
    S::StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
    S::StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
];

/// `abi.RegisteredPoStProof` 0 to 14.
const POST: [P; 15] = [
    P::StackedDrgWinning2KiBV1,
    P::StackedDrgWinning8MiBV1,
    P::StackedDrgWinning512MiBV1,
    P::StackedDrgWinning32GiBV1,
    P::StackedDrgWinning64GiBV1,
    P::StackedDrgWindow2KiBV1,
    P::StackedDrgWindow8MiBV1,
    P::StackedDrgWindow512MiBV1,
    P::StackedDrgWindow32GiBV1,
    P::StackedDrgWindow64GiBV1,
    P::StackedDrgWindow2KiBV1_2,
    P::StackedDrgWindow8MiBV1_2,
    P::StackedDrgWindow512MiBV1_2,
    P::StackedDrgWindow32GiBV1_2,
    P::StackedDrgWindow64GiBV1_2,
];

/// `abi.RegisteredUpdateProof` 0 to 4.
const UPDATE: [U; 5] = [
    U::StackedDrg2KiBV1,
    U::StackedDrg8MiBV1,
    U::StackedDrg512MiBV1,
    U::StackedDrg32GiBV1,
    U::StackedDrg64GiBV1,
];

fn lookup<T: Copy>(table: &[T], n: u64, name: &str) -> Result<T> {
    usize::try_from(n)
        .ok()
        .and_then(|i| table.get(i).copied())
        .ok_or_else(|| {
            Error::invalid(format!(
                "registered_proof {n} is not a {name} (Filecoin numbers them 0 to {})",
                table.len() - 1
            ))
        })
}

/// The seal proof type numbered `n` on the network.
pub fn seal_proof(n: u64) -> Result<RegisteredSealProof> {
    lookup(&SEAL, n, "RegisteredSealProof")
}

/// The PoSt proof type numbered `n` on the network (10 to 14 are the api's `…V1_2`).
pub fn post_proof(n: u64) -> Result<RegisteredPoStProof> {
    lookup(&POST, n, "RegisteredPoStProof")
}

/// The update proof type numbered `n` on the network.
pub fn update_proof(n: u64) -> Result<RegisteredUpdateProof> {
    lookup(&UPDATE, n, "RegisteredUpdateProof")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes cycle 2 KiB, 8 MiB, 512 MiB, 32 GiB, 64 GiB within each group of five, as the
    /// network's numbering does; the groups are the versions.
    #[test]
    fn numbers_follow_the_networks_groups_of_five() {
        let sizes: [u64; 5] = [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];
        for n in 0..20u64 {
            let p = seal_proof(n).unwrap();
            assert_eq!(u64::from(p.sector_size()), sizes[n as usize % 5], "{p:?}");
            let version = format!("{p:?}");
            let want = [
                "V1",
                "V1_1",
                "V1_1_Feat_SyntheticPoRep",
                "V1_2_Feat_NonInteractivePoRep",
            ][n as usize / 5];
            assert!(version.ends_with(&format!("B{want}")), "{n}: {version}");
        }
        for n in 0..15u64 {
            let p = post_proof(n).unwrap();
            assert_eq!(u64::from(p.sector_size()), sizes[n as usize % 5], "{p:?}");
            let name = format!("{p:?}");
            let want = ["Winning", "Window", "Window"][n as usize / 5];
            assert!(name.contains(want), "{n}: {name}");
            assert_eq!(name.ends_with("V1_2"), n >= 10, "{n}: {name}");
        }
        assert_eq!(post_proof(13).unwrap(), P::StackedDrgWindow32GiBV1_2);
        for n in 0..5u64 {
            let p = update_proof(n).unwrap();
            assert_eq!(u64::from(p.sector_size()), sizes[n as usize], "{p:?}");
        }
    }

    #[test]
    fn unknown_numbers_are_named() {
        let e = seal_proof(20).unwrap_err().to_string();
        assert!(
            e.contains("registered_proof 20") && e.contains("RegisteredSealProof"),
            "{e}"
        );
        assert!(post_proof(15).is_err());
        assert!(update_proof(5).unwrap_err().to_string().contains("0 to 4"));
        assert!(seal_proof(u64::MAX).is_err());
    }
}
