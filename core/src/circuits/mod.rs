//! Built-in circuits (in progress).
