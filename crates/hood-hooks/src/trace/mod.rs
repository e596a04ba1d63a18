//! The event-trace recorder (`hood trace record`, [`record`]): the `--filter/--exclude` address
//! table the runtime reads at start ([`filter`]), the rings streamed into the trace file while
//! the program runs ([`stream`]), the pages pre-faulted ahead of the traced threads
//! ([`prefault`]), and the segments collected into the trace model when it ends ([`collect`]).

pub mod collect;
pub mod filter;
pub mod prefault;
pub mod record;
pub mod stream;
