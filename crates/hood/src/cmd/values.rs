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

/// `top -d SECS`: a refresh delay from 0.01 s to an hour.
pub fn refresh_secs(s: &str) -> Result<f64, String> {
    number(s, 0.01, MAX_INTERVAL_SECS, false, "seconds")
}

/// `ps --interval`, `info --interval`: from 0 (one snapshot) to an hour.
pub fn interval_secs(s: &str) -> Result<f64, String> {
    number(s, 0.0, MAX_INTERVAL_SECS, false, "seconds")
}

/// `report --min-percent`: a percentage.
pub fn percent(s: &str) -> Result<f64, String> {
    number(s, 0.0, 100.0, false, "a percentage")
}

#[cfg(test)]
mod tests {
    use super::*;

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
