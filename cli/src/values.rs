//! Parsers of option values, with messages that say what is expected (clap prints them as
//! `error: invalid value 'V' for '--OPT <X>': MESSAGE` and exits with code 2).

/// Largest `--threads`: four per CPU the machine has (more only adds switching).
pub fn max_threads() -> usize {
    4 * std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A whole number in `lo..=hi`; negative numbers, fractions and words get a message saying so.
pub fn whole(s: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let t = s.trim();
    let range = format!("a whole number in {lo}..={hi}");
    if t.starts_with('-') {
        return Err(format!("negative; expected {range}"));
    }
    let v: u64 = t
        .strip_prefix('+')
        .unwrap_or(t)
        .parse()
        .map_err(|_| format!("expected {range}"))?;
    if !(lo..=hi).contains(&v) {
        return Err(format!("out of range; expected {range}"));
    }
    Ok(v)
}

/// `--count`, `--batch-size`: 1..=2^22 (the most proofs a proof file holds).
pub fn proof_count(s: &str) -> Result<u32, String> {
    whole(
        s,
        1,
        bellows_core::groth16::limits::MAX_PROOFS_PER_FILE as u64,
    )
    .map(|v| v as u32)
    .map_err(|e| format!("{e} (a proof file holds at most 2^22 proofs)"))
}

/// A whole number ≥ 1 that fits a u32 (`--reps`).
pub fn positive_u32(s: &str) -> Result<u32, String> {
    whole(s, 1, u32::MAX.into()).map(|v| v as u32)
}

/// A whole number ≥ 0 that fits a u32 (`--warmup`).
pub fn u32_any(s: &str) -> Result<u32, String> {
    whole(s, 0, u32::MAX.into()).map(|v| v as u32)
}

/// A seed: any u64.
pub fn seed(s: &str) -> Result<u64, String> {
    whole(s, 0, u64::MAX)
}

/// `--log-size`: 0..=32 here (Fr's two-adicity); each circuit checks its own minimum.
pub fn log_size(s: &str) -> Result<u32, String> {
    whole(s, 0, bellows_core::MAX_LOG_NTT.into()).map(|v| v as u32)
}

/// `--bits-pct`: 0..=100.
pub fn percent(s: &str) -> Result<u8, String> {
    whole(s, 0, 100).map(|v| v as u8)
}

/// `--threads`: 1..=[`max_threads`].
pub fn threads(s: &str) -> Result<u16, String> {
    let max = max_threads().min(u16::MAX as usize) as u64;
    whole(s, 1, max)
        .map(|v| v as u16)
        .map_err(|e| format!("{e}: at most four threads per CPU ({} CPUs here)", max / 4))
}

/// A byte count with an optional unit: `1000`, `64KiB`, `8GiB`, `1.5G`, `2 MB`. Binary units
/// (`KiB`, `MiB`, `GiB`, `TiB`, and `K`, `M`, `G`, `T` alone) are powers of 1024; decimal ones
/// (`kB`/`KB`, `MB`, `GB`, `TB`) powers of 1000; `B` or no unit is bytes.
pub fn byte_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let expected = "expected a byte count such as 1000000, 512MiB, 8GiB or 1.5GB";
    if t.starts_with('-') {
        return Err(format!("negative; {expected}"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    if num.is_empty() || num.matches('.').count() > 1 {
        return Err(expected.to_string());
    }
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(format!("unknown unit {unit:?}; {expected}")),
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let int: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| expected.to_string())?
    };
    let mut bytes = int
        .checked_mul(mult)
        .ok_or_else(|| format!("too large; {expected}"))?;
    if !frac.is_empty() {
        // Exact fractions: digits d over 10^len, times the unit, rounded down.
        let digits: u128 = frac.parse().map_err(|_| expected.to_string())?;
        let scale = 10u128
            .checked_pow(frac.len() as u32)
            .ok_or_else(|| expected.to_string())?;
        let part = digits * mult as u128 / scale;
        bytes = bytes
            .checked_add(part as u64)
            .ok_or_else(|| format!("too large; {expected}"))?;
        if mult == 1 && digits != 0 {
            return Err(format!("a fraction of a byte; {expected}"));
        }
    }
    Ok(bytes)
}

/// `--bytes` (a sha256 preimage): a byte size up to the circuit's maximum (64 MiB).
pub fn preimage_bytes(s: &str) -> Result<usize, String> {
    let max = bellows_core::circuits::sha256::MAX_BYTES as u64;
    let b = byte_size(s)?;
    if b > max {
        return Err(format!(
            "{b} bytes is more than the sha256 circuit's maximum of {max} (64 MiB)"
        ));
    }
    Ok(b as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_say_what_is_wrong() {
        assert_eq!(whole("5", 1, 10), Ok(5));
        assert_eq!(whole("+5", 1, 10), Ok(5));
        assert!(whole("-1", 1, 10).unwrap_err().contains("negative"));
        assert!(whole("0", 1, 10).unwrap_err().contains("1..=10"));
        assert!(whole("1.5", 1, 10).unwrap_err().contains("whole number"));
        assert!(whole("99999999999999999999999", 0, u64::MAX).is_err());
        assert!(proof_count("4294967295").unwrap_err().contains("2^22"));
        assert_eq!(proof_count("4194304"), Ok(1 << 22));
        assert!(percent("101").is_err());
        assert!(log_size("33").is_err());
        assert!(threads("65535")
            .unwrap_err()
            .contains("four threads per CPU"));
        assert_eq!(threads("1"), Ok(1));
    }

    #[test]
    fn byte_sizes_take_units() {
        assert_eq!(byte_size("1000"), Ok(1000));
        assert_eq!(byte_size("8GiB"), Ok(8 << 30));
        assert_eq!(byte_size("8 gib"), Ok(8 << 30));
        assert_eq!(byte_size("512M"), Ok(512 << 20));
        assert_eq!(byte_size("2KB"), Ok(2000));
        assert_eq!(byte_size("1.5GB"), Ok(1_500_000_000));
        assert_eq!(byte_size("0.5KiB"), Ok(512));
        assert_eq!(byte_size("64B"), Ok(64));
        assert!(byte_size("-1").unwrap_err().contains("negative"));
        assert!(byte_size("8XB").unwrap_err().contains("unknown unit"));
        assert!(byte_size("GiB").is_err());
        assert!(byte_size("1.2.3").is_err());
        assert!(byte_size("1.5").is_err());
        assert!(byte_size("99999999999TiB")
            .unwrap_err()
            .contains("too large"));
        assert_eq!(preimage_bytes("1KiB"), Ok(1024));
        assert!(preimage_bytes("65MiB").is_err());
    }
}

/// `bench --alternate-env NAME=V1,V2,..`: a variable name (letters, digits, `_`) and one or more
/// values separated by commas.
pub fn env_alternation(s: &str) -> Result<(String, Vec<String>), String> {
    let usage = "expected NAME=V1,V2,.. (an environment variable and the values it takes in turn)";
    let (name, vals) = s.split_once('=').ok_or_else(|| usage.to_string())?;
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("{name:?} is not a variable name; {usage}"));
    }
    let vals: Vec<String> = vals.split(',').map(|v| v.trim().to_string()).collect();
    if vals.iter().any(String::is_empty) {
        return Err(format!("an empty value; {usage}"));
    }
    Ok((name.to_string(), vals))
}
