//! The answer in words: one sentence per variant, for the top of the report and the end of
//! the terminal table. A number within noise is never worded as a cost or a gain.

use super::view::View;
use crate::results::Results;

/// How a variant reads in a sentence.
pub fn phrase(r: &Results, variant: &str, feature: Option<&str>) -> String {
    let postgres = r.target.kind.contains("postgres");
    match feature.unwrap_or(variant) {
        "general-log" | "log-statement" if postgres => {
            "the statement log (log_statement = 'all')".into()
        }
        "slow-log" | "log-min-duration" if postgres => {
            "the duration log (log_min_duration_statement = 0)".into()
        }
        "audit" | "pgaudit" if postgres => "the pgaudit extension (pgaudit.log = 'all')".into(),
        "sync-commit" => "synchronous commit (synchronous_commit = on)".into(),
        "full-page-writes" => "full-page writes (full_page_writes = on)".into(),
        "general-log" => "the general log".into(),
        "slow-log" => "the slow log (long_query_time=0)".into(),
        "audit" => "the audit plugin".into(),
        "audit-idle" => "the audit plugin, loaded with its logging off".into(),
        "binlog-sync" => "sync_binlog=1".into(),
        "redo-flush" => "innodb_flush_log_at_trx_commit=1".into(),
        "binlog" => "the binary log".into(),
        "performance-schema" => "the performance schema".into(),
        _ => format!("'{variant}'"),
    }
}

/// "thread" or "threads".
pub fn plural(t: u32) -> &'static str {
    if t == 1 { "thread" } else { "threads" }
}

/// The answer in words, one sentence per variant (the run's view says how), and what the
/// reader must know to take them: whether server and load shared the machine's cores.
pub fn headlines(r: &Results, view: &dyn View) -> Vec<String> {
    let mut h = view.headlines();
    if let Some(c) = r.cpus.as_ref().filter(|c| c.shared()) {
        h.push(format!(
            "Server and load shared this machine's cores (CPU {}, not pinned): how the \
             scheduler shared them is part of these numbers.",
            crate::host::cpus::format_list(&c.load)
        ));
    }
    h
}

/// The first letter in upper case.
pub fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}
