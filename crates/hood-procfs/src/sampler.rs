//! Views of the system one refresh after another (`hood top`): each view is derived from a
//! new snapshot and the one before it, whose records the reader then reuses.

use hood_monitor::{derive, IrqTimeRaw, ScanOptions, Snapshot, SystemView};

use crate::irq_handlers::IrqTracer;
use crate::{ProcError, ProcReader};

/// A reader, the `--irq-time` tracer if one was asked for (or why it is unavailable), and
/// the last snapshot.
pub struct Sampler {
    reader: ProcReader,
    tracer: Option<Result<IrqTracer, String>>,
    prev: Snapshot,
}

impl Sampler {
    /// Take the first snapshot at the depth `scan` asks for.
    pub fn start(
        mut reader: ProcReader,
        tracer: Option<Result<IrqTracer, String>>,
        scan: &ScanOptions,
    ) -> Result<Sampler, ProcError> {
        let prev = reader.snapshot(scan)?;
        let mut s = Sampler {
            reader,
            tracer,
            prev,
        };
        s.prev.irq_time = s.irq_state();
        Ok(s)
    }

    /// The view of the last snapshot alone, without rates: the tasks there are now (to
    /// check the IDs a command line names before the first interval ends).
    pub fn current(&self) -> SystemView {
        derive(None, &self.prev)
    }

    /// The tracer's handler times since its last poll, or why there are none.
    fn irq_state(&mut self) -> Option<IrqTimeRaw> {
        match self.tracer.as_mut()? {
            Ok(tr) => Some(tr.poll()),
            Err(why) => Some(IrqTimeRaw {
                unavailable: Some(why.clone()),
                ..Default::default()
            }),
        }
    }

    fn snapshot(&mut self, scan: &ScanOptions) -> Result<Snapshot, ProcError> {
        let mut cur = self.reader.snapshot(scan)?;
        cur.irq_time = self.irq_state();
        Ok(cur)
    }

    /// A new snapshot, and the view of the interval since the last one.
    pub fn next(&mut self, scan: &ScanOptions) -> Result<SystemView, ProcError> {
        let cur = self.snapshot(scan)?;
        let view = derive(Some(&self.prev), &cur);
        // The older snapshot's records are reused by the next scan.
        let old = std::mem::replace(&mut self.prev, cur);
        self.reader.recycle(old);
        Ok(view)
    }

    /// A new snapshot to measure the next view from, without a view (rates need two
    /// snapshots of the same depth: after `scan` changed, say).
    pub fn restart(&mut self, scan: &ScanOptions) -> Result<(), ProcError> {
        let cur = self.snapshot(scan)?;
        let old = std::mem::replace(&mut self.prev, cur);
        self.reader.recycle(old);
        Ok(())
    }
}
