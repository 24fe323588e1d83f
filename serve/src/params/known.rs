//! Digests of parameters files kept across restarts, so that a restarted daemon does not hash
//! a 47 GB file again before its first proof.
//!
//! The state directory's `params-digests` is a core [`VersionTable`]: a line a file, its
//! SHA-256 in hex, the file's version, its published-form digest when one was computed
//! ([`super::Published`], else `-`) and its canonical path. A digest is reused only for the
//! same path at the same version, the rule the in-memory table already follows within one run.

use bellows_core::groth16::io::{TableRow, VersionTable};

use super::{hex, Hashed};

/// The digests kept in the state directory.
pub type KnownDigests = VersionTable<Hashed>;

/// The name the table goes by in the log.
pub const WHAT: &str = "known parameter digests";

impl TableRow for Hashed {
    const WORDS: usize = 2;

    fn to_words(&self) -> Vec<String> {
        let second = self.published.clone().unwrap_or_else(|| "-".into());
        vec![hex(&self.sha256), second]
    }

    fn from_words(words: &[&str]) -> Option<Self> {
        let (d, second) = (words.first()?, words.get(1)?);
        if d.len() != 64 || (*second != "-" && !second.bytes().all(|b| b.is_ascii_hexdigit())) {
            return None;
        }
        let mut sha256 = [0u8; 32];
        for (i, b) in sha256.iter_mut().enumerate() {
            *b = u8::from_str_radix(d.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        let published = (*second != "-").then(|| second.to_string());
        Some(Hashed { sha256, published })
    }
}

#[cfg(test)]
mod tests {
    use bellows_core::groth16::io::FileVersion;

    use super::*;

    #[test]
    fn a_recorded_digest_reads_back_in_the_line_form_of_earlier_releases() {
        let d = std::env::temp_dir().join(format!("bellows-known-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let file = d.join("a b.params");
        std::fs::write(&file, b"one").unwrap();
        let v = FileVersion::of_path(&file).unwrap();
        let path = d.join("params-digests");
        let h = |b: u8, second: Option<&str>| Hashed {
            sha256: [b; 32],
            published: second.map(str::to_string),
        };
        KnownDigests::new(&path, WHAT).record(&file, &v, h(7, Some("00ff")));
        // `HEX VERSION SECOND PATH`, as the daemon wrote it before the table moved to core: a
        // state folder of an earlier release keeps its digests.
        let line = format!("{} {v} 00ff {}\n", hex(&[7; 32]), file.display());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), line);
        std::fs::write(
            &path,
            format!("{} {v} - {}\n", hex(&[9; 32]), file.display()),
        )
        .unwrap();
        assert_eq!(
            KnownDigests::new(&path, WHAT).get(&file, &v),
            Some(h(9, None))
        );
        // A digest of the wrong length, or a second word that is not hex: no row.
        for bad in [
            format!("{} {v} - ", hex(&[9; 31])),
            format!("{} {v} zz ", hex(&[9; 32])),
        ] {
            std::fs::write(&path, format!("{bad}{}\n", file.display())).unwrap();
            assert_eq!(KnownDigests::new(&path, WHAT).get(&file, &v), None);
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
