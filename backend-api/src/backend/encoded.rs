//! Bases handed to a backend as a parameters file encodes them, for the backend to decode itself.
//!
//! ## Design
//! A Groth16 key of a 32 GiB PoRep holds about 460 M points. Decoded on the host they cost the
//! load most of its time and a section's worth of host memory, only for a GPU backend to copy
//! them away at once. [`Msm::load_bases_g1_encoded`](super::Msm::load_bases_g1_encoded) lets
//! such a backend take the file's bytes instead: it pulls them through [`EncodedPoints::read`]
//! (into memory of its own, pinned where it has some) and decodes them where they will live.
//! A backend that does not (the default) answers [`crate::Error::Unsupported`], and the caller
//! decodes on the host and calls `load_bases_*` as before.
//!
//! The encoding is the zcash/IETF one, uncompressed: big-endian coordinates with the flag bits in
//! the top three bits of the first byte, 96 bytes for G1 and 192 for G2 (x.c1, x.c0, y.c1, y.c0).
//! A backend checks each point as a trusted file's are checked (bellows-core's
//! `PointCheck::CurveOnly`): a valid encoding, on the curve, not the identity. It tests no
//! subgroup; the caller asks for this only where that check is what it wants. The first refused
//! point is answered as [`EncodedLoad::Refused`], so that the caller can name it in the file.
//!
//! [`decode_g1`], [`decode_g2`] and [`decode_encoded`] are blst's decoding with these rules, for
//! backends that keep their points on the host (the CPU backend) and for bellows-core's codec.

#![allow(unsafe_code)]

use rayon::prelude::*;

use super::{BasesHandle, Group};
use crate::Result;

/// Why an encoded point was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PointDefect {
    /// Flag bits that do not fit an uncompressed point, or a coordinate ≥ p.
    Encoding = 1,
    /// Valid coordinates that do not satisfy the curve equation.
    NotOnCurve = 2,
    /// On the curve but not in the prime-order subgroup (for encoded bases: (0, ±√b), which
    /// blst refuses outright).
    NotInSubgroup = 3,
    /// The point at infinity where it is not allowed.
    Infinity = 4,
}

impl PointDefect {
    /// The defect of code `c` (its `repr(u8)` value), if any: for the plugin interface.
    pub fn from_code(c: u8) -> Option<Self> {
        [
            Self::Encoding,
            Self::NotOnCurve,
            Self::NotInSubgroup,
            Self::Infinity,
        ]
        .into_iter()
        .find(|d| *d as u8 == c)
    }
}

impl std::fmt::Display for PointDefect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PointDefect::Encoding => {
                "not a valid uncompressed encoding (bad flag bits or a coordinate not below p)"
            }
            PointDefect::NotOnCurve => "not on the curve",
            PointDefect::NotInSubgroup => "not in the subgroup",
            PointDefect::Infinity => "point at infinity",
        })
    }
}

/// p, big-endian, as an encoding writes a coordinate: the least coordinate a valid encoding
/// cannot hold (for tests of refusals).
pub fn modulus_be() -> [u8; 48] {
    let mut b = [0u8; 48];
    for (i, limb) in crate::layout::Fp::MODULUS.iter().enumerate() {
        b[48 - 8 * (i + 1)..48 - 8 * i].copy_from_slice(&limb.to_be_bytes());
    }
    b
}

/// Bytes of one encoded point of `group`.
pub fn encoded_size(group: Group) -> usize {
    match group {
        Group::G1 => 96,
        Group::G2 => 192,
    }
}

/// `len` encoded points of one group that a backend reads for itself (a section of a parameters
/// file, say), in any order and from any thread.
pub trait EncodedPoints: Sync {
    /// Number of points.
    fn len(&self) -> u64;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Fills `buf`, a whole number of encodings, with those of the points from `first` on. An
    /// error (a file truncated or changed meanwhile, a read that failed) ends the load: the
    /// backend returns it and keeps nothing.
    fn read(&self, first: u64, buf: &mut [u8]) -> Result<()>;
}

/// What loading encoded bases gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodedLoad {
    /// Every point was accepted; the bases are resident under the handle.
    Loaded(BasesHandle),
    /// The point at `index`, the lowest refused, is not a valid, on-curve point other than the
    /// identity; nothing was kept.
    Refused {
        /// Its index among the points.
        index: u64,
        /// Why.
        defect: PointDefect,
    },
}

/// A point type blst decodes from the uncompressed encoding.
pub trait Decodable: Copy + Default + Send + Sync + 'static {
    /// Bytes of one encoding.
    const SIZE: usize;
    /// blst's decoding of exactly [`Self::SIZE`] bytes, the identity included; see [`decode_g1`].
    fn decode(bytes: &[u8]) -> std::result::Result<Self, PointDefect>;
    /// Whether this is the point at infinity.
    fn is_identity(&self) -> bool;
}

fn blst_code(code: blst::BLST_ERROR) -> std::result::Result<(), PointDefect> {
    match code {
        blst::BLST_ERROR::BLST_SUCCESS => Ok(()),
        blst::BLST_ERROR::BLST_POINT_NOT_ON_CURVE => Err(PointDefect::NotOnCurve),
        blst::BLST_ERROR::BLST_POINT_NOT_IN_GROUP => Err(PointDefect::NotInSubgroup),
        _ => Err(PointDefect::Encoding),
    }
}

/// The first byte of an uncompressed point may carry only the infinity flag (0x40); a set
/// compression flag (0x80) would make blst read the first half as a compressed point.
fn check_flags(first: u8) -> std::result::Result<(), PointDefect> {
    if first & 0x80 != 0 || first & 0x20 != 0 {
        Err(PointDefect::Encoding)
    } else {
        Ok(())
    }
}

/// Decodes the 96-byte uncompressed encoding `bytes` (its length asserted): the flag bits, the
/// coordinates below p and the curve equation are checked, not the subgroup; the identity (the
/// infinity flag alone) decodes to the identity.
pub fn decode_g1(bytes: &[u8]) -> std::result::Result<blstrs::G1Affine, PointDefect> {
    assert_eq!(bytes.len(), 96, "one encoded G1 point");
    check_flags(bytes[0])?;
    let mut out = blstrs::G1Affine::default();
    // SAFETY: 96 readable bytes (asserted); blst reads exactly 96 for an uncompressed point (the
    // compression flag was refused above). blstrs' G1Affine is `#[repr(transparent)]` over
    // `blst_p1_affine` (size and alignment asserted in `crate::layout`), so the cast pointer is
    // valid for blst's write of one affine point.
    let code = unsafe {
        blst::blst_p1_deserialize(
            (&mut out as *mut blstrs::G1Affine).cast::<blst::blst_p1_affine>(),
            bytes.as_ptr(),
        )
    };
    blst_code(code).map(|()| out)
}

/// As [`decode_g1`] for the 192-byte G2 encoding.
pub fn decode_g2(bytes: &[u8]) -> std::result::Result<blstrs::G2Affine, PointDefect> {
    assert_eq!(bytes.len(), 192, "one encoded G2 point");
    check_flags(bytes[0])?;
    let mut out = blstrs::G2Affine::default();
    // SAFETY: as for G1, with 192 bytes and blstrs' G2Affine over `blst_p2_affine`.
    let code = unsafe {
        blst::blst_p2_deserialize(
            (&mut out as *mut blstrs::G2Affine).cast::<blst::blst_p2_affine>(),
            bytes.as_ptr(),
        )
    };
    blst_code(code).map(|()| out)
}

impl Decodable for blstrs::G1Affine {
    const SIZE: usize = 96;
    fn decode(bytes: &[u8]) -> std::result::Result<Self, PointDefect> {
        decode_g1(bytes)
    }
    fn is_identity(&self) -> bool {
        // SAFETY: `self` is a blst_p1_affine underneath (repr(transparent), see decode_g1).
        unsafe { blst::blst_p1_affine_is_inf((self as *const Self).cast()) }
    }
}

impl Decodable for blstrs::G2Affine {
    const SIZE: usize = 192;
    fn decode(bytes: &[u8]) -> std::result::Result<Self, PointDefect> {
        decode_g2(bytes)
    }
    fn is_identity(&self) -> bool {
        // SAFETY: `self` is a blst_p2_affine underneath (repr(transparent), see decode_g2).
        unsafe { blst::blst_p2_affine_is_inf((self as *const Self).cast()) }
    }
}

/// Bytes read from an [`EncodedPoints`] at a time by [`decode_encoded`].
const PIECE_BYTES: usize = 64 << 20;

/// Points decoded per parallel task.
const CHUNK: usize = 1 << 10;

/// Reads every point of `src` and decodes it on every core with the rules of
/// [`EncodedPoints`]' loads (the identity refused): the points, or the lowest refused index and
/// why. The next piece is read while one is decoded. For a backend that keeps its bases in host
/// memory.
pub fn decode_encoded<P: Decodable>(
    src: &dyn EncodedPoints,
) -> Result<std::result::Result<Vec<P>, (u64, PointDefect)>> {
    decode_in_pieces(src, (PIECE_BYTES / P::SIZE).max(1))
}

/// [`decode_encoded`], reading `per_piece` points at a time.
fn decode_in_pieces<P: Decodable>(
    src: &dyn EncodedPoints,
    per_piece: usize,
) -> Result<std::result::Result<Vec<P>, (u64, PointDefect)>> {
    let len = usize::try_from(src.len())
        .map_err(|_| crate::Error::invalid(format!("{} points do not fit", src.len())))?;
    let mut out = crate::page_advice::filled(P::default(), len);
    let piece = per_piece.min(len) * P::SIZE;
    let (mut cur, mut next) = (vec![0u8; piece], vec![0u8; piece]);
    let pieces = len.div_ceil(per_piece);
    let bytes_of = |k: usize| (per_piece.min(len - k * per_piece)) * P::SIZE;
    if pieces > 0 {
        src.read(0, &mut cur[..bytes_of(0)])?;
    }
    for (k, dst) in out.chunks_mut(per_piece).enumerate() {
        let first = k * per_piece;
        let bytes = &cur[..dst.len() * P::SIZE];
        let (bad, read) = std::thread::scope(|scope| {
            let reader = (k + 1 < pieces).then(|| {
                let next = &mut next[..bytes_of(k + 1)];
                scope.spawn(move || src.read(((k + 1) * per_piece) as u64, next))
            });
            let bad = decode_piece(dst, bytes);
            let read = reader.map_or(Ok(()), |r| {
                r.join().unwrap_or_else(|_| {
                    Err(crate::Error::invalid("reading encoded points panicked"))
                })
            });
            (bad, read)
        });
        if let Some((i, d)) = bad {
            return Ok(Err(((first + i) as u64, d)));
        }
        read?;
        std::mem::swap(&mut cur, &mut next);
    }
    Ok(Ok(out))
}

/// Decodes `bytes` into `dst` on every core: the lowest refused index in the piece, if any.
fn decode_piece<P: Decodable>(dst: &mut [P], bytes: &[u8]) -> Option<(usize, PointDefect)> {
    dst.par_chunks_mut(CHUNK)
        .zip(bytes.par_chunks(CHUNK * P::SIZE))
        .enumerate()
        .filter_map(|(c, (d, s))| {
            for (i, (p, e)) in d.iter_mut().zip(s.chunks_exact(P::SIZE)).enumerate() {
                let at = c * CHUNK + i;
                match P::decode(e) {
                    Ok(v) if v.is_identity() => return Some((at, PointDefect::Infinity)),
                    Ok(v) => *p = v,
                    Err(d) => return Some((at, d)),
                }
            }
            None
        })
        .min_by_key(|(i, _)| *i)
}

#[cfg(test)]
mod tests {
    use group::{prime::PrimeCurveAffine, Curve, Group as _};

    use super::*;

    /// Encodings in memory.
    struct Bytes(Vec<u8>, usize);

    impl EncodedPoints for Bytes {
        fn len(&self) -> u64 {
            (self.0.len() / self.1) as u64
        }
        fn read(&self, first: u64, buf: &mut [u8]) -> Result<()> {
            let at = first as usize * self.1;
            buf.copy_from_slice(&self.0[at..at + buf.len()]);
            Ok(())
        }
    }

    /// `n` distinct G1 points: multiples of the generator, by additions.
    fn g1(n: usize) -> Vec<blstrs::G1Affine> {
        let g = blstrs::G1Projective::generator();
        let mut p = g;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(p.to_affine());
            p += g;
        }
        v
    }

    #[test]
    fn a_reader_decodes_to_its_points_and_the_lowest_bad_one_is_named() {
        // More points than a parallel task takes, so the refusals come from several tasks.
        let pts = g1(3 * CHUNK);
        let bytes: Vec<u8> = pts.iter().flat_map(|p| p.to_uncompressed()).collect();
        let got = decode_encoded::<blstrs::G1Affine>(&Bytes(bytes.clone(), 96)).unwrap();
        assert_eq!(got.unwrap(), pts);
        // Read in pieces of 700 points, the last one short, the next read beside each decoding.
        let got = decode_in_pieces::<blstrs::G1Affine>(&Bytes(bytes.clone(), 96), 700).unwrap();
        assert_eq!(got.unwrap(), pts);

        let mut bad = bytes.clone();
        // Off the curve at 2500, the identity at 1500, a compression flag at 2900.
        bad[2500 * 96 + 95] ^= 1;
        bad[1500 * 96..1501 * 96].fill(0);
        bad[1500 * 96] = 0x40;
        bad[2900 * 96] |= 0x80;
        let r = decode_encoded::<blstrs::G1Affine>(&Bytes(bad.clone(), 96)).unwrap();
        assert_eq!(r.unwrap_err(), (1500, PointDefect::Infinity));
        let r = decode_in_pieces::<blstrs::G1Affine>(&Bytes(bad.clone(), 96), 700).unwrap();
        assert_eq!(r.unwrap_err(), (1500, PointDefect::Infinity));
        bad[1500 * 96..1501 * 96].copy_from_slice(&bytes[1500 * 96..1501 * 96]);
        let r = decode_encoded::<blstrs::G1Affine>(&Bytes(bad.clone(), 96)).unwrap();
        assert_eq!(r.unwrap_err(), (2500, PointDefect::NotOnCurve));
        let r = decode_in_pieces::<blstrs::G1Affine>(&Bytes(bad.clone(), 96), 700).unwrap();
        assert_eq!(r.unwrap_err(), (2500, PointDefect::NotOnCurve));
        bad[2500 * 96 + 95] ^= 1;
        let r = decode_encoded::<blstrs::G1Affine>(&Bytes(bad, 96)).unwrap();
        assert_eq!(r.unwrap_err(), (2900, PointDefect::Encoding));

        // G2, and nothing at all.
        let q = (blstrs::G2Projective::generator() * blstrs::Scalar::from(7u64)).to_affine();
        let e = Bytes(q.to_uncompressed().to_vec(), 192);
        let got = decode_encoded::<blstrs::G2Affine>(&e).unwrap().unwrap();
        assert_eq!(got, vec![q]);
        let none = decode_encoded::<blstrs::G2Affine>(&Bytes(Vec::new(), 192)).unwrap();
        assert!(none.unwrap().is_empty());
    }

    /// A reader whose reads after the first piece fail (a file cut short while it is read).
    struct CutShort(Bytes);

    impl EncodedPoints for CutShort {
        fn len(&self) -> u64 {
            self.0.len()
        }
        fn read(&self, first: u64, buf: &mut [u8]) -> Result<()> {
            if first > 0 {
                return Err(crate::Error::invalid(format!(
                    "the file ended before point {first}"
                )));
            }
            self.0.read(first, buf)
        }
    }

    #[test]
    fn a_failed_read_ends_the_decoding_with_its_error() {
        let pts = g1(1500);
        let bytes = Bytes(pts.iter().flat_map(|p| p.to_uncompressed()).collect(), 96);
        let e = decode_in_pieces::<blstrs::G1Affine>(&CutShort(bytes), 700).unwrap_err();
        assert!(e.to_string().contains("ended before point 700"), "{e}");
    }

    #[test]
    fn single_points_decode_as_blst_decides() {
        let p = g1(2)[1];
        assert_eq!(decode_g1(&p.to_uncompressed()), Ok(p));
        let inf = decode_g1(&blstrs::G1Affine::identity().to_uncompressed()).unwrap();
        assert!(Decodable::is_identity(&inf));
        let mut e = p.to_uncompressed();
        e[0] |= 0x20;
        assert_eq!(decode_g1(&e), Err(PointDefect::Encoding));
        // (0, 2) lies on y² = x³ + 4; blst refuses it as outside the group.
        let mut zero_two = [0u8; 96];
        zero_two[95] = 2;
        assert_eq!(decode_g1(&zero_two), Err(PointDefect::NotInSubgroup));
        for d in [
            PointDefect::Encoding,
            PointDefect::NotOnCurve,
            PointDefect::NotInSubgroup,
            PointDefect::Infinity,
        ] {
            assert_eq!(PointDefect::from_code(d as u8), Some(d));
        }
        assert_eq!(PointDefect::from_code(0), None);
        assert_eq!(PointDefect::from_code(5), None);
    }
}
