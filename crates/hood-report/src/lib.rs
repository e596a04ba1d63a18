//! See the crate description.
#![forbid(unsafe_code)]

pub mod monitor;
