//! How servers spell setting values: one comparison for every engine, so that "is the server
//! already in this state?" has one answer in the switcher, the dry run and the engines.

/// Whether two spellings of a server value mean the same (`10.000000` = `10`, `ON` = `1`).
pub fn same_value(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x == y,
        _ => {
            let norm = |s: &str| match s.to_ascii_uppercase().as_str() {
                "1" | "ON" | "TRUE" => "ON".to_string(),
                "0" | "OFF" | "FALSE" => "OFF".to_string(),
                other => other.to_string(),
            };
            norm(a) == norm(b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_compare_like_the_server_reports_them() {
        assert!(same_value("10.000000", "10"));
        assert!(same_value("ON", "1"));
        assert!(same_value("off", "OFF"));
        assert!(!same_value("FILE", "TABLE"));
        assert!(!same_value("0", "1"));
    }
}
