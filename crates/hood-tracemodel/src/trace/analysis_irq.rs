//! The irq part of the per-thread walk: hard irqs and softirqs that interrupted a traced
//! thread, timed from the outermost entry to its exit and charged to the call on top of the
//! stack.

use super::super::timeline::PathItem;
use super::{irq_label, OpenIrq, Walk};
use hood_raw::irq::IrqKind;

impl Walk<'_> {
    /// Irqs whose exit never came (lost records): counted, not timed.
    pub(super) fn drop_open_irqs(&mut self) {
        let n = u64::from(self.hard.take().is_some()) + u64::from(self.soft.take().is_some());
        self.th.irq_unmatched += n;
    }

    pub(super) fn irq(&mut self, t: u64, kind: IrqKind, num: u32, name: &str) {
        let soft = kind.is_soft();
        if kind.is_entry() {
            let label = irq_label(kind, num, name);
            let stale = if soft {
                self.soft.take()
            } else {
                self.hard.take()
            };
            if stale.is_some() {
                // Same kind again without an exit in between: that exit was lost; the stale
                // entry is counted, not timed.
                self.th.irq_unmatched += 1;
            }
            if !self.in_irq() {
                self.irq_since = t;
                self.irq_mark = t;
            }
            if soft {
                self.th.softirqs += 1;
            } else {
                self.th.hard_irqs += 1;
            }
            if let Some(top) = self.stack.last_mut() {
                top.irqs += 1;
            }
            // A hard irq inside a softirq is shown one level deeper.
            let depth = self.stack.len() + usize::from(!soft && self.soft.is_some());
            self.line(
                t,
                PathItem::IrqIn {
                    depth,
                    label: label.clone(),
                },
            );
            let o = Some(OpenIrq { entry: t, label });
            if soft {
                self.soft = o;
            } else {
                self.hard = o;
            }
            return;
        }
        let open = if soft {
            self.soft.take()
        } else {
            self.hard.take()
        };
        let Some(o) = open else {
            return; // an exit whose entry was lost or came before the traced span
        };
        let d = t.saturating_sub(o.entry);
        if self.opts.calls && self.overlaps(o.entry, t) {
            self.out
                .irq_intervals
                .push((self.p.pid, self.th.tid, o.entry, d, o.label.clone()));
        }
        let depth = self.stack.len() + usize::from(!soft && self.soft.is_some());
        self.line(
            t,
            PathItem::IrqOut {
                depth,
                label: o.label,
                dur_ns: d,
            },
        );
        if !self.in_irq() {
            // The outermost irq exited: charge the rest and count its time once.
            self.charge_since_mark(t);
            self.th.irq_ns += t.saturating_sub(self.irq_since);
        }
    }
}
