//! Replaying side-band records to a stack unwinder: the mappings, execs, forks and exits a
//! process goes through, told in the order the records happened.

use crate::records::{Event, Mapping, Truncation};

/// Unwinds user stack copies while the records are replayed in time order (implemented
/// by hood-unwind, so the decoders and the model stay pure).
pub trait StackUnwinder {
    /// A process mapped executable code.
    fn mmap(&mut self, m: &Mapping);
    /// A process called exec.
    fn exec(&mut self, pid: u32);
    /// A new process forked from `ppid`.
    fn fork(&mut self, ppid: u32, pid: u32);
    /// A process exited.
    fn exit(&mut self, pid: u32);
    /// Unwind a sample of `pid` from `regs` (ip, sp, bp) over `stack`, appending the frames
    /// to `out`; returns why the chain stops early, if it does.
    fn unwind(
        &mut self,
        pid: u32,
        regs: [u64; 3],
        stack: &[u8],
        out: &mut Vec<u64>,
    ) -> Option<Truncation>;
}

/// Tell `u` what a side-band event changes in a process's mappings (other events: nothing).
pub fn follow_event(u: &mut dyn StackUnwinder, ev: &Event) {
    match ev {
        Event::Mmap(m) => u.mmap(m),
        Event::Comm {
            pid, exec: true, ..
        } => u.exec(*pid),
        Event::Fork { pid, ppid, .. } => u.fork(*ppid, *pid),
        Event::Exit { pid, tid } if pid == tid => u.exit(*pid),
        _ => {}
    }
}
