//! Progress bars and spinners on stderr, drawn only for a terminal (`BELLOWS_NO_PROGRESS`
//! turns them off).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Whether progress bars are drawn: stderr is a terminal and `BELLOWS_NO_PROGRESS` is unset.
fn progress_enabled() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("BELLOWS_NO_PROGRESS").is_none()
}

/// A progress bar over `len` steps on stderr, hidden when stderr is not a terminal.
pub fn progress(len: u64, what: &str) -> ProgressBar {
    if !progress_enabled() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix:>10} [{elapsed_precise}] {bar:30} {pos}/{len} {msg} (eta {eta})",
    ) {
        pb.set_style(style);
    }
    pb.set_prefix(what.to_string());
    pb.enable_steady_tick(Duration::from_millis(200));
    pb
}

/// A spinner on stderr for work without steps, hidden when stderr is not a terminal.
pub fn spinner(what: &str) -> ProgressBar {
    if !progress_enabled() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}]") {
        pb.set_style(style);
    }
    pb.set_message(what.to_string());
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}
