//! Plain-text renderers for the system monitor (issue 3): `hood ps`, `hood uptime`, `hood top`
//! frames and `hood info` nodes. They take the derived [`SystemView`] and return lines, which
//! the TUI reuses, so batch output and the screen read the same.
//!
//! [`SystemView`]: hood_monitor::SystemView

pub mod dump;
pub mod exceptions;
pub mod fmt;
pub mod info;
pub mod ps;
pub mod table;
pub mod top;

pub use table::{columns_for, render_table, Column};
