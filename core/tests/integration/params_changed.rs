//! Issue 43, item 4: a parameters file truncated, rewritten or replaced while it is open is an
//! error naming it, never a signal (the reader never memory-maps a file), for whole decodes and
//! for a key loaded section by section; bytes changed in place fail the checks any such bytes
//! fail; valid bytes changed in place, or a file renamed over the one open, fail the version
//! check made when the reading is done.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bellows_core::circuits::{CircuitOptions, CircuitSpec};
use bellows_core::groth16::{
    io::{self, ParamsFile, ParamsSection, ParamsShape, PointCheck, VK_FIXED_BYTES},
    prover::{G2Policy, ProvingKey},
    setup::generate_random_parameters,
    Parameters,
};
use bellows_core::rng::ProofRng;
use bellows_core::Backend;

fn params() -> Parameters {
    let spec = CircuitSpec::new("synthetic", &CircuitOptions::with_log_size(7)).unwrap();
    generate_random_parameters(spec.blank(), &mut ProofRng::seeded(43)).unwrap()
}

fn encoded(p: &Parameters) -> Vec<u8> {
    let mut v = Vec::new();
    io::write_parameters(p, &mut v).unwrap();
    v
}

/// A folder of this test's own.
fn folder(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bellows-changed-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The test's parameters, encoded and written to `p.params` in a folder of its own: (the bytes,
/// the folder, the file).
fn written(name: &str) -> (Vec<u8>, PathBuf, PathBuf) {
    let bytes = encoded(&params());
    let d = folder(name);
    let path = d.join("p.params");
    std::fs::write(&path, &bytes).unwrap();
    (bytes, d, path)
}

/// Byte offsets of the point sections h, l, a, b_g1, b_g2 (after each length field).
fn offsets(s: &ParamsShape) -> [usize; 5] {
    let mut at = VK_FIXED_BYTES + 4 + 96 * s.num_inputs + 4;
    let mut out = [0; 5];
    for (i, (count, size)) in [
        (s.domain_size - 1, 96),
        (s.num_aux, 96),
        (s.a_len, 96),
        (s.b_len, 96),
        (s.b_len, 192),
    ]
    .into_iter()
    .enumerate()
    {
        out[i] = at;
        at += count * size + 4;
    }
    out
}

fn cut(path: &Path, len: usize) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len as u64)
        .unwrap();
}

fn cpu() -> Arc<dyn Backend> {
    Arc::new(bellows_cpu::CpuBackend::new())
}

#[test]
fn a_file_truncated_after_it_was_opened_is_an_error_naming_where_it_ended() {
    let (bytes, d, path) = written("truncated");
    let shape = ParamsFile::open(&path).unwrap().shape();
    let [h, l, _, _, b_g2] = offsets(&shape);
    // Cut inside h (the first section after the header), inside l, and inside b_g2 (the last).
    for (end, section) in [
        (h + 5 * 96 + 7, "h"),
        (l + 96, "l"),
        (b_g2 + 192 * 3, "b_g2"),
    ] {
        let want = format!(
            "ended at byte {end} while reading section {section}: it was truncated or replaced \
             while in use"
        );
        for check in [PointCheck::Full, PointCheck::CurveOnly, PointCheck::Batched] {
            std::fs::write(&path, &bytes).unwrap();
            let file = ParamsFile::open(&path).unwrap();
            cut(&path, end);
            let e = file.decode(check).unwrap_err().to_string();
            assert!(
                e.contains(&want) && e.contains(&path.display().to_string()),
                "{e}"
            );
        }
        // That section alone: the same error.
        std::fs::write(&path, &bytes).unwrap();
        let file = ParamsFile::open(&path).unwrap();
        cut(&path, end);
        let e = match section {
            "h" => file
                .decode_g1(ParamsSection::H, PointCheck::Full, &|_| {})
                .map(|_| ()),
            "l" => file
                .decode_g1(ParamsSection::L, PointCheck::Full, &|_| {})
                .map(|_| ()),
            _ => file.decode_b_g2(PointCheck::Full, &|_| {}).map(|_| ()),
        }
        .unwrap_err()
        .to_string();
        assert!(e.contains(&want), "{e}");
        // Section by section onto a backend: found by the check after the verifying key (the
        // file is shorter than when it was opened), before any section is read.
        std::fs::write(&path, &bytes).unwrap();
        let file = ParamsFile::open(&path).unwrap();
        cut(&path, end);
        let e = ProvingKey::load_file(&file, PointCheck::Batched, cpu(), G2Policy::Auto, &|_| {})
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("changed while it was being read")
                && e.contains(&format!("it is {end} bytes"))
                && e.contains("truncated or replaced while in use"),
            "{e}"
        );
    }
    // Cut inside the verifying key: its reader says so too.
    std::fs::write(&path, &bytes).unwrap();
    let file = ParamsFile::open(&path).unwrap();
    cut(&path, 100);
    let e = file
        .decode_verifying_key(PointCheck::Full)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ended at byte 100 while reading the verifying key"),
        "{e}"
    );
    // A digest of the whole file stops where it ended.
    std::fs::write(&path, &bytes).unwrap();
    let file = ParamsFile::open(&path).unwrap();
    cut(&path, bytes.len() - 1);
    let e = file.for_each_piece(&mut |_| {}).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "ended at byte {} while reading the file",
            bytes.len() - 1
        )),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bytes_changed_in_place_fail_the_checks_and_the_version_check_catches_valid_ones() {
    let (bytes, d, path) = written("rewritten");
    let shape = ParamsFile::open(&path).unwrap().shape();
    let [h, l, ..] = offsets(&shape);

    // A point of h off the curve, written over the open file with the same length: the error a
    // fresh read of those bytes gives.
    let mut bad = bytes.clone();
    bad[h + 7 * 96 + 95] ^= 1;
    let file = ParamsFile::open(&path).unwrap();
    std::fs::write(&path, &bad).unwrap();
    let e = file.decode(PointCheck::CurveOnly).unwrap_err().to_string();
    let fresh = io::read_parameters(&path, PointCheck::CurveOnly)
        .unwrap_err()
        .to_string();
    assert_eq!(e, fresh);
    assert!(
        e.contains("section h, point 7") && e.contains("not on the curve"),
        "{e}"
    );

    // Two points of l swapped: every point still valid, the bytes not those opened. The file's
    // times moved on (a pause first, past the clock's granularity), so the load is refused.
    std::fs::write(&path, &bytes).unwrap();
    let file = ParamsFile::open(&path).unwrap();
    let mut swapped = bytes.clone();
    let (p, q) = (l + 2 * 96, l + 5 * 96);
    for k in 0..96 {
        swapped.swap(p + k, q + k);
    }
    assert_ne!(swapped, bytes);
    std::thread::sleep(std::time::Duration::from_millis(30));
    std::fs::write(&path, &swapped).unwrap();
    for e in [
        file.decode(PointCheck::CurveOnly).unwrap_err(),
        file.decode_verifying_key(PointCheck::Full).unwrap_err(),
        file.for_each_piece(&mut |_| {}).unwrap_err(),
    ] {
        let e = e.to_string();
        assert!(e.contains("changed while it was being read"), "{e}");
    }
    assert_ne!(file.version(), ParamsFile::open(&path).unwrap().version());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_file_replaced_by_a_rename_while_it_is_read_is_named() {
    let (bytes, d, path) = written("renamed");
    let file = ParamsFile::open(&path).unwrap();
    // What our own writers do: a new file renamed over the old one. The open file keeps its
    // bytes (nothing can fault), but what the path names is no longer what was opened.
    let next = d.join("next");
    std::fs::write(&next, &bytes).unwrap();
    std::fs::rename(&next, &path).unwrap();
    let e = file.decode(PointCheck::Batched).unwrap_err().to_string();
    assert!(
        e.contains("changed while it was being read") && e.contains("renamed over it"),
        "{e}"
    );
    assert_eq!(
        encoded(&io::read_parameters(&path, PointCheck::Batched).unwrap()),
        bytes
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_waiting_for_a_writer() {
    let d = folder("fifo");
    let fifo = d.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("no mkfifo here: skipped");
        return;
    }
    let e = ParamsFile::open(&fifo).unwrap_err().to_string();
    assert!(
        e.contains("FIFO") && e.contains("not a regular file"),
        "{e}"
    );
    let e = io::FileVersion::of_path(&fifo).unwrap_err().to_string();
    assert!(e.contains("not a regular file"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}
