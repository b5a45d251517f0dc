//! Durations and byte sizes as people write them ("500ms", "2m", "2G"), parsed once: by clap's
//! value parsers for flags, and by the experiment file reader for TOML fields.

use crate::error::usage;
use anyhow::Result;
use std::time::Duration;

/// The largest size accepted (1 PiB): anything above is a typo, not a limit.
pub const MAX_BYTES: u64 = 1 << 50;
/// The longest duration accepted (one week), and durations as people write them ("10s",
/// "500ms", "2m", "1h"): the log reader's, which reads a log's offsets the same way.
pub use dbtax_logs::time::{MAX_DURATION, duration};

/// "500ms" → ("500", "ms"); a bare number has an empty unit.
fn split_unit(s: &str) -> (&str, &str) {
    let t = s.trim();
    match t.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    }
}

/// A client thread count, 1 to 4096 ("-1" gets these words, not clap's tip about `--`).
pub fn threads(s: &str) -> Result<u32, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if (1..=4096).contains(&n) => Ok(n as u32),
        _ => Err("--threads must be at least 1 (a whole number of clients, at most 4096)".into()),
    }
}

/// Parse a byte size: "500M", "2G", "1024", "10k" (binary units). Err: what to write.
pub fn bytes(s: &str) -> Result<u64, String> {
    let (num, unit) = split_unit(s);
    let factor: f64 = match unit.trim().to_ascii_uppercase().trim_end_matches('B') {
        "" => 1.0,
        "K" | "KI" => 1024.0,
        "M" | "MI" => 1024.0 * 1024.0,
        "G" | "GI" => 1024.0 * 1024.0 * 1024.0,
        "T" | "TI" => 1024f64.powi(4),
        _ => f64::NAN,
    };
    let v = num.parse::<f64>().unwrap_or(f64::NAN) * factor;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("'{s}' is not a size: write one such as 500M or 2G"));
    }
    if v > MAX_BYTES as f64 {
        return Err(format!("'{s}' is more than 1 PiB"));
    }
    Ok(v as u64)
}

/// The disturbance threshold: other processes' CPU in percent of one core ("10", "25%"), or
/// "off". Err: what to write.
pub fn disturbance(s: &str) -> Result<Limit, String> {
    if s.trim().eq_ignore_ascii_case("off") {
        return Ok(Limit(None));
    }
    match s.trim().trim_end_matches('%').trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(Limit(Some(v))),
        _ => Err(format!(
            "'{s}' is not a threshold: write other processes' CPU in percent of one core \
             (10 is a tenth of a core, 150 a core and a half), or off"
        )),
    }
}

/// A cost in percent, above 0 and below 100 ("2%", "0.5"). Err: what to write.
pub fn percent(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 100.0 => Ok(v),
        _ => Err(format!(
            "'{s}' is not a cost in percent: write one above 0 and below 100, such as 2%"
        )),
    }
}

/// A threshold that may be off.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit(pub Option<f64>);

/// `duration` for a named field of a file: a usage error that names it.
pub fn parse_duration(what: &str, s: &str) -> Result<Duration> {
    duration(s).map_err(|e| usage(format!("bad {what}: {e}")))
}

/// `bytes` for a named field of a file: a usage error that names it.
pub fn parse_bytes(what: &str, s: &str) -> Result<u64> {
    bytes(s).map_err(|e| usage(format!("bad {what}: {e}")))
}

/// A count with its noun, in the singular for one (the log reader's, which its words use).
pub use dbtax_logs::plural;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_in_all_units() {
        assert_eq!(duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(duration("3").unwrap(), Duration::from_secs(3));
        assert_eq!(duration("1.5s").unwrap(), Duration::from_millis(1500));
        for bad in ["", "ten", "5 parsecs", "-1s", "s", "1e300", "9999h"] {
            assert!(duration(bad).is_err(), "{bad}");
            let e = parse_duration("--duration", bad).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{bad}");
        }
    }

    #[test]
    fn sizes_parse_and_are_range_checked() {
        assert_eq!(bytes("2G").unwrap(), 2 << 30);
        assert_eq!(bytes("500M").unwrap(), 500 << 20);
        assert_eq!(bytes("10").unwrap(), 10);
        assert!(bytes("lots").is_err());
        assert!(bytes("99999999999999999999999").is_err());
        assert!(bytes("2000T").is_err());
    }
}
