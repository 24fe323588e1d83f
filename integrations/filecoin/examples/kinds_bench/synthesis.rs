//! `kinds_bench synthesis`: one partition of each kind synthesised directly and from its
//! recording, alternating (see main.rs).

use std::path::Path;
use std::time::Instant;

use bellows_core::groth16::synthesis::synthesize;
use bellows_core::pce::Pce;
use bellows_core::{Error, Result};
use bellows_filecoin::filecoin_proofs::types::MerkleTreeTrait;
use bellows_filecoin::filecoin_proofs::TreeRHasher;
use bellows_filecoin::post::{self, PostInput};
use bellows_filecoin::testing::{cpu_seconds, init_filecoin_env, post_vanilla, update_sector};
use bellows_filecoin::update::{self, UpdateInput};
use bellows_filecoin::{synth_c1, with_sector_shape};
use bellpepper_core::Circuit;
use blstrs::Scalar as Fr;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use crate::{randomness, seal, types, Args};

/// One kind's synthesis figures, in seconds: the recording's, then medians of wall and process
/// CPU time (all threads; it shows the work apart from what a loaded machine's wall time adds).
struct Row {
    kind: &'static str,
    size: String,
    constraints: usize,
    record: f64,
    direct: f64,
    pce: f64,
    direct_cpu: f64,
    pce_cpu: f64,
    /// The pre-compiled synthesis's witness phase (the circuit's closures; the products that
    /// outlast it make up the rest).
    witness: f64,
}

/// Seals a sector of each size and prints the table.
pub(crate) fn run(a: &Args) -> Result<()> {
    let reps = if a.reps == 0 { 5 } else { a.reps };
    std::fs::create_dir_all(&a.work).map_err(|e| Error::io("creating the work folder", e))?;
    init_filecoin_env(&a.work.join("params"), &a.work);
    let mut rows = Vec::new();
    for label in &a.sectors {
        let t = types(label)?;
        let s = seal(&t, &a.work, a.miner)?;
        let winning = post_vanilla(t.winning.1, &s, randomness())?;
        let window = post_vanilla(t.window.1, &s, randomness())?;
        let seal_proof = synth_c1::proof_for_sector_size(t.bytes)?;
        let dir = a.work.join(format!("update-{label}"));
        let _ = std::fs::remove_dir_all(&dir);
        let mut rng = ChaCha20Rng::seed_from_u64(77);
        let snap = update_sector(&s, seal_proof, t.update, &dir, &mut rng)?;
        // A fresh folder, so that the first call records (its time is the one-time cost).
        let pce_dir = a.work.join(format!("pce-{label}"));
        let _ = std::fs::remove_dir_all(&pce_dir);
        let inputs = KindInputs {
            label,
            winning: &winning,
            window: &window,
            snap: &snap,
            pce_dir: &pce_dir,
            reps,
        };
        rows.extend(with_sector_shape!(t.bytes, measure, &inputs)?);
    }
    println!(
        "{:<22} {:>6} {:>11} {:>9} {:>9} {:>9} {:>6} {:>9} {:>9} {:>9}",
        "kind",
        "size",
        "constraints",
        "record s",
        "direct s",
        "pce s",
        "ratio",
        "direct cpu",
        "pce cpu",
        "witness s"
    );
    for r in &rows {
        println!(
            "{:<22} {:>6} {:>11} {:>9.3} {:>9.4} {:>9.4} {:>6.2} {:>9.2} {:>9.2} {:>9.4}",
            r.kind,
            r.size,
            r.constraints,
            r.record,
            r.direct,
            r.pce,
            r.pce / r.direct,
            r.direct_cpu,
            r.pce_cpu,
            r.witness
        );
    }
    println!(
        "medians of {reps} reps each, alternating, on {} threads; ratio = pre-compiled / direct \
         (wall); cpu = the process's CPU seconds; witness = the pre-compiled synthesis's witness phase",
        rayon::current_num_threads()
    );
    for r in &rows {
        println!(
            "{}",
            serde_json::json!({
                "kind": r.kind, "size": r.size, "constraints": r.constraints, "reps": reps,
                "pce_record_s": r.record, "direct_s": r.direct, "pce_s": r.pce,
                "ratio": r.pce / r.direct, "direct_cpu_s": r.direct_cpu, "pce_cpu_s": r.pce_cpu,
                "pce_witness_s": r.witness, "threads": rayon::current_num_threads(),
            })
        );
    }
    Ok(())
}

/// What [`measure`] synthesises, for one sector size.
struct KindInputs<'a> {
    label: &'a str,
    winning: &'a PostInput,
    window: &'a PostInput,
    snap: &'a UpdateInput,
    pce_dir: &'a Path,
    reps: usize,
}

fn measure<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    k: &KindInputs<'_>,
) -> Result<Vec<Row>> {
    let win = first(post::instance::<Tree>(k.winning)?.circuits)?;
    let started = Instant::now();
    let pce = post::pce(k.winning.proof, k.pce_dir)?;
    let record = started.elapsed().as_secs_f64();
    let winning = time_kind("WinningPoSt", k, record, &pce, || Ok(win.clone()))?;

    let part = first(post::partition_instance::<Tree>(k.window, 0)?.circuits)?;
    let started = Instant::now();
    let pce = post::pce(k.window.proof, k.pce_dir)?;
    let record = started.elapsed().as_secs_f64();
    let window = time_kind("WindowPoSt partition", k, record, &pce, || Ok(part.clone()))?;

    // The update circuit is not Clone: built again for each synthesis (not timed).
    let started = Instant::now();
    let pce = update::pce(k.snap.proof, k.pce_dir)?;
    let record = started.elapsed().as_secs_f64();
    let snap = time_kind("SnapDeals partition", k, record, &pce, || {
        first(update::instance::<Tree>(k.snap)?.circuits)
    })?;
    Ok(vec![winning, window, snap])
}

/// `k.reps` direct and pre-compiled syntheses of the circuits `make` builds, alternating; the
/// first pair compared value for value.
fn time_kind<C: Circuit<Fr> + Send>(
    kind: &'static str,
    k: &KindInputs<'_>,
    record: f64,
    pce: &Pce,
    mut make: impl FnMut() -> Result<C>,
) -> Result<Row> {
    let (mut direct, mut replayed) = (Times::default(), Times::default());
    let mut witness = Vec::new();
    let mut constraints = 0;
    for rep in 0..k.reps {
        let c = make()?;
        let d = direct.time(|| synthesize(c))?;
        let c = make()?;
        let (p, phases) = replayed.time(|| pce.synthesize_timed(c, None))?;
        witness.push(phases.witness.as_secs_f64());
        if rep == 0 {
            let same = d.a[..] == p.a[..]
                && d.b[..] == p.b[..]
                && d.c[..] == p.c[..]
                && d.input_assignment == p.input_assignment
                && d.aux_assignment[..] == p.aux_assignment[..];
            if !same {
                return Err(Error::invalid(format!(
                    "{kind} {}: the pre-compiled synthesis differs from the direct one",
                    k.label
                )));
            }
            constraints = d.num_constraints();
        }
    }
    Ok(Row {
        kind,
        size: k.label.to_string(),
        constraints,
        record,
        direct: median(direct.wall),
        pce: median(replayed.wall),
        direct_cpu: median(direct.cpu),
        pce_cpu: median(replayed.cpu),
        witness: median(witness),
    })
}

/// Wall and process CPU seconds of each call timed.
#[derive(Default)]
struct Times {
    wall: Vec<f64>,
    cpu: Vec<f64>,
}

impl Times {
    fn time<T>(&mut self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let (t, c) = (Instant::now(), cpu_seconds());
        let r = f()?;
        self.wall.push(t.elapsed().as_secs_f64());
        self.cpu.push(cpu_seconds() - c);
        Ok(r)
    }
}

/// The first partition's circuit.
fn first<C>(circuits: Vec<C>) -> Result<C> {
    circuits
        .into_iter()
        .next()
        .ok_or_else(|| Error::invalid("no partition"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}
