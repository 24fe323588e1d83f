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
    bar(
        len,
        what,
        "{prefix:>10} [{elapsed_precise}] {bar:30} {pos}/{len} {msg} (eta {eta})",
    )
}

/// [`progress`] without an estimate of the time left: for steps far from equal, or a count
/// whose first step waits for something else (a parameter load).
pub fn count(len: u64, what: &str) -> ProgressBar {
    bar(
        len,
        what,
        "{prefix:>10} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}",
    )
}

fn bar(len: u64, what: &str, template: &str) -> ProgressBar {
    if !progress_enabled() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(template) {
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

/// Says the steps of a setup as they end: a line each on stderr (above the bar on a terminal),
/// and on a terminal a bar over the steps naming the one under way (a 32 GiB PoRep's setup
/// takes minutes).
pub struct SetupLines {
    pb: ProgressBar,
}

impl SetupLines {
    /// Over `of` steps, `first` the one that starts now.
    pub fn new(of: usize, first: &str) -> Self {
        let pb = count(of as u64, "setup");
        pb.set_message(first.to_string());
        SetupLines { pb }
    }

    /// Says that step `s` ended.
    pub fn report(&self, s: &bellows_core::groth16::setup::SetupStep) {
        let line = step_line(s);
        if self.pb.is_hidden() {
            crate::errln!("{line}");
        } else {
            self.pb.println(line);
        }
        self.pb.set_position(s.index as u64);
        self.pb.set_message(s.next.unwrap_or("writing").to_string());
    }

    /// Takes the bar away (the lines stay).
    pub fn finish(&self) {
        self.pb.finish_and_clear();
    }
}

/// The line said when setup step `s` ends.
fn step_line(s: &bellows_core::groth16::setup::SetupStep) -> String {
    format!(
        "setup step {}/{}: {} in {:.1} s",
        s.index,
        s.of,
        s.name,
        s.took.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellows_core::groth16::setup::SetupStep;

    #[test]
    fn a_setup_step_line_names_its_place_and_time() {
        let s = SetupStep {
            index: 5,
            of: 8,
            name: "h query",
            next: Some("ic and l queries"),
            took: Duration::from_millis(52_140),
        };
        assert_eq!(step_line(&s), "setup step 5/8: h query in 52.1 s");
    }
}
