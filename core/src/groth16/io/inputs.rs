//! Public inputs as JSON: an array of decimal strings.

use std::path::Path;

use blstrs::Scalar;

use super::codec;
use super::files::read_bounded;
use crate::{Error, Result};

/// Parses public inputs: a JSON array of decimal strings, each a field element (< r).
///
/// The constant-one input is not listed. Numbers must be quoted (a JSON number cannot hold a
/// 255-bit value exactly); only ASCII digits are accepted (no sign, no hex, no spaces).
pub fn parse_public_inputs_json(text: &str) -> Result<Vec<Scalar>> {
    let text = strip_bom(text);
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::malformed("public inputs JSON", format!("not valid JSON: {e}")))?;
    let items = match value {
        serde_json::Value::Array(items) => items,
        other => {
            return Err(Error::malformed(
                "public inputs JSON",
                format!(
                    "expected an array of decimal strings, got {}",
                    json_kind(&other)
                ),
            ))
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let s = v.as_str().ok_or_else(|| {
                Error::malformed(
                    format!("public input {i}"),
                    format!(
                        "expected a decimal string such as \"5\", got {} (numbers must be \
                         quoted: JSON numbers cannot hold field elements exactly)",
                        json_kind(v)
                    ),
                )
            })?;
            codec::scalar_from_decimal(s).map_err(|e| {
                Error::malformed(format!("public input {i} ({})", shorten(s)), e.to_string())
            })
        })
        .collect()
}

/// A UTF-8 byte-order mark some editors put at the start of a file, which JSON does not allow.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Most bytes a public-inputs file read by [`read_public_inputs_json`] may have (1 MiB: some
/// 12 000 field elements).
pub const MAX_INPUTS_FILE_BYTES: u64 = 1 << 20;

/// Public inputs from JSON bytes, with a message that names the file when it is not UTF-8.
pub fn inputs_text<'a>(bytes: &'a [u8], label: &str) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| {
        Error::malformed(
            label,
            format!(
                "not UTF-8 text (byte offset {}): public inputs are JSON",
                e.valid_up_to()
            ),
        )
    })
}

/// Reads public inputs from a JSON file, at most [`MAX_INPUTS_FILE_BYTES`] (see
/// [`parse_public_inputs_json`]).
pub fn read_public_inputs_json(path: impl AsRef<Path>) -> Result<Vec<Scalar>> {
    let path = path.as_ref();
    let label = format!("public inputs file {}", path.display());
    let bytes = read_bounded(path, &label, MAX_INPUTS_FILE_BYTES)?;
    let text = inputs_text(&bytes, &label)?;
    parse_public_inputs_json(text).map_err(|e| match e {
        Error::Malformed { what, reason } => {
            Error::malformed(format!("{what} in {}", path.display()), reason)
        }
        other => other,
    })
}

/// Formats public inputs as a JSON array of decimal strings (the inverse of
/// [`parse_public_inputs_json`]).
pub fn format_public_inputs_json(inputs: &[Scalar]) -> String {
    let strings: Vec<String> = inputs.iter().map(codec::scalar_to_decimal).collect();
    serde_json::to_string(&strings).expect("a list of strings always serialises")
}

fn json_kind(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "null".into(),
        serde_json::Value::Bool(b) => format!("the boolean {b}"),
        serde_json::Value::Number(n) => format!("the number {n}"),
        serde_json::Value::String(s) => format!("the string {}", shorten(s)),
        serde_json::Value::Array(_) => "an array".into(),
        serde_json::Value::Object(_) => "an object".into(),
    }
}

/// Quotes a value for an error message, cut to a readable length.
fn shorten(s: &str) -> String {
    const MAX: usize = 100;
    if s.chars().count() <= MAX {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(MAX).collect();
        format!("{head:?}… ({} characters)", s.chars().count())
    }
}
