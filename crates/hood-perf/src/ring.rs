//! One per-CPU perf ring buffer: a metadata page plus a power-of-two data area.
//! The reader hands out the raw bytes between `data_tail` and `data_head`.

use std::io;
use std::mem::offset_of;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

use perf_event_open_sys::bindings::perf_event_mmap_page;

use crate::sys::{self, Mapping};
use crate::PerfError;

/// A mapped ring buffer of one CPU.
#[derive(Debug)]
pub(crate) struct Ring {
    cpu: u32,
    map: Mapping,
    data_off: usize,
    data_size: u64,
    /// Our copy of `data_tail` (we are its only writer).
    tail: u64,
}

impl Ring {
    /// Maps `1 + data_pages` pages of `fd` (the CPU's ring-owning event).
    pub(crate) fn map(fd: RawFd, cpu: u32, data_pages: usize) -> Result<Ring, PerfError> {
        let page = sys::page_size();
        let len = (1 + data_pages) * page;
        let map = Mapping::new(fd, len).map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::ENOMEM) => PerfError::MlockLimit { cpu, bytes: len },
            _ => PerfError::Sys {
                call: "mmap",
                what: format!("perf ring buffer of CPU {cpu} ({len} bytes)"),
                source: e,
            },
        })?;
        let mut ring = Ring {
            cpu,
            map,
            data_off: page,
            data_size: (data_pages * page) as u64,
            tail: 0,
        };
        // Kernels since 4.1 publish where the data area is; older ones leave zeros.
        let off = ring.meta_u64(offset_of!(perf_event_mmap_page, data_offset));
        let size = ring.meta_u64(offset_of!(perf_event_mmap_page, data_size));
        if off != 0 && size != 0 {
            if !size.is_power_of_two() || off.saturating_add(size) > ring.map.len() as u64 {
                return Err(PerfError::Sys {
                    call: "mmap",
                    what: format!("perf ring buffer of CPU {cpu}"),
                    source: io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "kernel reported data area {off}+{size} outside the {len}-byte mapping"
                        ),
                    ),
                });
            }
            ring.data_off = off as usize;
            ring.data_size = size;
        }
        ring.tail = ring
            .atomic(offset_of!(perf_event_mmap_page, data_tail))
            .load(Ordering::Relaxed);
        Ok(ring)
    }

    /// CPU number of this ring.
    pub(crate) fn cpu(&self) -> u32 {
        self.cpu
    }

    fn meta_u64(&self, offset: usize) -> u64 {
        self.atomic(offset).load(Ordering::Relaxed)
    }

    fn atomic(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset.is_multiple_of(8) && offset + 8 <= self.map.len());
        // SAFETY: `offset` is the offset of an 8-byte-aligned u64 field of the
        // metadata page at the (page-aligned) start of the live mapping; the kernel
        // accesses these fields concurrently, so they are only touched atomically.
        unsafe { AtomicU64::from_ptr(self.map.as_ptr().add(offset).cast::<u64>()) }
    }

    /// Hands the unread bytes to `sink` (one slice, or two when the region wraps),
    /// then releases them to the kernel. Returns the number of bytes drained.
    /// On a sink error the ring is not advanced.
    pub(crate) fn drain(
        &mut self,
        sink: &mut dyn FnMut(u32, &[u8]) -> io::Result<()>,
    ) -> Result<usize, PerfError> {
        let (head, [first, second]) = self.unread()?;
        let cpu = self.cpu;
        let avail = first.len() + second.len();
        if avail == 0 {
            return Ok(0);
        }
        sink(cpu, first).map_err(|source| PerfError::Sink { cpu, source })?;
        if !second.is_empty() {
            sink(cpu, second).map_err(|source| PerfError::Sink { cpu, source })?;
        }
        self.release(head);
        Ok(avail)
    }

    /// The unread bytes, in place (a second slice when they wrap), and the `data_head` they
    /// end at; nothing is released.
    pub(crate) fn unread(&self) -> Result<(u64, [&[u8]; 2]), PerfError> {
        let head = self
            .atomic(offset_of!(perf_event_mmap_page, data_head))
            .load(Ordering::Acquire);
        let avail = head.wrapping_sub(self.tail);
        if avail == 0 {
            return Ok((head, [&[], &[]]));
        }
        if avail > self.data_size {
            return Err(PerfError::Sys {
                call: "ring read",
                what: format!("perf ring buffer of CPU {}", self.cpu),
                source: io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "data_head {head} is {avail} bytes past data_tail {}, more than the ring's {} bytes",
                        self.tail, self.data_size
                    ),
                ),
            });
        }
        let start = (self.tail & (self.data_size - 1)) as usize;
        let avail = avail as usize;
        let size = self.data_size as usize;
        let first = avail.min(size - start);
        Ok((head, [self.data(start, first), self.data(0, avail - first)]))
    }

    /// Give the bytes up to `head` (from [`Ring::unread`]) back to the kernel.
    pub(crate) fn release(&mut self, head: u64) {
        self.tail = head;
        self.atomic(offset_of!(perf_event_mmap_page, data_tail))
            .store(head, Ordering::Release);
    }

    /// The data-area bytes `[start, start + len)`; the caller keeps them inside
    /// the unread region, which the kernel does not write until we move data_tail.
    fn data(&self, start: usize, len: usize) -> &[u8] {
        debug_assert!(start + len <= self.data_size as usize);
        // SAFETY: data_off + data_size lies inside the mapping (checked in `map`),
        // start + len <= data_size, and the range is unread data which the kernel
        // does not modify before we advance data_tail (after the slice is dropped).
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(self.data_off + start), len) }
    }
}

/// [`Ring::drain`] of every ring in turn: the one loop of every recorder's drain. Returns the
/// bytes drained; on a sink error the rings not yet drained keep their data.
pub(crate) fn drain_all(
    rings: &mut [Ring],
    sink: &mut dyn FnMut(u32, &[u8]) -> io::Result<()>,
) -> Result<usize, PerfError> {
    let mut n = 0;
    for r in rings {
        n += r.drain(sink)?;
    }
    Ok(n)
}

/// The rings of a recorder that opens its events CPU by CPU, and the events: the first event
/// opened on a CPU maps that CPU's ring, the CPU's others send their records to it. The one
/// way irq, switch and wake-up recorders hold their rings.
pub(crate) struct CpuRings {
    // Rings are unmapped before their descriptors close.
    rings: Vec<Ring>,
    fds: Vec<OwnedFd>,
    /// The ring-owning event of the CPU being opened (an index into `fds`).
    leader: Option<usize>,
    pages: usize,
}

impl CpuRings {
    /// No rings yet; each will have `pages` data pages, which must be a power of two.
    pub(crate) fn new(pages: usize) -> Result<CpuRings, PerfError> {
        if !pages.is_power_of_two() {
            return Err(PerfError::InvalidConfig(format!(
                "ring pages must be a power of two, not {pages}"
            )));
        }
        Ok(CpuRings {
            rings: Vec::new(),
            fds: Vec::new(),
            leader: None,
            pages,
        })
    }

    /// Add `fd`, an event opened on `cpu`: the first since the CPU changed maps a ring, a
    /// later one of the same CPU writes into that ring; `what` names the event if that fails.
    pub(crate) fn add(
        &mut self,
        fd: OwnedFd,
        cpu: u32,
        what: impl FnOnce() -> String,
    ) -> Result<(), PerfError> {
        match self.leader {
            Some(l) if self.rings.last().is_some_and(|r| r.cpu() == cpu) => {
                sys::ioc_set_output(&fd, &self.fds[l]).map_err(|e| PerfError::Sys {
                    call: "ioctl(PERF_EVENT_IOC_SET_OUTPUT)",
                    what: what(),
                    source: e,
                })?
            }
            _ => {
                self.rings.push(Ring::map(fd.as_raw_fd(), cpu, self.pages)?);
                self.leader = Some(self.fds.len());
            }
        }
        self.fds.push(fd);
        Ok(())
    }

    /// [`drain_all`] of the rings.
    pub(crate) fn drain(
        &mut self,
        sink: &mut dyn FnMut(u32, &[u8]) -> io::Result<()>,
    ) -> Result<usize, PerfError> {
        drain_all(&mut self.rings, sink)
    }
}
