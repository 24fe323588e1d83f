//! Standard output and error that never panic.
//!
//! `println!` panics when stdout fails (`verify … > /dev/full`, `verify … | true`), which turned a
//! valid proof into a crash (exit 101). Here every write to stdout goes through [`out`]: the
//! first failure is recorded and later writes are skipped. At the end [`finish`] flushes and
//! reports: a closed pipe (EPIPE: the reader has gone, as with `| head`) ends quietly with the
//! command's own exit code; any other failure (ENOSPC, EIO) is an error (exit 1) since the result
//! was lost. Writes to stderr ([`err`]) ignore failures: there is nowhere left to report them.

use std::io::Write;
use std::sync::Mutex;

/// The first failure writing to stdout.
static STDOUT_ERROR: Mutex<Option<std::io::Error>> = Mutex::new(None);

fn failed() -> bool {
    STDOUT_ERROR
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_some()
}

fn record(e: std::io::Error) {
    let mut slot = STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_none() {
        *slot = Some(e);
    }
}

/// Writes to stdout; after a failure, does nothing (see the module docs).
pub fn out(args: std::fmt::Arguments<'_>) {
    if failed() {
        return;
    }
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args) {
        record(e);
    }
}

/// Writes to stderr, ignoring failures.
pub fn err(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// Flushes stdout and returns the failure that lost output, if any: `None` when everything was
/// written or when the reader closed the pipe (EPIPE).
pub fn finish() -> Option<std::io::Error> {
    if !failed() {
        if let Err(e) = std::io::stdout().lock().flush() {
            record(e);
        }
    }
    let e = STDOUT_ERROR
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()?;
    (e.kind() != std::io::ErrorKind::BrokenPipe).then_some(e)
}

/// Prints a warning on stderr (always, whatever the verbosity).
pub fn warn(msg: &str) {
    crate::errln!("warning: {msg}");
}

/// `println!` to stdout through [`out`].
#[macro_export]
macro_rules! outln {
    () => { $crate::stdio::out(format_args!("\n")) };
    ($($t:tt)*) => { $crate::stdio::out(format_args!("{}\n", format_args!($($t)*))) };
}

/// `eprintln!` to stderr through [`err`].
#[macro_export]
macro_rules! errln {
    ($($t:tt)*) => { $crate::stdio::err(format_args!("{}\n", format_args!($($t)*))) };
}
