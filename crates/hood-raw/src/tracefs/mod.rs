//! tracefs layouts: where a tracepoint's fields sit ([`mod@format`]) and the raw ring-buffer pages
//! that carry its records ([`page`]).

pub mod format;
pub mod page;
