//! Times as logs write them, and offsets into a log ("90s", "5m").

use std::time::Duration;

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The longest duration read: a week.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Parse "10s", "500ms", "2m", "1h", "1.5s" or a bare number of seconds. Err: what to write.
pub fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let at = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(at);
    let factor = match unit.trim() {
        "ms" => 0.001,
        "" | "s" | "sec" | "secs" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    let secs = num.parse::<f64>().unwrap_or(f64::NAN) * factor;
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!(
            "'{s}' is not a duration: write one such as 500ms, 10s, 2m or 1h"
        ));
    }
    let d = Duration::from_secs_f64(secs);
    if d > MAX_DURATION {
        return Err(format!("'{s}' is longer than a week"));
    }
    Ok(d)
}
