//! The secrets of the daemon's files: the tokens of a token file (each named: the name is an
//! identity, `token:NAME`), and the warning for a secret file other users can read.

/// The tokens of a token file: one bare token (named `default`, identity `token:default`), or
/// one `NAME TOKEN` per line (blank lines and `#` comments skipped). Each token has at least
/// 16 characters, names are unique and tokens distinct.
pub fn parse_tokens(text: &str) -> std::result::Result<crate::server::Tokens, String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut out: crate::server::Tokens = Vec::new();
    if let [one] = lines.as_slice() {
        if !one.contains(char::is_whitespace) {
            out.push(("default".into(), one.to_string()));
        }
    }
    if out.is_empty() {
        for (i, l) in lines.iter().enumerate() {
            let (name, token) = l
                .split_once(char::is_whitespace)
                .map(|(n, t)| (n, t.trim()))
                .ok_or_else(|| format!("line {}: expected NAME TOKEN", i + 1))?;
            if token.contains(char::is_whitespace) {
                return Err(format!("line {}: expected NAME TOKEN, two words", i + 1));
            }
            if !crate::identity::valid_token_name(name) {
                return Err(format!(
                    "line {}: {name:?} is not a token name (letters, digits, - _ .)",
                    i + 1
                ));
            }
            if out.iter().any(|(n, t)| n == name || t == token) {
                return Err(format!(
                    "line {}: the name or the token is given twice",
                    i + 1
                ));
            }
            out.push((name.to_string(), token.to_string()));
        }
    }
    if out.is_empty() {
        return Err("it holds no token".into());
    }
    if let Some((name, _)) = out.iter().find(|(_, t)| t.chars().count() < 16) {
        return Err(format!("the token {name:?} is shorter than 16 characters"));
    }
    Ok(out)
}

/// Warns (on the log) when a secret file can be read by users other than its owner.
pub fn warn_if_readable_by_others(path: &std::path::Path, what: &str) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(m) = std::fs::metadata(path) {
        let mode = m.permissions().mode();
        if mode & 0o044 != 0 {
            let msg = format!(
                "{what} {} can be read by other users (mode {:o}): chmod 600 it",
                path.display(),
                mode & 0o777
            );
            tracing::warn!("{msg}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_file_holds_one_token_or_named_ones() {
        let one = parse_tokens("  0123456789abcdef-secret \n").unwrap();
        assert_eq!(
            one,
            vec![("default".into(), "0123456789abcdef-secret".into())]
        );
        let named =
            parse_tokens("# users\nalice 0123456789abcdef-alice\n\nbob 0123456789abcdef-bob\n")
                .unwrap();
        assert_eq!(named[1], ("bob".into(), "0123456789abcdef-bob".into()));
        for bad in [
            "",
            "short",
            "alice short",
            "a b c 0123456789abcdef",
            "alice 0123456789abcdef-x\nalice 0123456789abcdef-y",
            "al!ce 0123456789abcdef-x",
        ] {
            assert!(parse_tokens(bad).is_err(), "{bad:?} accepted");
        }
    }
}
