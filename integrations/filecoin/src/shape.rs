//! From a sector size to the merkle-tree shape type the circuits are generic over: the one
//! dispatch every proof kind goes through ([`with_sector_shape!`], used by [`crate::kind`]).

use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs::TreeRHasher;

/// A sector shape: the merkle-tree type of one of Filecoin's sector sizes (all of them are trees
/// over Poseidon, the hasher every proof kind's circuit needs).
pub(crate) trait Shape: 'static + MerkleTreeTrait<Hasher = TreeRHasher> {}
impl<T: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Shape for T {}

/// Calls `$f::<Shape>($args…)` (or `$f::<Shape, G…>($args…)` when written `$f::<G…>`) for the
/// sector shape of `$size` bytes (2 KiB, 8 MiB, 512 MiB, 32 GiB or 64 GiB: the production
/// sizes), or evaluates to an `Err` naming the size. `$f` returns `bellows_core::Result<_>`.
#[macro_export]
macro_rules! with_sector_shape {
    ($size:expr, $f:ident $(::<$($g:ty),+>)? $(, $args:expr)* $(,)?) => {{
        use $crate::filecoin_proofs::constants as c;
        match $size {
            s if s == c::SECTOR_SIZE_2_KIB => $f::<c::SectorShape2KiB $($(, $g)+)?>($($args),*),
            s if s == c::SECTOR_SIZE_8_MIB => $f::<c::SectorShape8MiB $($(, $g)+)?>($($args),*),
            s if s == c::SECTOR_SIZE_512_MIB => {
                $f::<c::SectorShape512MiB $($(, $g)+)?>($($args),*)
            }
            s if s == c::SECTOR_SIZE_32_GIB => $f::<c::SectorShape32GiB $($(, $g)+)?>($($args),*),
            s if s == c::SECTOR_SIZE_64_GIB => $f::<c::SectorShape64GiB $($(, $g)+)?>($($args),*),
            s => Err(bellows_core::Error::invalid(format!(
                "sector size {s} bytes is not one of Filecoin's (2 KiB, 8 MiB, 512 MiB, 32 GiB, \
                 64 GiB)"
            ))),
        }
    }};
}

/// Turns an error of filecoin-proofs (anyhow) into a Bellows error with `context`.
pub(crate) fn proofs_error(context: &str, e: impl std::fmt::Display) -> bellows_core::Error {
    bellows_core::Error::invalid(format!("{context}: {e:#}"))
}

/// Runs `f`, turning a panic inside filecoin-proofs (which some of its checks use on malformed
/// data) into an error about `what`, so that bad input never takes the process down.
pub(crate) fn no_panic<T>(
    what: &str,
    f: impl FnOnce() -> bellows_core::Result<T>,
) -> bellows_core::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        Err(bellows_core::Error::malformed(
            what,
            format!(
                "filecoin-proofs stopped with a panic while reading it: {}",
                bellows_core::error::panic_message(&*p)
            ),
        ))
    })
}
