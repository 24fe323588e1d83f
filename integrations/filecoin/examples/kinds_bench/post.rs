//! `kinds_bench post-requests` and `post-peer`: the PoSt inputs of the cuzk API bench, and
//! filecoin-proofs' own PoSt prover on them (see main.rs).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use bellows_core::{Error, Result};
use bellows_filecoin::filecoin_proofs::types::{FallbackPoStSectorProof, MerkleTreeTrait};
use bellows_filecoin::filecoin_proofs_api::{post as api, PublicReplicaInfo, SectorId};
use bellows_filecoin::post::PostInput;
use bellows_filecoin::testing::{init_filecoin_env, post_vanilla, shared_post_params};
use bellows_filecoin::{prover_id_from_actor, registered, with_sector_shape};
use filecoin_hashers::Domain;

use crate::{randomness, seal, types, usage, write, Args};

/// Writes the request files and makes the parameters.
pub(crate) fn requests(a: &Args) -> Result<()> {
    let out = a
        .out
        .as_deref()
        .unwrap_or_else(|| usage("post-requests needs --out DIR"));
    let [label] = &a.sectors[..] else {
        usage("post-requests takes one --sector")
    };
    let t = types(label)?;
    std::fs::create_dir_all(out)
        .map_err(|e| Error::io(format!("creating {}", out.display()), e))?;
    let out = out
        .canonicalize()
        .map_err(|e| Error::io(format!("resolving {}", out.display()), e))?;
    std::fs::create_dir_all(&a.work).map_err(|e| Error::io("creating the work folder", e))?;
    let (params, _) = init_filecoin_env(&out.join("params"), &a.work);
    let s = seal(&t, &a.work, a.miner)?;
    for (kind, (number, proof)) in [("winning", t.winning), ("window", t.window)] {
        let input = post_vanilla(proof, &s, randomness())?;
        let mut files = Vec::new();
        for (i, v) in input.vanilla_proofs.iter().enumerate() {
            let name = format!("{kind}-{i}.vanilla");
            write(&out.join(&name), v)?;
            files.push(name);
        }
        let mut req = serde_json::json!({
            "kind": kind,
            "registered_proof": number,
            "miner_id": a.miner,
            "sector_size": t.bytes,
            "randomness": bellows_core::pce::format::hex(&input.randomness),
            "vanilla": files,
        });
        if kind == "window" {
            req["partition_index"] = 0.into();
        }
        let text = serde_json::to_vec_pretty(&req).expect("JSON");
        write(&out.join(format!("{kind}.json")), &text)?;
        let started = Instant::now();
        let paths = shared_post_params(proof, &params, &mut rand_core::OsRng)?;
        println!(
            "{kind}: {} ({proof:?}, registered_proof {number}); parameters {} ({:.1} s)",
            out.join(format!("{kind}.json")).display(),
            paths.params.display(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// What a PoSt request file holds, as filecoin-proofs-api takes it.
struct Request {
    window: bool,
    input: PostInput,
    partition: usize,
}

/// Reads a request file of `post-requests` (or any cuzk_client request file of a PoSt kind).
fn read_request(path: &Path) -> Result<Request> {
    let bad = |what: &str| Error::malformed(path.display().to_string(), what.to_string());
    let text =
        std::fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let v: serde_json::Value = serde_json::from_slice(&text).map_err(|e| bad(&e.to_string()))?;
    // Absent numbers are 0, as in the protobuf message; a registered proof must be given.
    let num = |k: &str| {
        v.get(k)
            .map_or(Some(0), |x| x.as_u64())
            .ok_or_else(|| bad(&format!("{k} must be a non-negative integer")))
    };
    if v.get("registered_proof").is_none() {
        return Err(bad("no registered_proof"));
    }
    let window = match v.get("kind").and_then(|k| k.as_str()) {
        Some("winning" | "winning_post") => false,
        Some("window" | "window_post_partition") => true,
        _ => return Err(bad("kind must be winning or window")),
    };
    let randomness = v
        .get("randomness")
        .and_then(|r| r.as_str())
        .and_then(hex32)
        .ok_or_else(|| bad("randomness must be 32 bytes in hex"))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let vanilla_proofs = v
        .get("vanilla")
        .and_then(|l| l.as_array())
        .ok_or_else(|| bad("vanilla must be a list of files"))?
        .iter()
        .map(|f| {
            let f = dir.join(
                f.as_str()
                    .ok_or_else(|| bad("vanilla must be a list of files"))?,
            );
            std::fs::read(&f).map_err(|e| Error::io(format!("reading {}", f.display()), e))
        })
        .collect::<Result<_>>()?;
    Ok(Request {
        window,
        input: PostInput {
            proof: registered::post_proof(num("registered_proof")?)?,
            randomness,
            prover_id: prover_id_from_actor(num("miner_id")?),
            vanilla_proofs,
        },
        partition: num("partition_index")? as usize,
    })
}

fn hex32(s: &str) -> Option<[u8; 32]> {
    let s = s.trim().trim_start_matches("0x");
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    bytes?.try_into().ok()
}

/// Times filecoin-proofs' prover on a request, then checks the proofs.
pub(crate) fn peer(a: &Args) -> Result<()> {
    let path = a
        .request
        .as_deref()
        .unwrap_or_else(|| usage("post-peer needs --request FILE"));
    // filecoin-proofs reads its parameter folder once per process: the request's params/
    // (where post-requests made them) unless the caller named one.
    if std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").is_none() {
        let dir = path.parent().unwrap_or(Path::new("."));
        init_filecoin_env(&dir.join("params"), &a.work);
    }
    let r = read_request(path)?;
    let p = &r.input;
    let kind = if r.window { "window" } else { "winning" };
    let mut last = Vec::new();
    let reps = if a.reps == 0 { 3 } else { a.reps };
    for rep in 0..reps {
        let t = Instant::now();
        last = if r.window {
            api::generate_single_window_post_with_vanilla(
                p.proof,
                &p.randomness,
                p.prover_id,
                &p.vanilla_proofs,
                r.partition,
            )
            .map(|proof| proof.0)
        } else {
            api::generate_winning_post_with_vanilla(
                p.proof,
                &p.randomness,
                p.prover_id,
                &p.vanilla_proofs,
            )
            .map(|mut proofs| proofs.pop().map(|(_, bytes)| bytes).unwrap_or_default())
        }
        .map_err(|e| Error::invalid(format!("filecoin-proofs' {kind} PoSt prover: {e:#}")))?;
        println!(
            "RESULT kind={kind} rep={rep} prove_s={:.4} proof_bytes={}",
            t.elapsed().as_secs_f64(),
            last.len()
        );
    }
    let mut proofs = vec![("filecoin-proofs' last proof".to_string(), last)];
    if let Some(f) = &a.check {
        let bytes =
            std::fs::read(f).map_err(|e| Error::io(format!("reading {}", f.display()), e))?;
        proofs.push((f.display().to_string(), bytes));
    }
    if r.window && r.partition != 0 {
        // verify_window_post checks a deadline's proof from its first partition on.
        println!(
            "verify: not checked (partition {} of a deadline)",
            r.partition
        );
        return Ok(());
    }
    let replicas = with_sector_shape!(u64::from(p.proof.sector_size()), replicas, p)?;
    let mut all = true;
    for (what, bytes) in proofs {
        let verdict = if r.window {
            api::verify_window_post(&p.randomness, &[(p.proof, &bytes)], &replicas, p.prover_id)
        } else {
            api::verify_winning_post(&p.randomness, &bytes, &replicas, p.prover_id)
        };
        let ok = matches!(verdict, Ok(true));
        match verdict {
            Ok(v) => println!(
                "verify_{kind}_post {what}: {}",
                if v { "valid" } else { "INVALID" }
            ),
            Err(e) => println!("verify_{kind}_post {what}: INVALID ({e:#})"),
        }
        all &= ok;
    }
    if all {
        Ok(())
    } else {
        Err(Error::invalid("a proof did not verify"))
    }
}

/// The challenged sectors of `p` as the verifier knows them (id and comm_r), from its vanilla
/// proofs.
fn replicas<Tree: 'static + MerkleTreeTrait>(
    p: &PostInput,
) -> Result<BTreeMap<SectorId, PublicReplicaInfo>> {
    p.vanilla_proofs
        .iter()
        .map(|b| {
            let v: FallbackPoStSectorProof<Tree> = bincode::deserialize(b)
                .map_err(|e| Error::malformed("a vanilla proof", e.to_string()))?;
            let comm_r: [u8; 32] = v.comm_r.into_bytes().try_into().expect("32 bytes");
            Ok((v.sector_id, PublicReplicaInfo::new(p.proof, comm_r)))
        })
        .collect()
}
