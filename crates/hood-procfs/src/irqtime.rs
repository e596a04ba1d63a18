//! `--irq-time`: time per irq/softirq handler from tracepoints.
use crate::ProcError;
use hood_model::monitor::IrqTimeRaw;
/// Tracer.
#[derive(Debug)]
pub struct IrqTracer {}
impl IrqTracer {
    /// Start.
    pub fn start() -> Result<Self, ProcError> {
        Err(ProcError::Trace("not yet".into()))
    }
    /// Poll.
    pub fn poll(&mut self) -> IrqTimeRaw {
        IrqTimeRaw::default()
    }
}
