//! # bellows-conformance (in progress)
