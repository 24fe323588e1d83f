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

/// `--bytes` (a sha256 preimage): a byte size up to the circuit's maximum (64 MiB).
pub fn preimage_bytes(s: &str) -> Result<usize, String> {
    let max = bellows_core::circuits::sha256::MAX_BYTES as u64;
    let b = bellows_core::units::parse_bytes(s)?;
    if b > max {
        return Err(format!(
            "{b} bytes is more than the sha256 circuit's maximum of {max} (64 MiB)"
        ));
    }
    Ok(b as usize)
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
    fn preimage_sizes_take_units_up_to_the_circuits_maximum() {
        // Units are the workspace's (bellows_core::units); the maximum is this option's.
        assert_eq!(preimage_bytes("1KiB"), Ok(1024));
        assert_eq!(preimage_bytes("64MiB"), Ok(64 << 20));
        assert!(preimage_bytes("65MiB").unwrap_err().contains("maximum"));
        assert!(preimage_bytes("1.5")
            .unwrap_err()
            .contains("fraction of a byte"));
    }
}
