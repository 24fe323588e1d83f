//! A Filecoin proof's partition circuits, kept so that any partition can be synthesised when
//! the engine asks (again, after a device fault), behind the sector shape they are generic
//! over; and how each kind builds them from its input (bellows-filecoin's code, which is
//! storage-proofs' own).

use std::sync::{Arc, Mutex};

use bellows_core::groth16::synthesis::{synthesize, Synthesized};
use bellows_core::pce::Pce;
use bellows_core::Backend;
use bellows_filecoin::filecoin_proofs::types::MerkleTreeTrait;
use bellows_filecoin::filecoin_proofs::TreeRHasher;
use bellows_filecoin::post::{self, PostInput};
use bellows_filecoin::prove::{Guarded, Instance};
use bellows_filecoin::update::{self, UpdateInput};
use bellows_filecoin::{porep, C1Output};
use bellpepper_core::Circuit;
use blstrs::Scalar;

/// The partition circuits of one proof.
pub(crate) trait Circuits: Send + Sync {
    /// Synthesises partition `k`, directly or with the recording `pce`, into `host`'s memory
    /// (pinned on a device backend) when given. A partition can be synthesised any number of
    /// times.
    fn synthesize(
        &self,
        k: usize,
        pce: Option<&Pce>,
        host: Option<&Arc<dyn Backend>>,
    ) -> bellows_core::Result<Synthesized>;
}

/// How a proof's circuits give partition `k`, each time it is synthesised.
trait Partitions: Send + Sync {
    /// The partition circuit.
    type Circuit: Circuit<Scalar> + Send;
    /// Partition `k`'s circuit, to be synthesised once.
    fn partition(&self, k: usize) -> bellows_core::Result<Self::Circuit>;
}

impl<T: Partitions> Circuits for T {
    fn synthesize(
        &self,
        k: usize,
        pce: Option<&Pce>,
        host: Option<&Arc<dyn Backend>>,
    ) -> bellows_core::Result<Synthesized> {
        let c = Guarded(self.partition(k)?);
        // A panic in a gadget fails the job with a message instead of taking a worker down.
        match pce {
            Some(p) => p.synthesize_for(c, host),
            None => synthesize(c),
        }
    }
}

fn no_partition(k: usize, n: usize) -> bellows_core::Error {
    bellows_core::Error::invalid(format!("partition {k} of a job of {n} partitions"))
}

/// Circuits that can be cloned: each synthesis takes a fresh copy.
struct Cloned<C>(Vec<C>);

impl<C: Circuit<Scalar> + Clone + Send + Sync> Partitions for Cloned<C> {
    type Circuit = C;
    fn partition(&self, k: usize) -> bellows_core::Result<C> {
        let c = self.0.get(k).ok_or_else(|| no_partition(k, self.0.len()))?;
        Ok(c.clone())
    }
}

/// Circuits that cannot be cloned (storage-proofs-update's): each is synthesised once as
/// built; a partition synthesised again (a retry) is built again from the input with `rebuild`.
struct Rebuilt<C, F> {
    circuits: Mutex<Vec<Option<C>>>,
    rebuild: F,
}

impl<C, F> Partitions for Rebuilt<C, F>
where
    C: Circuit<Scalar> + Send,
    F: Fn() -> bellows_core::Result<Vec<C>> + Send + Sync,
{
    type Circuit = C;
    fn partition(&self, k: usize) -> bellows_core::Result<C> {
        let kept = {
            let mut v = self.circuits.lock().unwrap_or_else(|e| e.into_inner());
            let n = v.len();
            v.get_mut(k).ok_or_else(|| no_partition(k, n))?.take()
        };
        match kept {
            Some(c) => Ok(c),
            None => (self.rebuild)()?
                .into_iter()
                .nth(k)
                .ok_or_else(|| no_partition(k, 0)),
        }
    }
}

/// A proof's partition circuits, each partition's public inputs, the parameter-cache id.
pub(crate) type Built = (Box<dyn Circuits>, Vec<Vec<Scalar>>, String);

/// An instance of circuits that can be cloned, as [`Built`].
fn cloned<C: Circuit<Scalar> + Clone + Send + Sync + 'static>(inst: Instance<C>) -> Built {
    let circuits: Box<dyn Circuits> = Box::new(Cloned(inst.circuits));
    (circuits, inst.public_inputs, inst.cache_id)
}

/// The PoRep partition circuits of `c1` (its vanilla proofs verified), for its shape `Tree`.
pub(crate) fn porep_circuits<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Output,
) -> bellows_core::Result<Built> {
    porep::instance::<Tree>(c1).map(cloned)
}

/// The WinningPoSt circuit of `input` (its vanilla proofs verified).
pub(crate) fn winning_circuits<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
) -> bellows_core::Result<Built> {
    post::instance::<Tree>(input).map(cloned)
}

/// The circuit of WindowPoSt partition `index` from its sectors' vanilla proofs.
pub(crate) fn window_circuits<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
    index: usize,
) -> bellows_core::Result<Built> {
    post::partition_instance::<Tree>(input, index).map(cloned)
}

/// The SnapDeals partition circuits of `input` (its vanilla proofs verified).
pub(crate) fn snap_circuits<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &UpdateInput,
) -> bellows_core::Result<Built> {
    let inst = update::instance::<Tree>(input)?;
    let again = input.clone();
    Ok((
        Box::new(Rebuilt {
            circuits: Mutex::new(inst.circuits.into_iter().map(Some).collect()),
            rebuild: move || Ok(update::instance::<Tree>(&again)?.circuits),
        }),
        inst.public_inputs,
        inst.cache_id,
    ))
}
