//! Parsers of /proc text. All take bytes or text of untrusted content and never panic: a
//! malformed line is skipped, a malformed file gives `None` or a default.

use hood_monitor::{
    CpuRaw, CpuTicks, CtxSwitches, DiskRaw, IoCounters, IrqLine, LoadAvg, MemInfo, NetRaw, PsiLine,
    PsiRaw, TaskRaw,
};

/// Unsigned decimal (an optional `+`, then digits); `None` when empty, not a number or too big.
fn dec_u64(tok: &[u8]) -> Option<u64> {
    let digits = tok.strip_prefix(b"+").unwrap_or(tok);
    if digits.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(v)
}

/// Signed decimal (an optional sign, then digits).
fn dec_i64(tok: &[u8]) -> Option<i64> {
    match tok.strip_prefix(b"-") {
        Some(d) if !d.starts_with(b"+") => {
            let v = dec_u64(d)?;
            if v == 1 << 63 {
                Some(i64::MIN)
            } else {
                i64::try_from(v).ok().map(|v| -v)
            }
        }
        Some(_) => None,
        None => i64::try_from(dec_u64(tok)?).ok(),
    }
}

fn dec_u32(tok: &[u8]) -> Option<u32> {
    u32::try_from(dec_u64(tok)?).ok()
}

/// Parse `/proc/PID/stat` (or `/proc/PID/task/TID/stat`) into `t`'s stat fields.
///
/// The name is taken between the first `(` and the *last* `)`, so names containing spaces and
/// parentheses parse right. Returns `None` when the line is malformed. A hand-written byte
/// scanner: this runs once per task per refresh. `t.name` keeps its buffer when the name is
/// unchanged.
pub fn parse_stat(buf: &[u8], t: &mut TaskRaw) -> Option<()> {
    let open = buf.iter().position(|&b| b == b'(')?;
    let close = buf.iter().rposition(|&b| b == b')')?;
    if close < open {
        return None;
    }
    let pid = dec_u32(buf[..open].trim_ascii())?;
    let rest = &buf[close + 1..];
    // Anything after the name is ASCII on every kernel; other bytes mean a damaged line.
    if !rest.is_ascii() {
        std::str::from_utf8(rest).ok()?;
    }
    // fields[0] is man-page field 3 (state).
    let mut fields: [&[u8]; 40] = [&[]; 40];
    let mut n = 0;
    for tok in rest
        .split(|b| b.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
    {
        if n == fields.len() {
            break;
        }
        fields[n] = tok;
        n += 1;
    }
    if n < 22 {
        return None;
    }
    let f = |k: usize| fields[k - 3];
    let state = match f(3) {
        [b, ..] if b.is_ascii() => char::from(*b),
        tok => std::str::from_utf8(tok).ok()?.chars().next()?,
    };
    t.pid = pid;
    t.state = state;
    t.ppid = dec_u32(f(4))?;
    t.utime = dec_u64(f(14))?;
    t.stime = dec_u64(f(15))?;
    t.priority = dec_i64(f(18))?;
    t.nice = dec_i64(f(19))?;
    t.num_threads = dec_u32(f(20))?;
    t.start_time = dec_u64(f(22))?;
    t.vsize = dec_u64(f(23))?;
    t.rss_pages = dec_i64(f(24))?.max(0) as u64;
    t.processor = if n >= 37 {
        dec_i64(f(39))
            .and_then(|v| i32::try_from(v).ok())
            .unwrap_or(-1)
    } else {
        -1
    };
    let name = &buf[open + 1..close];
    if t.name.as_bytes() != name {
        t.name.clear();
        t.name.push_str(&String::from_utf8_lossy(name));
    }
    Some(())
}

fn kv_u64(line: &str) -> Option<(&str, u64)> {
    let (k, v) = line.split_once(':')?;
    let v = v.split_ascii_whitespace().next()?.parse().ok()?;
    Some((k.trim(), v))
}

/// Fields of `/proc/PID/status` hood uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatusFields {
    /// Real uid.
    pub uid: Option<u32>,
    /// Owning thread group.
    pub tgid: Option<u32>,
    /// Context switches (both lines present).
    pub ctx: Option<CtxSwitches>,
}

/// Parse `/proc/PID/status`.
pub fn parse_status(text: &str) -> StatusFields {
    let mut out = StatusFields::default();
    let (mut vol, mut invol) = (None, None);
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Uid:") {
            out.uid = rest
                .split_ascii_whitespace()
                .next()
                .and_then(|s| s.parse().ok());
        } else if let Some((k, v)) = kv_u64(line) {
            match k {
                "Tgid" => out.tgid = u32::try_from(v).ok(),
                "voluntary_ctxt_switches" => vol = Some(v),
                "nonvoluntary_ctxt_switches" => invol = Some(v),
                _ => {}
            }
        }
    }
    out.ctx = vol.zip(invol).map(|(voluntary, involuntary)| CtxSwitches {
        voluntary,
        involuntary,
    });
    out
}

/// Parse `/proc/PID/io`. Returns `None` if no known counter is present.
pub fn parse_io(text: &str) -> Option<IoCounters> {
    let mut io = IoCounters::default();
    let mut seen = false;
    for (k, v) in text.lines().filter_map(kv_u64) {
        let slot = match k {
            "rchar" => &mut io.rchar,
            "wchar" => &mut io.wchar,
            "syscr" => &mut io.syscr,
            "syscw" => &mut io.syscw,
            "read_bytes" => &mut io.read_bytes,
            "write_bytes" => &mut io.write_bytes,
            _ => continue,
        };
        *slot = v;
        seen = true;
    }
    seen.then_some(io)
}

/// Parse `/proc/PID/cmdline` (NUL-separated arguments).
pub fn parse_cmdline(buf: &[u8]) -> Vec<String> {
    buf.split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// `/proc/PID/schedstat` (`ns_on_cpu wait_ns times_scheduled`) → (ns on CPU, times
/// scheduled) of the task.
pub fn parse_schedstat(b: &[u8]) -> Option<(u64, u64)> {
    let s = std::str::from_utf8(b).ok()?;
    let mut it = s.split_ascii_whitespace();
    let run = it.next()?.parse().ok()?;
    let _wait = it.next()?;
    let count = it.next()?.parse().ok()?;
    Some((run, count))
}

/// Parse `/proc/meminfo`.
pub fn parse_meminfo(text: &str) -> MemInfo {
    let mut m = MemInfo::default();
    for (k, v) in text.lines().filter_map(kv_u64) {
        match k {
            "MemTotal" => m.total_kb = v,
            "MemFree" => m.free_kb = v,
            "MemAvailable" => m.available_kb = Some(v),
            "Buffers" => m.buffers_kb = v,
            "Cached" => m.cached_kb = v,
            "SReclaimable" => m.sreclaimable_kb = v,
            "SwapTotal" => m.swap_total_kb = v,
            "SwapFree" => m.swap_free_kb = v,
            _ => {}
        }
    }
    m
}

/// Parse `/proc/loadavg` (`0.00 0.01 0.05 1/123 4567`).
pub fn parse_loadavg(text: &str) -> Option<LoadAvg> {
    let mut it = text.split_ascii_whitespace();
    let one = it.next()?.parse().ok()?;
    let five = it.next()?.parse().ok()?;
    let fifteen = it.next()?.parse().ok()?;
    let (r, t) = it.next()?.split_once('/')?;
    Some(LoadAvg {
        one,
        five,
        fifteen,
        runnable: r.parse().ok()?,
        total: t.parse().ok()?,
    })
}

/// Parse `/proc/uptime`: seconds since boot.
pub fn parse_uptime(text: &str) -> Option<f64> {
    text.split_ascii_whitespace().next()?.parse().ok()
}

/// What `/proc/stat` gives.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcStat {
    /// All-CPU line.
    pub total: CpuTicks,
    /// Per-CPU lines.
    pub cpus: Vec<CpuRaw>,
    /// Context switches since boot.
    pub ctxt: u64,
    /// Forks since boot.
    pub processes: u64,
}

fn parse_ticks(rest: &str) -> CpuTicks {
    let mut v = [0u64; 8];
    for (slot, tok) in v.iter_mut().zip(rest.split_ascii_whitespace()) {
        *slot = tok.parse().unwrap_or(0);
    }
    CpuTicks {
        user: v[0],
        nice: v[1],
        system: v[2],
        idle: v[3],
        iowait: v[4],
        irq: v[5],
        softirq: v[6],
        steal: v[7],
    }
}

/// Parse `/proc/stat`.
pub fn parse_proc_stat(text: &str) -> ProcStat {
    let mut s = ProcStat::default();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(char::is_whitespace) else {
            continue;
        };
        if key == "cpu" {
            s.total = parse_ticks(rest);
        } else if let Some(id) = key.strip_prefix("cpu").and_then(|n| n.parse().ok()) {
            s.cpus.push(CpuRaw {
                id,
                ticks: parse_ticks(rest),
                mhz: None,
            });
        } else if key == "ctxt" {
            s.ctxt = rest.trim().parse().unwrap_or(0);
        } else if key == "processes" {
            s.processes = rest.trim().parse().unwrap_or(0);
        }
    }
    s
}

/// Parse `/proc/interrupts` or `/proc/softirqs`: a header naming the CPUs, then one line per
/// interrupt (`ID: count count ... description`). Lines with fewer counts (e.g. `ERR:`) keep
/// what they have.
pub fn parse_irq_table(text: &str) -> Vec<IrqLine> {
    let mut lines = text.lines();
    let ncpus = lines
        .next()
        .map(|h| {
            h.split_ascii_whitespace()
                .filter(|w| w.starts_with("CPU"))
                .count()
        })
        .unwrap_or(0);
    let mut out = Vec::new();
    for line in lines {
        let Some((id, rest)) = line.split_once(':') else {
            continue;
        };
        let id = id.trim();
        if id.is_empty() {
            continue;
        }
        let mut per_cpu = Vec::with_capacity(ncpus);
        let mut rest = rest.trim_start();
        while per_cpu.len() < ncpus {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            match rest[..end].parse::<u64>() {
                Ok(v) => per_cpu.push(v),
                Err(_) => break,
            }
            rest = rest[end..].trim_start();
        }
        out.push(IrqLine {
            id: id.to_string(),
            per_cpu,
            description: rest.split_ascii_whitespace().collect::<Vec<_>>().join(" "),
        });
    }
    out
}

/// Parse `/proc/cpuinfo` into (processor number, MHz) pairs.
pub fn parse_cpuinfo_mhz(text: &str) -> Vec<(u32, f64)> {
    let mut out = Vec::new();
    let mut cur = None;
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        match k.trim() {
            "processor" => cur = v.trim().parse().ok(),
            "cpu MHz" => {
                if let (Some(id), Ok(mhz)) = (cur, v.trim().parse()) {
                    out.push((id, mhz));
                }
            }
            _ => {}
        }
    }
    out
}

/// Parse `/etc/passwd` into (uid, name) pairs.
pub fn parse_passwd(text: &str) -> Vec<(u32, String)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split(':');
            let name = it.next()?;
            let _pw = it.next()?;
            let uid = it.next()?.parse().ok()?;
            (!name.is_empty()).then(|| (uid, name.to_string()))
        })
        .collect()
}

/// Parse `/proc/self/auxv` (native-endian u64 pairs) for (clock ticks per second, page size).
pub fn parse_auxv(buf: &[u8]) -> (Option<u64>, Option<u64>) {
    const AT_PAGESZ: u64 = 6;
    const AT_CLKTCK: u64 = 17;
    let (mut hz, mut page) = (None, None);
    for pair in buf.chunks_exact(16) {
        let k = u64::from_ne_bytes(pair[..8].try_into().unwrap_or_default());
        let v = u64::from_ne_bytes(pair[8..].try_into().unwrap_or_default());
        match k {
            0 => break,
            AT_PAGESZ if v > 0 => page = Some(v),
            AT_CLKTCK if v > 0 => hz = Some(v),
            _ => {}
        }
    }
    (hz, page)
}

/// A `/proc/pressure/*` file: `some avg10=0.00 avg60=0.00 avg300=0.00 total=0` and the same for
/// `full`. Lines that do not parse are left out.
pub fn parse_psi(text: &str) -> PsiRaw {
    let mut out = PsiRaw::default();
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let which = it.next();
        let mut l = PsiLine::default();
        let mut seen = 0;
        for kv in it {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            match k {
                "avg10" => l.avg10 = v.parse().unwrap_or(f64::NAN),
                "avg60" => l.avg60 = v.parse().unwrap_or(f64::NAN),
                "avg300" => l.avg300 = v.parse().unwrap_or(f64::NAN),
                "total" => match v.parse() {
                    Ok(t) => l.total_us = t,
                    Err(_) => continue,
                },
                _ => continue,
            }
            seen += 1;
        }
        let ok = seen == 4 && [l.avg10, l.avg60, l.avg300].iter().all(|a| a.is_finite());
        match which {
            Some("some") if ok => out.some = Some(l),
            Some("full") if ok => out.full = Some(l),
            _ => {}
        }
    }
    out
}

/// `/proc/diskstats`: whole devices and partitions, without loop and ram devices (many, and
/// idle on most machines). Lines with fewer than the 14 classic fields are left out.
pub fn parse_diskstats(text: &str) -> Vec<DiskRaw> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        if f.len() < 14 {
            continue;
        }
        let name = f[2];
        if name.starts_with("loop") || name.starts_with("ram") {
            continue;
        }
        let n = |i: usize| f[i].parse::<u64>().ok();
        let (Some(reads), Some(rs), Some(writes), Some(ws), Some(inf), Some(io)) =
            (n(3), n(5), n(7), n(9), n(11), n(12))
        else {
            continue;
        };
        out.push(DiskRaw {
            name: name.to_string(),
            reads,
            read_sectors: rs,
            writes,
            write_sectors: ws,
            in_flight: inf,
            io_ms: io,
        });
    }
    out
}

/// `/proc/net/dev`: one interface per line after the two header lines.
pub fn parse_net_dev(text: &str) -> Vec<NetRaw> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let f: Vec<u64> = rest
            .split_ascii_whitespace()
            .map_while(|x| x.parse().ok())
            .collect();
        if f.len() < 16 {
            continue;
        }
        out.push(NetRaw {
            name: name.trim().to_string(),
            rx_bytes: f[0],
            rx_packets: f[1],
            rx_errs: f[2],
            rx_drop: f[3],
            tx_bytes: f[8],
            tx_packets: f[9],
            tx_errs: f[10],
            tx_drop: f[11],
        });
    }
    out
}
