//! How servers spell setting values: one comparison for every engine, so that "is the server
//! already in this state?" has one answer in the switcher, the dry run and the engines; and
//! what a setting accepts (`Domain`, as the server describes it), so that a value it would
//! refuse is bad input before the first change, not an error mid-run.

/// What a setting accepts, as the server describes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Domain {
    /// One of these words.
    Enum(Vec<String>),
    /// Any of these words, comma-separated (MySQL's log_output = 'FILE,TABLE').
    Set(Vec<String>),
    /// On or off.
    Bool,
    /// A number in a range (None: unbounded on that side).
    Number {
        /// Smallest accepted.
        min: Option<f64>,
        /// Largest accepted.
        max: Option<f64>,
        /// A number with a unit is accepted too (PostgreSQL's '250ms', '1GB').
        units: bool,
    },
    /// Anything, as far as dbtax can tell.
    Any,
}

/// Whether `value` is in `domain`; Err says why not, in words.
pub fn check(domain: &Domain, value: &str) -> Result<(), String> {
    let v = value.trim();
    let word = |list: &[String], w: &str| list.iter().any(|x| x.eq_ignore_ascii_case(w.trim()));
    match domain {
        _ if v.eq_ignore_ascii_case("default") => Ok(()),
        Domain::Any => Ok(()),
        Domain::Enum(list)
            if word(list, v) || v.parse::<u32>().is_ok_and(|i| (i as usize) < list.len()) =>
        {
            Ok(())
        }
        Domain::Enum(list) => Err(format!("it takes one of {}", list.join(", "))),
        Domain::Set(list) if v.split(',').all(|w| word(list, w)) => Ok(()),
        Domain::Set(list) => Err(format!(
            "it takes {} (or several, comma-separated)",
            list.join(", ")
        )),
        Domain::Bool => {
            let ok = ["on", "off", "1", "0", "true", "false", "yes", "no"];
            if ok.iter().any(|o| o.eq_ignore_ascii_case(v)) {
                Ok(())
            } else {
                Err("it takes ON or OFF".into())
            }
        }
        Domain::Number { min, max, units } => {
            let number: String = v
                .chars()
                .take_while(|c| c.is_ascii_digit() || "+-.eE".contains(*c))
                .collect();
            let rest = &v[number.len()..];
            let Ok(x) = number.parse::<f64>() else {
                return Err("it takes a number".into());
            };
            if !rest.trim().is_empty() {
                // A unit: the server converts it; the range is in its base unit.
                return if *units {
                    Ok(())
                } else {
                    Err("it takes a plain number".into())
                };
            }
            let range = || match (min, max) {
                (Some(a), Some(b)) => format!("from {a} to {b}"),
                (Some(a), None) => format!("from {a}"),
                (None, Some(b)) => format!("up to {b}"),
                (None, None) => String::new(),
            };
            if min.is_some_and(|m| x < m) || max.is_some_and(|m| x > m) {
                Err(format!("it takes a number {}", range()))
            } else {
                Ok(())
            }
        }
    }
}

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
    fn values_are_checked_against_what_the_server_accepts() {
        let set = Domain::Set(vec!["NONE".into(), "FILE".into(), "TABLE".into()]);
        assert!(check(&set, "file,TABLE").is_ok());
        let e = check(&set, "NOWHERE").unwrap_err();
        assert!(e.contains("NONE, FILE, TABLE"), "{e}");
        assert!(check(&Domain::Bool, "on").is_ok());
        assert!(check(&Domain::Bool, "maybe").is_err());
        let n = Domain::Number {
            min: Some(0.0),
            max: Some(100.0),
            units: false,
        };
        assert!(check(&n, "2.5").is_ok());
        assert!(check(&n, "-1").is_err());
        assert!(check(&n, "1G").is_err());
        let ms = Domain::Number {
            min: Some(-1.0),
            max: None,
            units: true,
        };
        assert!(check(&ms, "250ms").is_ok());
        assert!(check(&Domain::Enum(vec!["none".into(), "all".into()]), "ALL").is_ok());
        assert!(check(&Domain::Enum(vec!["none".into(), "all".into()]), "some").is_err());
        assert!(check(&Domain::Any, "whatever").is_ok());
        assert!(check(&set, "DEFAULT").is_ok());
    }

    #[test]
    fn values_compare_like_the_server_reports_them() {
        assert!(same_value("10.000000", "10"));
        assert!(same_value("ON", "1"));
        assert!(same_value("off", "OFF"));
        assert!(!same_value("FILE", "TABLE"));
        assert!(!same_value("0", "1"));
    }
}
