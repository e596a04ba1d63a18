//! Points in time as users write them (`10:42`, `3h ago`, `2026-11-26 10:42`), for replaying a
//! monitor store, and the date-and-time text shown for them. Pure: the caller gives "now" and
//! the time zone offset.

/// Seconds in each unit a relative time may use.
const UNITS: &[(&str, i64)] = &[
    ("s", 1),
    ("sec", 1),
    ("secs", 1),
    ("second", 1),
    ("seconds", 1),
    ("m", 60),
    ("min", 60),
    ("mins", 60),
    ("minute", 60),
    ("minutes", 60),
    ("h", 3600),
    ("hour", 3600),
    ("hours", 3600),
    ("d", 86_400),
    ("day", 86_400),
    ("days", 86_400),
    ("w", 7 * 86_400),
    ("week", 7 * 86_400),
    ("weeks", 7 * 86_400),
];

/// The forms [`parse_time`] accepts, for messages.
pub const TIME_FORMS: &str = "HH:MM[:SS] (the last such time), YYYY-MM-DD[ HH:MM[:SS]], \
                              N{s,m,h,d,w} ago (e.g. 3h ago), now, or @UNIX-SECONDS";

/// Parse `text` into seconds since the Unix epoch. `now_s` is the current time and `offset_s`
/// the time zone's offset east of UTC that clock times and dates are read in. A clock time
/// alone is the last such time at or before `now_s` (at 09:00, `10:42` is yesterday's).
pub fn parse_time(text: &str, now_s: i64, offset_s: i32) -> Result<i64, String> {
    let t = text.trim();
    let bad = || format!("cannot read the time {t:?}: use {TIME_FORMS}");
    if t.eq_ignore_ascii_case("now") {
        return Ok(now_s);
    }
    if let Some(n) = t.strip_prefix('@') {
        return n.parse::<i64>().map_err(|_| bad());
    }
    if let Some(rel) = t.strip_suffix("ago") {
        let rel = rel.trim();
        let split = rel.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let (num, unit) = rel.split_at(split);
        let n: i64 = num.parse().map_err(|_| bad())?;
        let unit = unit.trim();
        let secs = UNITS
            .iter()
            .find(|(u, _)| *u == unit)
            .map(|(_, s)| *s)
            .ok_or_else(bad)?;
        return n
            .checked_mul(secs)
            .and_then(|d| now_s.checked_sub(d))
            .ok_or_else(bad);
    }
    let off = offset_s as i64;
    let (date, clock) = match t.split_once([' ', 'T']) {
        Some((d, c)) => (Some(d), Some(c.trim())),
        None if t.contains('-') => (Some(t), None),
        None => (None, Some(t)),
    };
    let secs_of_day = match clock {
        Some(c) => clock_secs(c).ok_or_else(bad)?,
        None => 0,
    };
    match date {
        Some(d) => {
            let days = date_days(d).ok_or_else(bad)?;
            Ok(days * 86_400 + secs_of_day - off)
        }
        None => {
            let local_now = now_s + off;
            let today = local_now.div_euclid(86_400) * 86_400;
            let mut at = today + secs_of_day;
            if at > local_now {
                at -= 86_400;
            }
            Ok(at - off)
        }
    }
}

/// `HH:MM` or `HH:MM:SS` as seconds into the day.
fn clock_secs(c: &str) -> Option<i64> {
    let parts: Vec<&str> = c.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let num = |s: &str, max: i64| -> Option<i64> {
        if s.is_empty() || s.len() > 2 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok().filter(|v| *v <= max)
    };
    let h = num(parts[0], 23)?;
    let m = num(parts[1], 59)?;
    let s = match parts.get(2) {
        Some(s) => num(s, 60)?,
        None => 0,
    };
    Some(h * 3600 + m * 60 + s)
}

/// `YYYY-MM-DD` as days since 1970-01-01.
fn date_days(d: &str) -> Option<i64> {
    let mut it = d.split('-');
    let y: i64 = it.next()?.parse().ok()?;
    let m: i64 = it.next()?.parse().ok()?;
    let day: i64 = it.next()?.parse().ok()?;
    if it.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    if !(1970..=9999).contains(&y) {
        return None;
    }
    Some(days_from_civil(y, m, day))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `YYYY-MM-DD HH:MM:SS` of `unix_s` in the zone `offset_s` east of UTC.
pub fn format_time(unix_s: i64, offset_s: i32) -> String {
    let t = unix_s + offset_s as i64;
    let (y, m, d) = civil_from_days(t.div_euclid(86_400));
    let s = t.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        s / 3600,
        (s / 60) % 60,
        s % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2026-11-26 14:22:05 UTC
    const NOW: i64 = 1_795_702_925;

    #[test]
    fn dates_round_trip() {
        assert_eq!(format_time(NOW, 0), "2026-11-26 14:22:05");
        assert_eq!(format_time(0, 0), "1970-01-01 00:00:00");
        assert_eq!(format_time(NOW, 3600), "2026-11-26 15:22:05");
        assert_eq!(parse_time("2026-11-26 14:22:05", 0, 0), Ok(NOW));
        assert_eq!(parse_time("2026-11-26T14:22:05", 0, 0), Ok(NOW));
        assert_eq!(parse_time("2026-11-26 15:22:05", 0, 3600), Ok(NOW));
        assert_eq!(
            parse_time("2026-11-26", 0, 0),
            Ok(NOW - 14 * 3600 - 22 * 60 - 5)
        );
        for z in [-86_400 * 400, -1, 0, 59, 86_399, 86_400, NOW, 4_102_444_800] {
            let text = format_time(z, 0);
            if z >= 0 {
                assert_eq!(parse_time(&text, NOW, 0), Ok(z), "{text}");
            }
        }
    }

    #[test]
    fn clock_times_are_the_last_such_time() {
        assert_eq!(parse_time("14:22", NOW, 0), Ok(NOW - 5));
        assert_eq!(parse_time("14:22:05", NOW, 0), Ok(NOW));
        // Later than now today: yesterday's.
        assert_eq!(parse_time("14:23", NOW, 0), Ok(NOW - 5 + 60 - 86_400));
        assert_eq!(
            parse_time("00:00", NOW, 0),
            Ok(NOW - (14 * 3600 + 22 * 60 + 5))
        );
    }

    #[test]
    fn relative_times() {
        assert_eq!(parse_time("3h ago", NOW, 0), Ok(NOW - 3 * 3600));
        assert_eq!(parse_time("3 hours ago", NOW, 0), Ok(NOW - 3 * 3600));
        assert_eq!(parse_time("90s ago", NOW, 0), Ok(NOW - 90));
        assert_eq!(parse_time("2d ago", NOW, 0), Ok(NOW - 2 * 86_400));
        assert_eq!(parse_time("now", NOW, 0), Ok(NOW));
        assert_eq!(parse_time("@12345", NOW, 0), Ok(12_345));
    }

    #[test]
    fn bad_times_say_what_is_accepted() {
        for bad in [
            "",
            "ago",
            "3x ago",
            "25:00",
            "10:61",
            "1:2:3:4",
            "2026-13-01",
            "yesterday",
            "99999999999999999999h ago",
            "10:4a",
            "-5h ago",
        ] {
            let e = parse_time(bad, NOW, 0).unwrap_err();
            assert!(e.contains("HH:MM"), "{bad}: {e}");
        }
    }
}
