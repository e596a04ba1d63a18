//! clap value parsers of the number options: each value is checked where it is parsed, so a
//! value out of range (`1e30` seconds, `nan`) is a usage error naming the option's range (exit
//! 2), never a panic in the code that uses it.

/// The longest `record -d`: a year (a longer one overflows the clock of the stop time).
pub const MAX_RECORD_SECS: f64 = 365.0 * 24.0 * 3600.0;
/// The longest refresh or sampling interval of the monitor.
pub const MAX_INTERVAL_SECS: f64 = 3600.0;

/// A finite number in `[min, max]` (`min` itself excluded when `open_min`).
fn number(s: &str, min: f64, max: f64, open_min: bool, unit: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("not a number (give {unit} between {min} and {max})"))?;
    let low_ok = if open_min { v > min } else { v >= min };
    if !(v.is_finite() && low_ok && v <= max) {
        let from = if open_min { "more than" } else { "from" };
        return Err(format!("{unit} must be {from} {min} up to {max}"));
    }
    Ok(v)
}

/// `record -d SECS`: more than 0, at most a year.
pub fn record_secs(s: &str) -> Result<f64, String> {
    number(s, 0.0, MAX_RECORD_SECS, true, "seconds")
}

/// `top --delay SECS`: a refresh delay from 0.01 s to an hour.
pub fn refresh_secs(s: &str) -> Result<f64, String> {
    number(s, 0.01, MAX_INTERVAL_SECS, false, "seconds")
}

/// `ps --delay`, `info --delay`: from 0 (one snapshot) to an hour.
pub fn interval_secs(s: &str) -> Result<f64, String> {
    number(s, 0.0, MAX_INTERVAL_SECS, false, "seconds")
}

/// `report --min-percent`: a percentage.
pub fn percent(s: &str) -> Result<f64, String> {
    number(s, 0.0, 100.0, false, "a percentage")
}

/// `top --max-size SIZE`: bytes with an optional K, M, G or T suffix (powers of 1024), at least
/// 100 KiB (a store keeps a few segments of an eighth of it).
pub fn size_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => {
                    return Err(format!(
                        "unknown unit {c:?}: give a size such as 500M or 1G"
                    ))
                }
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let v = number(num, 0.0, 1e15, false, "a size")
        .map_err(|_| "give a size such as 500M or 1G (at least 100K)".to_string())?;
    let bytes = v * mult as f64;
    if !(bytes >= (100u64 << 10) as f64 && bytes <= (1u64 << 50) as f64) {
        return Err("a store must be allowed at least 100K (and at most 1024T)".into());
    }
    Ok(bytes as u64)
}

/// `top --keep AGE`: seconds from a number with s, m, h, d or w (default seconds), 1 minute to
/// 10 years.
pub fn age_secs(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m: u64 = match c {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => 86_400,
                'w' => 7 * 86_400,
                _ => {
                    return Err(format!(
                        "unknown unit {c:?}: give an age such as 12h, 7d or 4w"
                    ))
                }
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let v = number(num, 0.0, 1e12, false, "an age")
        .map_err(|_| "give an age such as 12h, 7d or 4w".to_string())?;
    let secs = v * mult as f64;
    if !(60.0..=10.0 * 365.0 * 86_400.0).contains(&secs) {
        return Err("an age must be from 1m up to 10 years".into());
    }
    Ok(secs as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_ages() {
        assert_eq!(size_bytes("1G"), Ok(1 << 30));
        assert_eq!(size_bytes("1.5M"), Ok(3 << 19));
        assert_eq!(size_bytes("2097152"), Ok(2 << 20));
        for bad in ["", "1X", "99K", "nan", "-1G", "1e30G", "G"] {
            assert!(size_bytes(bad).is_err(), "{bad}");
        }
        assert_eq!(age_secs("7d"), Ok(7 * 86_400));
        assert_eq!(age_secs("90m"), Ok(5400));
        assert_eq!(age_secs("3600"), Ok(3600));
        for bad in ["", "7y", "30s", "nan", "-1d", "1e30w", "d"] {
            assert!(age_secs(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn out_of_range_and_non_numbers_are_refused_with_the_range() {
        for bad in ["nan", "NaN", "inf", "-inf", "1e30", "0", "-1", "x", ""] {
            let e = record_secs(bad).unwrap_err();
            assert!(e.contains("31536000"), "{bad}: {e}");
        }
        assert_eq!(record_secs("1.5"), Ok(1.5));
        assert_eq!(record_secs("31536000"), Ok(MAX_RECORD_SECS));
        for bad in ["nan", "0", "0.001", "3601", "1e300"] {
            assert!(refresh_secs(bad).is_err(), "{bad}");
        }
        assert_eq!(refresh_secs("0.01"), Ok(0.01));
        assert_eq!(interval_secs("0"), Ok(0.0));
        assert!(interval_secs("-0.5").is_err());
        assert!(percent("nan").is_err() && percent("100.1").is_err());
        assert_eq!(percent("0"), Ok(0.0));
    }
}

/// `--sort KEY` of `hood top` and `hood ps`: any text (checked later, with `+`/`-` prefixes),
/// but the sort keys are its possible values, so shell completion offers them rather than
/// file names.
#[derive(Clone, Debug)]
pub struct SortKeys;

impl clap::builder::TypedValueParser for SortKeys {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            hood_monitor::SortKey::ALL
                .iter()
                .map(|k| clap::builder::PossibleValue::new(k.name())),
        ))
    }
}
