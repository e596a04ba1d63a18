//! Number, size, time and clock formatting shared by the monitor renderers.

/// Bytes the way top prints them: plain up to 99999 KiB-ish, then `12.3m`, `1.2g`.
pub fn bytes(b: u64) -> String {
    let k = b as f64 / 1024.0;
    if k < 100_000.0 {
        format!("{}k", b.div_ceil(1024))
    } else if k < 100_000.0 * 1024.0 {
        format!("{:.1}m", k / 1024.0)
    } else {
        format!("{:.1}g", k / 1024.0 / 1024.0)
    }
}

/// A byte count in binary units for reading: `512 B`, `1.5 KiB`, `23.5 GiB`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// A byte rate per second, compact (`0`, `512`, `12.3k`, `4.5m`).
pub fn rate_bytes(r: Option<f64>) -> String {
    match r {
        None => "-".into(),
        Some(r) if r < 1024.0 => format!("{r:.0}"),
        Some(r) if r < 1024.0 * 1024.0 => format!("{:.1}k", r / 1024.0),
        Some(r) => format!("{:.1}m", r / 1024.0 / 1024.0),
    }
}

/// A count rate per second (`-` when unknown).
pub fn rate(r: Option<f64>) -> String {
    match r {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(r) if r < 10.0 => format!("{r:.1}"),
        Some(r) => format!("{r:.0}"),
    }
}

/// Percent with one decimal (`-` when unknown).
pub fn pct(p: Option<f64>) -> String {
    p.map_or_else(|| "-".into(), |p| format!("{p:.1}"))
}

/// CPU time as `M:SS.cc` (top's TIME+), switching to `H:MM:SS` past 100 minutes.
pub fn cpu_time(ms: u64) -> String {
    let cs = ms / 10;
    let mins = cs / 6000;
    if mins < 100 {
        format!("{}:{:02}.{:02}", mins, (cs / 100) % 60, cs % 100)
    } else {
        format!("{}:{:02}:{:02}", mins / 60, mins % 60, (cs / 100) % 60)
    }
}

/// Time of day `HH:MM:SS` for a Unix time and UTC offset.
pub fn clock(wall_s: i64, offset_s: i32) -> String {
    let t = (wall_s + offset_s as i64).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60)
}

/// Uptime the way `uptime` prints it: `3 days,  2:01`, ` 2:01`, `5 min`.
pub fn uptime(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    let (days, h, m) = (s / 86_400, (s / 3600) % 24, (s / 60) % 60);
    let day = match days {
        0 => String::new(),
        1 => "1 day, ".into(),
        d => format!("{d} days, "),
    };
    if h == 0 {
        format!("{day}{m} min")
    } else {
        format!("{day}{h:2}:{m:02}")
    }
}

/// Truncate or pad `s` to exactly `w` characters (left-aligned).
pub fn fit_left(s: &str, w: usize) -> String {
    let mut out: String = s.chars().take(w).collect();
    let n = out.chars().count();
    out.extend(std::iter::repeat_n(' ', w - n));
    out
}

/// Right-align `s` in `w` characters (never truncates numbers).
pub fn fit_right(s: &str, w: usize) -> String {
    format!("{s:>w$}")
}

/// Cut a line to at most `w` characters.
pub fn clip(s: &str, w: usize) -> String {
    s.chars().take(w).collect()
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn human_bytes_uses_binary_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(25_276_502_016), "23.5 GiB");
        assert_eq!(human_bytes(u64::MAX), "16.0 EiB");
    }
}
