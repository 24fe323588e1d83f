//! The CLI's error: a core error (exit code 1) or a usage error found after parsing (exit 2).

/// What went wrong, and so which exit code.
#[derive(Debug)]
pub enum CliError {
    /// Any error of the work itself: exit code 1.
    Core(bellows_core::Error),
    /// A command-line usage error that the argument parser cannot see (a value out of its
    /// circuit's range, an output that is also an input): exit code 2, as clap's own.
    Usage(String),
    /// An error from or about a `bellows serve` daemon (its message says which): exit code 1.
    Daemon(String),
}

impl From<bellows_serve::ServeError> for CliError {
    fn from(e: bellows_serve::ServeError) -> Self {
        match e {
            bellows_serve::ServeError::Core(c) => CliError::Core(c),
            other => CliError::Daemon(other.to_string()),
        }
    }
}

impl From<bellows_core::Error> for CliError {
    fn from(e: bellows_core::Error) -> Self {
        CliError::Core(e)
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Core(e) => write!(f, "{e}"),
            CliError::Usage(m) | CliError::Daemon(m) => f.write_str(m),
        }
    }
}

impl CliError {
    /// The process exit code (docs/cli.md, "Exit codes").
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Core(_) | CliError::Daemon(_) => 1,
            CliError::Usage(_) => 2,
        }
    }
}

/// Result of a command.
pub type Result<T, E = CliError> = std::result::Result<T, E>;

/// A usage error for option `opt` with value `value`, worded as clap words its own.
pub fn invalid_value(
    opt: &str,
    value: impl std::fmt::Display,
    why: impl std::fmt::Display,
) -> CliError {
    CliError::Usage(format!("invalid value '{value}' for '{opt}': {why}"))
}
