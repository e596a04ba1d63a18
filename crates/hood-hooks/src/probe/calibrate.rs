//! What a probed call costs here and now: measured at the start of every probe session on two
//! functions of hood's own, and which kind of first instruction each probed function has.

use std::collections::{BTreeMap, HashMap};
use std::os::fd::AsRawFd;

use hood_perf::{UprobePoint, UprobeRecorder, UprobeTarget};
use hood_symbols::probe::Selection;
use hood_tracemodel::trace::ProbeCost;

use super::hits::{decode_hits, Hit};
use crate::HooksError;

/// A function that does next to nothing, probed by [`calibrate`] where hood-perf has no
/// functions of known first instructions (other than x86-64).
#[cfg(not(target_arch = "x86_64"))]
#[inline(never)]
pub(super) fn calibration_target(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_mul(3)
}

/// Calls of each calibration function probed to measure the cost.
pub(super) const CALIBRATION_CALLS: u64 = 2000;

/// What a probed call costs here and now, for each way the kernel runs a probed function's
/// first instruction (hood_perf::uprobe_cost): emulated, and single-stepped out of line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Calibration {
    /// A function whose first instruction the kernel emulates (a push, a nop, a jump).
    pub emulated: ProbeCost,
    /// A function whose first instruction the kernel single-steps (most others).
    pub stepped: ProbeCost,
}

/// A function [`calibrate`] probes: its address, and a way to call it.
pub(super) type Target = (u64, fn(u64) -> u64);

/// The functions [`calibrate`] probes, emulated kind first.
pub(super) fn calibration_targets() -> [Target; 2] {
    #[cfg(target_arch = "x86_64")]
    {
        use hood_perf::uprobe_cost as c;
        [
            (c::emulated_target_addr(), c::call_emulated_target),
            (c::stepped_target_addr(), c::call_stepped_target),
        ]
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let f: fn(u64) -> u64 = std::hint::black_box(calibration_target);
        [(f as usize as u64, f), (f as usize as u64, f)]
    }
}

/// Measure what one probed call costs here and now: an entry and a return probe are put on
/// two functions of hood's own that do next to nothing, one whose first instruction the
/// kernel emulates and one whose first instruction it single-steps (a second trap), in the
/// calling thread, which calls each 2000 times. For each, the median time from an entry event
/// to its return event is the part of the cost a probed call's own span holds (`self_ns`);
/// the median time from one entry event to the next, less that, the part its caller's holds
/// (`child_ns`). Medians, so a preemption or two under load does not move them. Root, as
/// every probe.
pub fn calibrate() -> Result<Calibration, HooksError> {
    let targets = calibration_targets();
    // The executable mapping holding `addr`: its range (for map_files) and the file offset.
    let mapping_of = |addr: u64| -> Result<Option<(String, u64)>, HooksError> {
        let mut found = None;
        hood_procfs::process::for_each_own_maps_line(|l| {
            found = hood_raw::maps::parse_maps_line(l)
                .filter(|m| m.is_exec() && (m.start..m.end).contains(&addr))
                .map(|m| {
                    (
                        format!("{:x}-{:x}", m.start, m.end),
                        addr - m.start + m.offset,
                    )
                });
            found.is_none()
        })
        .map_err(|source| HooksError::Io {
            what: "reading /proc/self/maps".into(),
            source,
        })?;
        Ok(found)
    };
    // The very files mapped, whatever their paths hold now.
    let mut files = Vec::new();
    let mut points = Vec::new();
    for (addr, _) in targets {
        let (range, offset) = mapping_of(addr)?.ok_or_else(|| {
            HooksError::Config(format!(
                "hood's own code at {addr:#x} is in no executable mapping of /proc/self/maps"
            ))
        })?;
        let at = format!("/proc/self/map_files/{range}");
        let file = std::fs::File::open(&at).map_err(|source| HooksError::Io {
            what: format!("opening {at}"),
            source,
        })?;
        points.push(UprobePoint {
            path: format!("/proc/self/fd/{}", file.as_raw_fd()),
            offset,
            returns: true,
        });
        files.push(file);
    }
    let tid = rustix::thread::gettid().as_raw_nonzero().get();
    let mut rec = UprobeRecorder::open(&points, &UprobeTarget::Threads(vec![tid]), 64, false)?;
    let ids: HashMap<u64, (u32, bool)> =
        rec.ids().iter().map(|i| (i.id, (i.point, i.ret))).collect();
    rec.enable()?;
    for (_, call) in targets {
        for i in 0..CALIBRATION_CALLS {
            std::hint::black_box(call(std::hint::black_box(i)));
        }
    }
    rec.disable();
    let (mut hits, mut lost) = (Vec::new(), BTreeMap::new());
    rec.drain(&mut |_, b| {
        decode_hits(b, &ids, &mut hits, &mut lost);
        Ok(())
    })?;
    drop(rec);
    drop(files);
    hits.sort_by_key(|h| h.time);
    let cost_of = |point: u32| -> Result<ProbeCost, HooksError> {
        let hits: Vec<&Hit> = hits.iter().filter(|h| h.point == point).collect();
        let mut spans = Vec::new();
        let mut periods = Vec::new();
        for w in hits.windows(2) {
            if !w[0].ret && w[1].ret {
                spans.push(w[1].time.saturating_sub(w[0].time));
            }
        }
        let mut last_entry: Option<u64> = None;
        for h in hits.iter().filter(|h| !h.ret) {
            if let Some(t) = last_entry {
                periods.push(h.time.saturating_sub(t));
            }
            last_entry = Some(h.time);
        }
        if (spans.len() as u64) < CALIBRATION_CALLS / 2
            || (periods.len() as u64) < CALIBRATION_CALLS / 2
        {
            return Err(HooksError::Config(format!(
                "measuring the cost of a probe: {} calls made, {} seen entering and returning",
                CALIBRATION_CALLS,
                spans.len()
            )));
        }
        let median = |v: &mut Vec<u64>| {
            v.sort_unstable();
            v[v.len() / 2]
        };
        let self_ns = median(&mut spans);
        let per_call = median(&mut periods);
        Ok(ProbeCost {
            self_ns,
            child_ns: per_call.saturating_sub(self_ns),
        })
    };
    Ok(Calibration {
        emulated: cost_of(0)?,
        stepped: cost_of(1)?,
    })
}

/// ns as µs.
pub(super) fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Per point of `sel`: whether the kernel single-steps the first instruction the probe
/// replaces (read from the file at the probe's offset; an unreadable one counts as
/// single-stepped, the higher figure).
pub(super) fn stepped_points(sel: &Selection) -> Vec<bool> {
    sel.points
        .iter()
        .map(|p| {
            sel.objects
                .get(p.object)
                .is_none_or(|o| stepped_at(&o.file, p.offset))
        })
        .collect()
}

/// Whether the kernel single-steps the instruction at `offset` of `file` (an unreadable one
/// counts as single-stepped, the higher figure).
pub(super) fn stepped_at(file: &std::fs::File, offset: u64) -> bool {
    use std::os::unix::fs::FileExt as _;
    let mut b = [0u8; 8];
    let n = file.read_at(&mut b, offset).unwrap_or(0);
    !hood_perf::uprobe_cost::kernel_emulates(&b[..n])
}
