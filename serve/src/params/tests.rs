//! Tests of the parameters cache: digests, kept digests, published files.

use super::*;
use bellows_core::{
    circuits::{CircuitOptions, CircuitSpec},
    groth16::{io, setup::generate_random_parameters},
    rng::ProofRng,
};

/// An empty folder of the temporary directory for test `tag`.
fn fresh_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bellows-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Parameters of a synthetic 2^`log` circuit from `seed`, written as `dir/name`.
fn write_params(dir: &Path, name: &str, log: u32, seed: u64) -> PathBuf {
    let spec = CircuitSpec::new("synthetic", &CircuitOptions::with_log_size(log)).unwrap();
    let params = generate_random_parameters(spec.blank(), &mut ProofRng::seeded(seed)).unwrap();
    let p = dir.join(name);
    io::write_parameters_file(&params, &p).unwrap();
    p
}

/// The digest is the SHA-256 of the whole file; a sparse file of zeros with plausible lengths
/// is refused by its first points, before anything is hashed.
#[test]
fn the_digest_is_the_files_sha256_and_a_file_of_zeros_is_refused_before_hashing() {
    let d = fresh_dir("digest");
    let p = write_params(&d, "p.params", 6, 3);
    let bytes = std::fs::read(&p).unwrap();
    let file = ParamsFile::open(&p).unwrap();
    assert_eq!(
        file_digest(&file).unwrap(),
        <[u8; 32]>::from(Sha256::digest(&bytes))
    );

    // The same lengths, every point zero.
    let mut zeros = bytes.clone();
    let fixed = io::VK_FIXED_BYTES;
    zeros[..fixed].fill(0);
    let shape = file.shape();
    let mut at = fixed;
    for (count, size) in [
        (shape.num_inputs, 96),
        (shape.domain_size - 1, 96),
        (shape.num_aux, 96),
        (shape.a_len, 96),
        (shape.b_len, 96),
        (shape.b_len, 192),
    ] {
        zeros[at + 4..at + 4 + count * size].fill(0);
        at += 4 + count * size;
    }
    let z = d.join("zeros.params");
    std::fs::write(&z, &zeros).unwrap();
    let e = file_digest(&ParamsFile::open(&z).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("section ic, point 0"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A cache started again over the same digests file takes an unchanged file's digest from
/// it without hashing; a file rewritten since is hashed again.
#[test]
fn a_restarted_cache_reuses_the_kept_digest_of_an_unchanged_file_only() {
    let d = fresh_dir("kept");
    let p = write_params(&d, "p.params", 5, 4);
    let kept = d.join("params-digests");
    let start = || {
        ParamsCache::new(1 << 30, ParamsDirs::new(std::slice::from_ref(&d)))
            .with_known_digests(&kept)
    };
    let any = |_: &ParamsShape| Ok(());
    let first = start();
    let digest = first.resolve(&p, None, &any).unwrap().digest;
    assert_eq!(first.hashes(), 1);
    let restarted = start();
    assert_eq!(restarted.resolve(&p, None, &any).unwrap().digest, digest);
    assert_eq!(restarted.hashes(), 0);
    // Other points under the same name: hashed again, and its digest kept instead.
    write_params(&d, "p.params", 5, 5);
    let again = start();
    let new = again.resolve(&p, None, &any).unwrap().digest;
    assert_ne!(new, digest);
    assert_eq!(again.hashes(), 1);
    assert_eq!(start().resolve(&p, None, &any).unwrap().digest, new);
    let _ = std::fs::remove_dir_all(&d);
}

/// A listing of published digests in a form of its own (the SHA-256 of the file, in hex).
#[derive(Debug)]
struct Listing(Vec<(&'static str, String)>);

struct HexSha(Sha256);

impl PieceHasher for HexSha {
    fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn finish(&self) -> String {
        hex(&self.0.clone().finalize())
    }
}

impl Published for Listing {
    fn listed(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, d)| d.clone())
    }
    fn hasher(&self) -> Box<dyn PieceHasher> {
        Box::new(HexSha(Sha256::new()))
    }
}

/// A listed file whose digest matches is published (curve checks only); one listed with
/// another digest, or not listed, gets the cache's check. A digest kept from before the
/// listing was given is not enough for a listed file: it is hashed again, once.
#[test]
fn a_listed_file_with_the_published_digest_gets_curve_checks_only() {
    let d = fresh_dir("published");
    let paths: Vec<PathBuf> = [("good.params", 6), ("bad.params", 7), ("other.params", 8)]
        .into_iter()
        .map(|(name, seed)| write_params(&d, name, 5, seed))
        .collect();
    let sha = |p: &PathBuf| hex(&Sha256::digest(std::fs::read(p).unwrap()));
    let listing = Arc::new(Listing(vec![
        ("good.params", sha(&paths[0])),
        ("bad.params", sha(&paths[2])),
    ]));
    let kept = d.join("params-digests");
    let any = |_: &ParamsShape| Ok(());
    let plain = || {
        ParamsCache::new(1 << 30, ParamsDirs::new(std::slice::from_ref(&d)))
            .with_known_digests(&kept)
    };
    // Hashed first without the listing: the kept lines have no published form.
    let before = plain();
    for p in &paths {
        assert!(!before.resolve(p, None, &any).unwrap().is_published());
    }
    assert_eq!(before.hashes(), 3);

    let start = || plain().with_published(listing.clone());
    let cache = start();
    let entries: Vec<_> = paths
        .iter()
        .map(|p| cache.resolve(p, None, &any).unwrap())
        .collect();
    let published: Vec<bool> = entries.iter().map(|e| e.is_published()).collect();
    assert_eq!(published, [true, false, false]);
    // The two listed files hashed again for the listed form; the unlisted one not.
    assert_eq!(cache.hashes(), 2);
    assert_eq!(cache.check_for(&entries[0], false), PointCheck::CurveOnly);
    assert_eq!(cache.check_for(&entries[1], false), PointCheck::Batched);
    assert_eq!(cache.check_for(&entries[2], false), PointCheck::Batched);
    // A restart knows all of it without hashing.
    let again = start();
    let published: Vec<bool> = paths
        .iter()
        .map(|p| again.resolve(p, None, &any).unwrap().is_published())
        .collect();
    assert_eq!(published, [true, false, false]);
    assert_eq!(again.hashes(), 0);
    let _ = std::fs::remove_dir_all(&d);
}

/// A listing whose hasher takes its time, so that requests started together overlap its hash.
#[derive(Debug)]
struct SlowListing(Listing);

struct Slow(HexSha);

impl PieceHasher for Slow {
    fn update(&mut self, bytes: &[u8]) {
        std::thread::sleep(std::time::Duration::from_millis(200));
        self.0.update(bytes);
    }
    fn finish(&self) -> String {
        self.0.finish()
    }
}

impl Published for SlowListing {
    fn listed(&self, name: &str) -> Option<String> {
        self.0.listed(name)
    }
    fn hasher(&self) -> Box<dyn PieceHasher> {
        Box::new(Slow(HexSha(Sha256::new())))
    }
}

/// Requests that name the same new file at once hash it once: the others wait for that hash
/// and take its digests (the published form too).
#[test]
fn requests_for_a_file_being_hashed_wait_for_that_hash() {
    let d = fresh_dir("one-hash");
    let p = write_params(&d, "p.params", 5, 9);
    let listed = hex(&Sha256::digest(std::fs::read(&p).unwrap()));
    let cache = ParamsCache::new(1 << 30, ParamsDirs::new(std::slice::from_ref(&d)))
        .with_published(Arc::new(SlowListing(Listing(vec![("p.params", listed)]))));
    let any = |_: &ParamsShape| Ok(());
    let together = std::sync::Barrier::new(4);
    let entries: Vec<Arc<ParamsEntry>> = std::thread::scope(|s| {
        let requests: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    together.wait();
                    cache.resolve(&p, None, &any).unwrap()
                })
            })
            .collect();
        requests.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_eq!(cache.hashes(), 1);
    assert!(entries
        .iter()
        .all(|e| Arc::ptr_eq(e, &entries[0]) && e.is_published()));
    let _ = std::fs::remove_dir_all(&d);
}

/// `params_check`: `auto` (the default) gives the batched check and, with Filecoin support,
/// the published list; a named check gives that check alone; anything else is refused.
#[test]
fn the_params_check_setting_chooses_the_check_and_the_published_list() {
    let d = fresh_dir("check-setting");
    let engine = |toml: &str| {
        crate::config::ServeConfig::from_toml(toml)
            .unwrap()
            .engine_config(&d)
    };
    for toml in ["", "params_check = \"auto\""] {
        let c = engine(toml).unwrap();
        assert_eq!(c.params_check, PointCheck::Batched);
        assert_eq!(
            c.published.is_some(),
            cfg!(feature = "filecoin"),
            "{toml:?}"
        );
        assert_eq!(c.params_digests, Some(d.join("params-digests")));
    }
    for (name, check) in [
        ("batched", PointCheck::Batched),
        ("full", PointCheck::Full),
        ("curve-only", PointCheck::CurveOnly),
    ] {
        let c = engine(&format!("params_check = \"{name}\"")).unwrap();
        assert_eq!(c.params_check, check);
        assert!(c.published.is_none(), "{name}");
    }
    let e = engine("params_check = \"digest\"").unwrap_err().to_string();
    assert!(e.contains("give auto, batched, full or curve-only"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}
