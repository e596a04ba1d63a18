//! An event trace (a Trace-kind file, written by `hood trace record` and `--probe`) read back
//! as a report streams it: everything but the events in one pass ([`TraceFile::open`]), then
//! the events chunk by chunk, as often as the report asks, never the file whole.

use std::path::{Path, PathBuf};

use hood_tracemodel::trace::{Events, ThreadEvents, ThreadKey, TraceHead};
use hood_tracemodel::TraceModelError;

use crate::LoadError;

/// A trace file whose first pass is done.
#[derive(Debug)]
pub struct TraceFile {
    path: PathBuf,
    head: TraceHead,
}

impl TraceFile {
    /// Read everything of the trace at `path` but its events: processes, threads, context
    /// switches, irqs, and the reader's warnings (in [`TraceHead::warnings`]).
    pub fn open(path: &Path) -> Result<TraceFile, LoadError> {
        let head = hood_tracemodel::trace::scan(path)?;
        Ok(TraceFile {
            path: path.to_owned(),
            head,
        })
    }
}

impl Events for TraceFile {
    fn head(&self) -> &TraceHead {
        &self.head
    }

    fn for_each_events(
        &self,
        want: &dyn Fn(ThreadKey) -> bool,
        f: &mut dyn FnMut(ThreadEvents) -> Result<(), TraceModelError>,
    ) -> Result<(), TraceModelError> {
        hood_tracemodel::trace::for_each_events(&self.path, &self.head, want, f)
    }
}
