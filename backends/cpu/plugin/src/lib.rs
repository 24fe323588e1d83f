//! The CPU backend as a plugin (in progress).
