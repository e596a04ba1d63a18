//! Tasks that ended between two snapshots, from the kernel's per-task exit accounting
//! (taskstats, over generic netlink), so `hood top` and the monitor store account for
//! processes that started and ended between two refreshes.
//!
//! Why taskstats: at every task's exit the kernel sends each registered listener the task's
//! whole-life totals (user and kernel time in µs, context switches, I/O, name, pid, parent,
//! start time) — exactly what a refresh would have read from /proc had the task lived. Other
//! ways were weighed: BSD process accounting (`acct(2)`) also has the totals, but there is one
//! accounting file for the whole system (it would take it from psacct or atop), the kernel
//! keeps writing it when hood is killed, and its times are 13-bit floats of clock ticks; the
//! netlink process connector's exit event has no CPU time; fork/exit tracepoints have no CPU
//! time either and need tracefs or perf events per CPU. Taskstats listeners do not disturb one
//! another, and the registration ends with hood's socket however hood ends. It needs
//! `CAP_NET_ADMIN` (root) and a kernel with `CONFIG_TASKSTATS`.
//!
//! Cost: one message (about 450 bytes) per ended task, queued on hood's socket and read at the
//! next snapshot; nothing at all while no task ends. The socket's buffer is raised (as root,
//! beyond `rmem_max`) so a few seconds of a fork storm fit; what does not fit is counted as
//! overruns and said.
//!
//! Every message is checked where it is read: lengths against the bytes received, attribute
//! lengths against their message, the statistics against the fields read.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::time::Duration;

use hood_monitor::{CtxSwitches, ExitRaw, ExitsRaw, IoCounters};
use rustix::event::{poll, PollFd, PollFlags};
use rustix::io::Errno;
use rustix::net::netlink::SocketAddrNetlink;
use rustix::net::{
    bind, recv, send, socket_with, AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType,
};

const NLMSG_HDRLEN: usize = 16;
const GENL_HDRLEN: usize = 4;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const TASKSTATS_CMD_GET: u8 = 1;
const TASKSTATS_CMD_NEW: u8 = 2;
const TASKSTATS_CMD_ATTR_REGISTER_CPUMASK: u16 = 3;
const TASKSTATS_TYPE_STATS: u16 = 3;
const TASKSTATS_TYPE_AGGR_PID: u16 = 4;
/// Attribute type without the nested and byte-order flags.
const NLA_TYPE_MASK: u16 = 0x3fff;

/// The receive buffer asked for: a few seconds of a storm of thousands of exits per second.
const RCVBUF: usize = 16 << 20;
/// Reports kept per snapshot; more are counted as dropped (bounded memory).
const MAX_EXITS: usize = 200_000;
/// Processes whose ended threads are summed (see [`ExitListener::drain`]); beyond it, only
/// those of processes still alive are kept.
const MAX_GROUPS: usize = 65_536;
/// Longest wait for the kernel's answer while setting up.
const SETUP_WAIT: Duration = Duration::from_secs(2);

/// Offsets in `struct taskstats` (linux/taskstats.h; fields are only ever appended).
mod ts {
    pub const VERSION: usize = 0;
    /// `ac_flag`: `AGROUP` marks the last task of a thread group (version 12 on).
    pub const FLAG: usize = 8;
    pub const AGROUP: u8 = 0x20;
    pub const NICE: usize = 9;
    /// `cpu_run_virtual_total`: the scheduler's `sum_exec_runtime`, ns.
    pub const RUNTIME: usize = 72;
    pub const COMM: usize = 80;
    pub const COMM_LEN: usize = 32;
    pub const UID: usize = 120;
    pub const PID: usize = 128;
    pub const PPID: usize = 132;
    pub const BTIME: usize = 136;
    pub const ETIME: usize = 144;
    pub const UTIME: usize = 152;
    pub const STIME: usize = 160;
    pub const READ_CHAR: usize = 216;
    pub const WRITE_CHAR: usize = 224;
    pub const READ_SYSCALLS: usize = 232;
    pub const WRITE_SYSCALLS: usize = 240;
    pub const READ_BYTES: usize = 248;
    pub const WRITE_BYTES: usize = 256;
    pub const NVCSW: usize = 272;
    pub const NIVCSW: usize = 280;
    /// Version 12 (Linux 6.0) added the thread group id.
    pub const TGID: usize = 368;
    pub const TGID_VERSION: u16 = 12;
    /// Everything up to the context switches must be there.
    pub const MIN_LEN: usize = NIVCSW + 8;
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The netlink attributes in `b`: (type without flags, payload). Stops at the first one whose
/// length does not fit.
fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = usize::from(u16_at(b, 0)?);
        let kind = u16_at(b, 2)? & NLA_TYPE_MASK;
        if len < 4 || len > b.len() {
            return None;
        }
        let payload = &b[4..len];
        b = b.get(len.next_multiple_of(4)..).unwrap_or(&[]);
        Some((kind, payload))
    })
}

/// The netlink messages in one datagram: (type, flags-free payload after the header).
fn messages(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = u32_at(b, 0)? as usize;
        let kind = u16_at(b, 4)?;
        if len < NLMSG_HDRLEN || len > b.len() {
            return None;
        }
        let payload = &b[NLMSG_HDRLEN..len];
        b = b.get(len.next_multiple_of(4)..).unwrap_or(&[]);
        Some((kind, payload))
    })
}

/// One request: netlink header, generic netlink header, one attribute.
fn request(family: u16, flags: u16, cmd: u8, attr: u16, value: &[u8]) -> Vec<u8> {
    let attr_len = 4 + value.len();
    let len = NLMSG_HDRLEN + GENL_HDRLEN + attr_len.next_multiple_of(4);
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&family.to_ne_bytes());
    m.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
    m.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    m.extend_from_slice(&0u32.to_ne_bytes()); // port: the kernel
    m.extend_from_slice(&[cmd, 1, 0, 0]);
    m.extend_from_slice(&(attr_len as u16).to_ne_bytes());
    m.extend_from_slice(&attr.to_ne_bytes());
    m.extend_from_slice(value);
    m.resize(len, 0);
    m
}

/// One task's report from the `struct taskstats` in `b`; `None` when too short to hold it.
pub fn parse_taskstats(b: &[u8]) -> Option<ExitRaw> {
    if b.len() < ts::MIN_LEN {
        return None;
    }
    let version = u16_at(b, ts::VERSION)?;
    let pid = u32_at(b, ts::PID)?;
    let tgid = match version >= ts::TGID_VERSION {
        true => u32_at(b, ts::TGID).filter(|&t| t != 0).unwrap_or(pid),
        false => pid,
    };
    let comm = &b[ts::COMM..ts::COMM + ts::COMM_LEN];
    let comm = &comm[..comm.iter().position(|&c| c == 0).unwrap_or(comm.len())];
    Some(ExitRaw {
        pid,
        tgid,
        ppid: u32_at(b, ts::PPID)?,
        name: String::from_utf8_lossy(comm).into_owned(),
        uid: u32_at(b, ts::UID)?,
        user: None,
        start_s: u64::from(u32_at(b, ts::BTIME)?),
        elapsed_us: u64_at(b, ts::ETIME)?,
        utime_us: u64_at(b, ts::UTIME)?,
        stime_us: u64_at(b, ts::STIME)?,
        runtime_ns: u64_at(b, ts::RUNTIME)?,
        nice: i64::from(b[ts::NICE] as i8),
        ctx: CtxSwitches {
            voluntary: u64_at(b, ts::NVCSW)?,
            involuntary: u64_at(b, ts::NIVCSW)?,
        },
        io: IoCounters {
            rchar: u64_at(b, ts::READ_CHAR)?,
            wchar: u64_at(b, ts::WRITE_CHAR)?,
            syscr: u64_at(b, ts::READ_SYSCALLS)?,
            syscw: u64_at(b, ts::WRITE_SYSCALLS)?,
            read_bytes: u64_at(b, ts::READ_BYTES)?,
            write_bytes: u64_at(b, ts::WRITE_BYTES)?,
        },
        group_end: version < ts::TGID_VERSION || b[ts::FLAG] & ts::AGROUP != 0,
        earlier_threads: false,
    })
}

/// The per-task reports (`TASKSTATS_TYPE_AGGR_PID`) of one taskstats message payload (after
/// the netlink header). Thread-group totals (`AGGR_TGID`) hold only delay accounting and are
/// skipped: a process is the sum of its threads' reports.
pub fn parse_exit_message(payload: &[u8], out: &mut Vec<ExitRaw>) {
    if payload.len() < GENL_HDRLEN || payload[0] != TASKSTATS_CMD_NEW {
        return;
    }
    for (kind, nested) in attrs(&payload[GENL_HDRLEN..]) {
        if kind != TASKSTATS_TYPE_AGGR_PID {
            continue;
        }
        for (k, v) in attrs(nested) {
            if k == TASKSTATS_TYPE_STATS {
                if let Some(e) = parse_taskstats(v) {
                    out.push(e);
                }
            }
        }
    }
}

/// A registered taskstats listener for every CPU.
#[derive(Debug)]
pub struct ExitListener {
    fd: OwnedFd,
    family: u16,
    buf: Vec<u8>,
    /// Per process still running: its threads that ended at earlier drains, summed.
    threads: EndedThreads,
}

/// The threads of running processes that ended, summed per process until the process ends:
/// a process's last report then comes with the sum of the others (`earlier_threads`), so the
/// process's whole-life time is known (see `hood_monitor::ExitRaw::earlier_threads`).
#[derive(Debug, Default)]
pub struct EndedThreads {
    /// tgid → (the sum, absent from the last [`EndedThreads::retain`]'s list of processes).
    sums: HashMap<u32, (ExitRaw, bool)>,
}

impl EndedThreads {
    /// Take one drain's reports (in the kernel's order): a process's ended thread is added to
    /// its sum after the drain; a process's last report takes the sum of the threads that
    /// ended at earlier drains, added to `tasks` as one `earlier_threads` report.
    pub fn take(&mut self, tasks: &mut Vec<ExitRaw>) {
        let mut now: HashMap<u32, ExitRaw> = HashMap::new();
        let mut ended = Vec::new();
        for e in tasks.iter() {
            if e.group_end {
                if let Some((sum, _)) = self.sums.remove(&e.tgid) {
                    ended.push(sum);
                }
                now.remove(&e.tgid);
            } else {
                let sum = now.entry(e.tgid).or_insert_with(|| ExitRaw {
                    pid: e.tgid,
                    tgid: e.tgid,
                    name: e.name.clone(),
                    earlier_threads: true,
                    ..Default::default()
                });
                add(sum, e);
            }
        }
        tasks.extend(ended);
        for (tgid, e) in now {
            let room = self.sums.len() < MAX_GROUPS;
            match self.sums.get_mut(&tgid) {
                Some((sum, _)) => add(sum, &e),
                None if room => {
                    self.sums.insert(tgid, (e, false));
                }
                None => {}
            }
        }
    }

    /// Start the sum of process `tgid` with threads that ended before the listener began
    /// (user and kernel µs: the process's /proc times less its live threads'); it replaces
    /// what the first drains summed, which those times hold already.
    pub fn seed(&mut self, tgid: u32, user_us: u64, kernel_us: u64) {
        let sum = ExitRaw {
            pid: tgid,
            tgid,
            utime_us: user_us,
            stime_us: kernel_us,
            runtime_ns: user_us.saturating_add(kernel_us).saturating_mul(1000),
            earlier_threads: true,
            ..Default::default()
        };
        if self.sums.len() < MAX_GROUPS || self.sums.contains_key(&tgid) {
            self.sums.insert(tgid, (sum, false));
        }
    }

    /// Forget the processes absent from `alive` at two calls in a row (their last report was
    /// lost, or their threads ended just before they did and the last report is still due).
    pub fn retain(&mut self, alive: &dyn Fn(u32) -> bool) {
        self.sums.retain(|&tgid, (_, missing)| {
            if alive(tgid) {
                *missing = false;
                true
            } else {
                !std::mem::replace(missing, true)
            }
        });
    }
}

/// Add task `e`'s times and counters to `sum`.
fn add(sum: &mut ExitRaw, e: &ExitRaw) {
    sum.utime_us = sum.utime_us.saturating_add(e.utime_us);
    sum.stime_us = sum.stime_us.saturating_add(e.stime_us);
    sum.runtime_ns = sum.runtime_ns.saturating_add(e.runtime_ns);
    sum.ctx.voluntary = sum.ctx.voluntary.saturating_add(e.ctx.voluntary);
    sum.ctx.involuntary = sum.ctx.involuntary.saturating_add(e.ctx.involuntary);
    let (a, b) = (&mut sum.io, &e.io);
    a.rchar = a.rchar.saturating_add(b.rchar);
    a.wchar = a.wchar.saturating_add(b.wchar);
    a.syscr = a.syscr.saturating_add(b.syscr);
    a.syscw = a.syscw.saturating_add(b.syscw);
    a.read_bytes = a.read_bytes.saturating_add(b.read_bytes);
    a.write_bytes = a.write_bytes.saturating_add(b.write_bytes);
}

fn why(doing: &str, e: Errno) -> String {
    match e {
        Errno::PERM | Errno::ACCESS => format!(
            "processes that ended between refreshes are not shown: {doing} needs root \
             (CAP_NET_ADMIN); run hood as root to see them"
        ),
        e => format!("processes that ended between refreshes are not shown: {doing}: {e}"),
    }
}

impl ExitListener {
    /// Register for the exit reports of every possible CPU (`cpus`: the kernel's list, as in
    /// `/sys/devices/system/cpu/possible`). The error says why in words for the user.
    pub fn start(cpus: &str) -> Result<ExitListener, String> {
        let fd = socket_with(
            AddressFamily::NETLINK,
            SocketType::RAW,
            SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
            Some(rustix::net::netlink::GENERIC),
        )
        .map_err(|e| why("opening a generic netlink socket", e))?;
        bind(&fd, &SocketAddrNetlink::new(0, 0))
            .map_err(|e| why("binding a generic netlink socket", e))?;
        // Root may go beyond net.core.rmem_max; others keep what they are allowed.
        if rustix::net::sockopt::set_socket_recv_buffer_size_force(&fd, RCVBUF).is_err() {
            let _ = rustix::net::sockopt::set_socket_recv_buffer_size(&fd, RCVBUF);
        }
        let mut l = ExitListener {
            fd,
            family: 0,
            buf: vec![0; 64 << 10],
            threads: EndedThreads::default(),
        };
        l.family = l.family_id()?;
        let mask = format!("{}\0", cpus.trim());
        let req = request(
            l.family,
            NLM_F_ACK,
            TASKSTATS_CMD_GET,
            TASKSTATS_CMD_ATTR_REGISTER_CPUMASK,
            mask.as_bytes(),
        );
        send(&l.fd, &req, SendFlags::empty())
            .map_err(|e| why("registering for taskstats exit reports", e))?;
        l.answer(|kind, p| (kind == NLMSG_ERROR).then(|| ack(p)))?
            .map_err(|e| why("registering for taskstats exit reports", e))?;
        Ok(l)
    }

    /// The taskstats family's id from the generic netlink controller.
    fn family_id(&mut self) -> Result<u16, String> {
        let req = request(
            GENL_ID_CTRL,
            0,
            CTRL_CMD_GETFAMILY,
            CTRL_ATTR_FAMILY_NAME,
            b"TASKSTATS\0",
        );
        send(&self.fd, &req, SendFlags::empty())
            .map_err(|e| why("asking the kernel for taskstats", e))?;
        let id = self.answer(|kind, p| match kind {
            NLMSG_ERROR => match ack(p) {
                Ok(()) => None,
                Err(e) => Some(Err(e)),
            },
            GENL_ID_CTRL => Some(
                attrs(p.get(GENL_HDRLEN..).unwrap_or(&[]))
                    .find(|(k, _)| *k == CTRL_ATTR_FAMILY_ID)
                    .and_then(|(_, v)| u16_at(v, 0))
                    .ok_or(Errno::PROTO),
            ),
            _ => None,
        })?;
        id.map_err(|e| match e {
            Errno::NOENT => "processes that ended between refreshes are not shown: this \
                             kernel has no taskstats (it is built without CONFIG_TASKSTATS)"
                .to_string(),
            e => why("asking the kernel for taskstats", e),
        })
    }

    /// Wait (bounded) for the first message `pick` takes; exit reports that arrive meanwhile
    /// are not expected yet (nothing is registered) and are skipped.
    fn answer<T>(&mut self, mut pick: impl FnMut(u16, &[u8]) -> Option<T>) -> Result<T, String> {
        let deadline = std::time::Instant::now() + SETUP_WAIT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(why(
                    "waiting for the kernel's taskstats answer",
                    Errno::TIMEDOUT,
                ));
            }
            let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
            let ts = rustix::time::Timespec {
                tv_sec: left.as_secs() as i64,
                tv_nsec: i64::from(left.subsec_nanos()),
            };
            match poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => return Err(why("waiting for the kernel's taskstats answer", e)),
            }
            let n = match recv(&self.fd, &mut self.buf[..], RecvFlags::empty()) {
                Ok((n, _)) => n,
                Err(Errno::AGAIN | Errno::INTR) => continue,
                Err(e) => return Err(why("reading the kernel's taskstats answer", e)),
            };
            let n = n.min(self.buf.len());
            for (kind, p) in messages(&self.buf[..n]) {
                if let Some(t) = pick(kind, p) {
                    return Ok(t);
                }
            }
        }
    }

    /// Every exit report queued since the last call (without waiting).
    pub fn drain(&mut self) -> ExitsRaw {
        let mut out = ExitsRaw::default();
        let mut got = Vec::new();
        loop {
            match recv(&self.fd, &mut self.buf[..], RecvFlags::empty()) {
                Ok((n, full)) => {
                    if full > n {
                        // Cut to the buffer: the report is incomplete.
                        out.dropped += 1;
                        continue;
                    }
                    let n = n.min(self.buf.len());
                    for (kind, p) in messages(&self.buf[..n]) {
                        if kind == self.family {
                            let before = got.len();
                            parse_exit_message(p, &mut got);
                            if got.len() > MAX_EXITS {
                                out.dropped += (got.len() - before.max(MAX_EXITS)) as u64;
                                got.truncate(MAX_EXITS);
                            }
                        }
                    }
                }
                Err(Errno::NOBUFS) => out.overruns += 1,
                Err(Errno::INTR) => {}
                // AGAIN: all read. Anything else: the socket is unusable; what was read stays.
                Err(_) => break,
            }
        }
        self.threads.take(&mut got);
        out.tasks = got;
        out
    }

    /// See [`EndedThreads::seed`].
    pub fn seed(&mut self, tgid: u32, user_us: u64, kernel_us: u64) {
        self.threads.seed(tgid, user_us, kernel_us);
    }

    /// After a snapshot: `alive` says which processes it holds (see [`EndedThreads::retain`]).
    pub fn retain(&mut self, alive: &dyn Fn(u32) -> bool) {
        self.threads.retain(alive);
    }
}

/// `Ok` for an acknowledgement, the error of an error message (payload of `NLMSG_ERROR`).
fn ack(p: &[u8]) -> Result<(), Errno> {
    match u32_at(p, 0).map(|e| e as i32) {
        Some(0) => Ok(()),
        Some(e) if e < 0 => Err(Errno::from_raw_os_error(-e)),
        _ => Err(Errno::PROTO),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(version: u16, pid: u32, tgid: u32, comm: &[u8], utime: u64) -> Vec<u8> {
        let mut b = vec![0u8; 400];
        b[..2].copy_from_slice(&version.to_ne_bytes());
        b[ts::COMM..ts::COMM + comm.len()].copy_from_slice(comm);
        b[ts::PID..ts::PID + 4].copy_from_slice(&pid.to_ne_bytes());
        b[ts::TGID..ts::TGID + 4].copy_from_slice(&tgid.to_ne_bytes());
        b[ts::UTIME..ts::UTIME + 8].copy_from_slice(&utime.to_ne_bytes());
        b
    }

    fn attr(kind: u16, v: &[u8]) -> Vec<u8> {
        let mut a = ((4 + v.len()) as u16).to_ne_bytes().to_vec();
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(v);
        a.resize(a.len().next_multiple_of(4), 0);
        a
    }

    #[test]
    fn reports_are_read_from_nested_attributes_and_cut_ones_skipped() {
        let mut nested = attr(1, &7u32.to_ne_bytes());
        nested.extend(attr(
            TASKSTATS_TYPE_STATS,
            &stats(14, 7, 5, b"burn", 200_000),
        ));
        let mut payload = vec![TASKSTATS_CMD_NEW, 1, 0, 0];
        payload.extend(attr(6, &[]));
        payload.extend(attr(TASKSTATS_TYPE_AGGR_PID, &nested));
        let mut out = Vec::new();
        parse_exit_message(&payload, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].pid, out[0].tgid), (7, 5));
        assert_eq!(out[0].name, "burn");
        assert_eq!(out[0].utime_us, 200_000);

        // Before version 12 there is no thread group id: the task is its own process.
        assert_eq!(parse_taskstats(&stats(11, 7, 5, b"x", 0)).unwrap().tgid, 7);
        // Too short, or an attribute longer than its message: nothing, no panic.
        assert!(parse_taskstats(&[0; 100]).is_none());
        for cut in 0..payload.len() {
            let mut out = Vec::new();
            parse_exit_message(&payload[..cut], &mut out);
            assert!(out.is_empty());
        }
        let mut liar = payload.clone();
        liar[8..10].copy_from_slice(&u16::MAX.to_ne_bytes());
        let mut out = Vec::new();
        parse_exit_message(&liar, &mut out);
        assert!(out.is_empty());
    }

    fn task(pid: u32, tgid: u32, utime_us: u64, group_end: bool) -> ExitRaw {
        ExitRaw {
            pid,
            tgid,
            utime_us,
            runtime_ns: utime_us * 1000,
            group_end,
            ..Default::default()
        }
    }

    #[test]
    fn a_process_that_ends_brings_the_sum_of_its_threads_that_ended_at_earlier_drains() {
        // The kernel's flag: set on the group's last report, and on every report of a kernel
        // that names no thread groups.
        let mut b = stats(14, 7, 5, b"x", 0);
        assert!(!parse_taskstats(&b).unwrap().group_end);
        b[ts::FLAG] = ts::AGROUP;
        assert!(parse_taskstats(&b).unwrap().group_end);
        assert!(
            parse_taskstats(&stats(11, 7, 7, b"x", 0))
                .unwrap()
                .group_end
        );

        let mut t = EndedThreads::default();
        // Drain 1: two threads of 5 end, and a single-threaded process 8.
        let mut d = vec![
            task(6, 5, 200, false),
            task(7, 5, 300, false),
            task(8, 8, 50, true),
        ];
        t.take(&mut d);
        assert_eq!(d.len(), 3, "nothing added: {d:?}");
        // Drain 2: another thread ends with the process: the sum of the first two comes too,
        // the thread of this drain is not in it (it is reported itself).
        let mut d = vec![task(9, 5, 100, false), task(5, 5, 10, true)];
        t.take(&mut d);
        assert_eq!(d.len(), 3);
        let sum = &d[2];
        assert!(sum.earlier_threads && !sum.group_end);
        assert_eq!(
            (sum.pid, sum.tgid, sum.utime_us, sum.runtime_ns),
            (5, 5, 500, 500_000)
        );
        // Nothing is left for 5; a thread of 11 is forgotten once 11 is gone at two snapshots.
        assert!(t.sums.is_empty());
        t.take(&mut vec![task(12, 11, 100, false)]);
        t.retain(&|_| false);
        assert_eq!(t.sums.len(), 1);
        t.retain(&|_| false);
        assert!(t.sums.is_empty());
    }
}
