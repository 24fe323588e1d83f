//! Encoded bases across the interface: the plugin reads them through the host's reader and
//! answers a handle or a refusal; the reader's own failures reach the caller as its errors.

use super::*;
use crate::backend::PointDefect;

/// Encodings of `points` in memory, as a file section lends them; `fail_at` makes the read
/// that covers that point fail, `panic_at` panic.
struct Bytes {
    data: Vec<u8>,
    size: usize,
    fail_at: Option<u64>,
    panic_at: Option<u64>,
}

impl Bytes {
    fn g1(points: &[blstrs::G1Affine]) -> Self {
        Self {
            data: points.iter().flat_map(|p| p.to_uncompressed()).collect(),
            size: 96,
            fail_at: None,
            panic_at: None,
        }
    }
}

impl EncodedPoints for Bytes {
    fn len(&self) -> u64 {
        (self.data.len() / self.size) as u64
    }
    fn read(&self, first: u64, buf: &mut [u8]) -> Result<()> {
        let n = (buf.len() / self.size) as u64;
        let covers = |at: Option<u64>| at.is_some_and(|a| (first..first + n).contains(&a));
        if covers(self.panic_at) {
            panic!("the reader broke");
        }
        if covers(self.fail_at) {
            return Err(Error::invalid(
                "the parameters file changed while it was read",
            ));
        }
        let at = first as usize * self.size;
        buf.copy_from_slice(&self.data[at..at + buf.len()]);
        Ok(())
    }
}

#[test]
fn encoded_bases_through_the_interface_give_the_same_msms() {
    let plugin = wrapped();
    // Without the identity point `g1_points` plants at index 1.
    let mut pts = g1_points(40).as_ref().clone();
    pts.remove(1);
    let direct = plugin
        .load_bases_g1(Arc::new(pts.clone()) as SharedPoints<G1Affine>)
        .unwrap();
    let h = match plugin.load_bases_g1_encoded(&Bytes::g1(&pts)).unwrap() {
        EncodedLoad::Loaded(h) => h,
        r => panic!("{r:?}"),
    };
    assert_eq!((h.group, h.len), (Group::G1, 39));
    // The host lent nothing for it.
    assert!(!plugin.bases_need_host(h).unwrap());
    let sc = rand_scalars(39, 8);
    let jobs = [
        MsmJob::new(0, fr_slice(&sc)),
        MsmJob::new(5, fr_slice(&sc[..9])),
    ];
    let (mut a, mut b) = ([G1Jacobian::default(); 2], [G1Jacobian::default(); 2]);
    plugin.msm_g1(direct, &jobs, &mut a).unwrap();
    plugin.msm_g1(h, &jobs, &mut b).unwrap();
    assert_eq!(a, b);
    plugin.free_bases(h).unwrap();
    assert!(plugin.msm_g1(h, &jobs, &mut b).is_err());

    // G2 too.
    let g2 = g2_points(12);
    let bytes = Bytes {
        data: g2.iter().flat_map(|p| p.to_uncompressed()).collect(),
        size: 192,
        fail_at: None,
        panic_at: None,
    };
    match plugin.load_bases_g2_encoded(&bytes).unwrap() {
        EncodedLoad::Loaded(h) => assert_eq!((h.group, h.len), (Group::G2, 12)),
        r => panic!("{r:?}"),
    }
}

#[test]
fn a_refused_point_comes_back_with_its_index_and_why() {
    let plugin = wrapped();
    // `g1_points` plants the identity at index 1.
    let pts = g1_points(40);
    assert_eq!(
        plugin.load_bases_g1_encoded(&Bytes::g1(&pts)).unwrap(),
        EncodedLoad::Refused {
            index: 1,
            defect: PointDefect::Infinity
        }
    );
    let mut bytes = Bytes::g1(&pts[2..]);
    // Point 30's y changed: off the curve.
    bytes.data[31 * 96 - 1] ^= 1;
    assert_eq!(
        plugin.load_bases_g1_encoded(&bytes).unwrap(),
        EncodedLoad::Refused {
            index: 30,
            defect: PointDefect::NotOnCurve
        }
    );
}

#[test]
fn the_readers_own_failure_is_what_the_caller_gets() {
    let plugin = wrapped();
    let pts = g1_points(40);
    let mut bytes = Bytes::g1(&pts[2..]);
    bytes.fail_at = Some(3);
    match plugin.load_bases_g1_encoded(&bytes) {
        // The reader's message as it made it, not the plugin's copy naming the plugin.
        Err(Error::InvalidInput(m)) => {
            assert_eq!(m, "the parameters file changed while it was read")
        }
        r => panic!("expected the reader's error, got {r:?}"),
    }
    let mut bytes = Bytes::g1(&pts[2..]);
    bytes.panic_at = Some(0);
    match plugin.load_bases_g1_encoded(&bytes) {
        Err(Error::Pipeline(m)) => assert!(m.contains("the reader broke"), "{m}"),
        r => panic!("expected the caught panic, got {r:?}"),
    }
    // The plugin still works.
    assert!(matches!(
        plugin.load_bases_g1_encoded(&Bytes::g1(&pts[2..])),
        Ok(EncodedLoad::Loaded(_))
    ));
}

#[test]
fn the_lent_reader_refuses_reads_outside_the_points() {
    let pts = g1_points(10);
    let bytes = Bytes::g1(&pts[2..]);
    let reader = LentReader {
        points: &bytes,
        size: 96,
        failed: Mutex::new(None),
    };
    let mut buf = vec![0u8; 96 * 3];
    assert!(reader.read(6, RSliceMut::from_mut_slice(&mut buf)).is_err());
    let mut odd = vec![0u8; 100];
    assert!(reader.read(0, RSliceMut::from_mut_slice(&mut odd)).is_err());
    assert!(reader.failed.lock().unwrap().is_some());
    let mut ok = vec![0u8; 96 * 2];
    assert!(reader.read(6, RSliceMut::from_mut_slice(&mut ok)).is_ok());
    assert_eq!(ok, bytes.data[6 * 96..]);
}

#[test]
fn a_backend_without_encoded_loads_answers_unsupported() {
    let plugin = in_process(super::faults::no_encoded(), "in-process:old").unwrap();
    let pts = g1_points(4);
    match plugin.load_bases_g1_encoded(&Bytes::g1(&pts[2..])) {
        Err(Error::Unsupported { operation, .. }) => {
            assert_eq!(operation, "load_bases_g1_encoded")
        }
        r => panic!("expected Unsupported, got {r:?}"),
    }
}
