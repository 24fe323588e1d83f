//! Backend plugins (in progress).
