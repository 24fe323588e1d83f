//! Byte sizes: the one parser and formatter of the workspace.
//!
//! One meaning everywhere (the CLI's flags, the daemon's config file, backend options):
//! - binary units are powers of 1024: `KiB`, `MiB`, `GiB`, `TiB`, `PiB`, and the bare letters
//!   `K`, `M`, `G`, `T`, `P` (as `ls -h` and `free -h` print them);
//! - decimal units are powers of 1000: `kB`/`KB`, `MB`, `GB`, `TB`, `PB`;
//! - `B` or no unit is bytes. Units are case-insensitive, a space before the unit is allowed.
//!
//! Fractions are exact: `1.5GB` is 1 500 000 000 bytes, `0.5KiB` 512, with any number of
//! decimals (the fraction is rounded down to a whole byte, never wrapped). A fraction of a plain
//! byte, a negative number or a value past `u64::MAX` is an error that says so.

use std::fmt;

/// What [`parse_bytes`] accepts, for messages.
pub const BYTE_SIZE_HINT: &str = "expected a byte count such as 1000000, 512MiB, 8GiB or 1.5GB";

/// Parses a byte size (see the module documentation for the units).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("{s:?} is negative; {BYTE_SIZE_HINT}"));
    }
    let t = t.strip_prefix('+').unwrap_or(t);
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return Err(format!("{s:?} is not a byte size; {BYTE_SIZE_HINT}"));
    }
    let mult: u64 = unit_multiplier(unit)
        .ok_or_else(|| format!("{s:?}: unknown unit {unit:?}; {BYTE_SIZE_HINT}"))?;
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let int = int.trim_start_matches('0');
    let too_large = || format!("{s:?} is more than {} bytes; {BYTE_SIZE_HINT}", u64::MAX);
    let int: u64 = if int.is_empty() {
        0
    } else if int.len() > 20 {
        return Err(too_large());
    } else {
        int.parse().map_err(|_| too_large())?
    };
    let mut bytes = int.checked_mul(mult).ok_or_else(too_large)?;
    // The fraction's digits d over 10^n, times the unit, rounded down. Digits past the 24th
    // cannot change the result (the unit is below 2^60 < 10^19, so d·unit/10^n moves by less
    // than one byte), so they are dropped, which keeps d·unit inside a u128.
    let frac = frac.trim_end_matches('0');
    if !frac.is_empty() {
        if mult == 1 {
            return Err(format!("{s:?} is a fraction of a byte; {BYTE_SIZE_HINT}"));
        }
        let kept = &frac[..frac.len().min(24)];
        let digits: u128 = kept
            .parse()
            .map_err(|_| format!("{s:?} is not a byte size; {BYTE_SIZE_HINT}"))?;
        let part = digits * mult as u128 / 10u128.pow(kept.len() as u32);
        bytes = bytes.checked_add(part as u64).ok_or_else(too_large)?;
    }
    Ok(bytes)
}

fn unit_multiplier(unit: &str) -> Option<u64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "p" | "pib" => 1 << 50,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "pb" => 1_000_000_000_000_000,
        _ => return None,
    })
}

/// Bytes for people, in binary units: `40.00 GiB`, `512.0 MiB`, `64.0 KiB`, `17 B`.
pub fn format_bytes(b: u64) -> String {
    ByteSize(b).to_string()
}

/// A byte count that prints in binary units ([`format_bytes`]) and parses with [`parse_bytes`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u32, &str, usize); 5] = [
            (50, "PiB", 2),
            (40, "TiB", 2),
            (30, "GiB", 2),
            (20, "MiB", 1),
            (10, "KiB", 1),
        ];
        for (shift, name, decimals) in UNITS {
            if self.0 >= 1u64 << shift {
                let v = self.0 as f64 / (1u64 << shift) as f64;
                return write!(f, "{v:.decimals$} {name}");
            }
        }
        write!(f, "{} B", self.0)
    }
}

impl std::str::FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_bytes(s).map(ByteSize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_mean_one_thing() {
        assert_eq!(parse_bytes("1000"), Ok(1000));
        assert_eq!(parse_bytes("8GiB"), Ok(8 << 30));
        assert_eq!(parse_bytes("8 gib"), Ok(8 << 30));
        assert_eq!(parse_bytes("8G"), Ok(8 << 30));
        assert_eq!(parse_bytes("512M"), Ok(512 << 20));
        assert_eq!(parse_bytes("2KB"), Ok(2000));
        assert_eq!(parse_bytes("2kB"), Ok(2000));
        assert_eq!(parse_bytes("1.5GB"), Ok(1_500_000_000));
        assert_eq!(parse_bytes("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_bytes("0.5KiB"), Ok(512));
        assert_eq!(parse_bytes("64B"), Ok(64));
        assert_eq!(parse_bytes("+64"), Ok(64));
        assert_eq!(parse_bytes("1.0"), Ok(1));
        assert_eq!(parse_bytes("2PiB"), Ok(2 << 50));
    }

    #[test]
    fn bad_sizes_say_why() {
        assert!(parse_bytes("-1").unwrap_err().contains("negative"));
        assert!(parse_bytes("8XB").unwrap_err().contains("unknown unit"));
        assert!(parse_bytes("GiB").is_err());
        assert!(parse_bytes(".").is_err());
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("1.2.3").is_err());
        assert!(parse_bytes("1.5")
            .unwrap_err()
            .contains("fraction of a byte"));
        assert!(parse_bytes("99999999999TiB")
            .unwrap_err()
            .contains("more than"));
        assert!(parse_bytes("18446744073709551616")
            .unwrap_err()
            .contains("more than"));
        assert_eq!(parse_bytes("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn long_fractions_neither_wrap_nor_vanish() {
        // Once wrapped a u128 (→ about 1.1 TB) and rounded to 0.
        let nines = "1.99999999999999999999999999999999999999TiB";
        assert_eq!(parse_bytes(nines), Ok((2u64 << 40) - 1));
        let below_one = "0.99999999999999999999999999999999999999GiB";
        assert_eq!(parse_bytes(below_one), Ok((1u64 << 30) - 1));
        assert_eq!(parse_bytes("0.000000000000000000000000001GiB"), Ok(0));
        assert_eq!(parse_bytes("000000000000000000000000001KiB"), Ok(1024));
    }

    #[test]
    fn formatting_reads_back() {
        assert_eq!(format_bytes(17), "17 B");
        assert_eq!(format_bytes(64 << 10), "64.0 KiB");
        assert_eq!(format_bytes(512 << 20), "512.0 MiB");
        assert_eq!(format_bytes(40 << 30), "40.00 GiB");
        assert_eq!(format_bytes(3 << 40), "3.00 TiB");
        for b in [17u64, 64 << 10, 40 << 30] {
            assert_eq!(parse_bytes(&format_bytes(b)), Ok(b));
        }
        assert_eq!("8GiB".parse::<ByteSize>(), Ok(ByteSize(8 << 30)));
    }
}
