//! One daemon per state directory.
//!
//! Two daemons on one state directory would both resume the journal's running jobs and prove
//! them twice, each leaving the other's jobs unfinished forever, and a second one that then
//! fails to bind its port would already have failed live jobs in recovery. So `serve` first
//! takes an exclusive lock on `STATE_DIR/daemon.lock` (`flock`, released by the kernel when
//! the process ends, however it ends), before it binds a socket or opens the journal, and a
//! second daemon stops at once, naming the first one's pid.

use std::{
    fs::File,
    io::{Read, Seek, Write},
    path::Path,
};

use rustix::fs::{flock, FlockOperation};

use crate::error::{Result, ServeError};

/// The lock file's name in the state directory.
pub const LOCK_FILE: &str = "daemon.lock";

/// The state directory, held (see the module docs); released when dropped.
#[derive(Debug)]
pub struct StateLock {
    _file: File,
}

impl StateLock {
    /// Takes `state_dir` for this process, or fails when another process holds it.
    pub fn take(state_dir: &Path) -> Result<Self> {
        let path = state_dir.join(LOCK_FILE);
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| ServeError::io(format!("opening {}", path.display()), e))?;
        if let Err(e) = flock(&file, FlockOperation::NonBlockingLockExclusive) {
            if e == rustix::io::Errno::WOULDBLOCK {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                return Err(ServeError::Config(format!(
                    "another bellows serve{} holds the state directory {}: one daemon per state \
                     directory (give this one its own --state-dir)",
                    match pid.trim() {
                        "" => String::new(),
                        p => format!(" (pid {p})"),
                    },
                    state_dir.display()
                )));
            }
            return Err(ServeError::io(
                format!("locking {}", path.display()),
                std::io::Error::from(e),
            ));
        }
        // Who holds it, for the message a second daemon gives (informative only: the lock is
        // the flock, not this text).
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = writeln!(file, "{}", std::process::id());
        let _ = file.sync_all();
        Ok(Self { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let d = std::env::temp_dir().join(format!("bellows-lock-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let first = StateLock::take(&d).unwrap();
        // flock locks belong to the open file: a second open in the same process conflicts too.
        let e = StateLock::take(&d).unwrap_err().to_string();
        assert!(
            e.contains("one daemon per state directory")
                && e.contains(&std::process::id().to_string()),
            "{e}"
        );
        drop(first);
        StateLock::take(&d).unwrap();
        let _ = std::fs::remove_dir_all(&d);
    }
}
