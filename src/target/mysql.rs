//! Small helpers over an admin connection: global variables, status counters, privileges.

use ::mysql::prelude::Queryable;
use anyhow::{Context, Result};
use std::collections::BTreeMap;

/// The server's message without the crate's prefixes, for one-paragraph errors.
pub fn clean_error(e: &::mysql::Error) -> String {
    match e {
        ::mysql::Error::MySqlError(m) => format!("{} (error {})", m.message, m.code),
        ::mysql::Error::IoError(io) => format!("{io}"),
        other => other.to_string(),
    }
}

/// Backtick-quote an identifier.
pub fn quote_ident(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

/// Quote a value for `SET GLOBAL`: numbers and ON/OFF bare, everything else as a string.
pub fn quote_value(v: &str) -> String {
    let bare = v.parse::<f64>().is_ok()
        || ["ON", "OFF", "DEFAULT"].contains(&v.to_ascii_uppercase().as_str());
    if bare {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// The statement that sets one global variable.
pub fn set_global_sql(name: &str, value: &str) -> String {
    format!("SET GLOBAL {name} = {}", quote_value(value))
}

/// Prove the privilege to change a global variable without changing it: set it to the value
/// it has. Refused without SUPER / SYSTEM_VARIABLES_ADMIN; a no-op with it. Err: the reason.
pub fn probe_set_privilege(
    conn: &mut ::mysql::Conn,
    name: &str,
    current: &str,
) -> Result<(), String> {
    conn.query_drop(set_global_sql(name, current))
        .map_err(|e| format!("this user may not change {name}: {}", clean_error(&e)))
}

/// `SELECT @@GLOBAL.name` for each name; names the server does not know are absent.
pub fn global_vars(conn: &mut ::mysql::Conn, names: &[&str]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    if names.is_empty() {
        return Ok(out);
    }
    let list = names
        .iter()
        .map(|n| format!("'{}'", n.replace('\'', "")))
        .collect::<Vec<_>>()
        .join(",");
    let rows: Vec<(String, Option<String>)> = conn
        .query(format!(
            "SELECT LOWER(VARIABLE_NAME), VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES \
             WHERE LOWER(VARIABLE_NAME) IN ({})",
            list.to_lowercase()
        ))
        .context("reading global variables")?;
    for (k, v) in rows {
        out.insert(k, v.unwrap_or_default());
    }
    Ok(out)
}

/// `SHOW GLOBAL STATUS` as numbers, for the counters dbtax reports per query.
pub fn global_status(conn: &mut ::mysql::Conn) -> Result<BTreeMap<String, f64>> {
    let rows: Vec<(String, String)> = conn.query("SHOW GLOBAL STATUS")?;
    Ok(rows
        .into_iter()
        .filter(|(k, _)| is_reported_counter(k))
        .filter_map(|(k, v)| v.parse::<f64>().ok().map(|v| (k, v)))
        .collect())
}

fn is_reported_counter(name: &str) -> bool {
    matches!(
        name,
        "Com_select"
            | "Com_insert"
            | "Com_update"
            | "Com_delete"
            | "Com_begin"
            | "Com_commit"
            | "Com_stmt_execute"
            | "Questions"
            | "Innodb_data_fsyncs"
            | "Innodb_os_log_fsyncs"
            | "Innodb_os_log_written"
            | "Innodb_data_written"
            | "Binlog_bytes_written"
            | "Binlog_commits"
            | "Binlog_group_commits"
            | "Slow_queries"
    )
}

/// Whether the server is a MariaDB.
pub fn is_mariadb(version: &str) -> bool {
    version.to_ascii_lowercase().contains("mariadb")
}

/// The grants of the current user, as one upper-case text (for privilege checks).
pub fn grants_text(conn: &mut ::mysql::Conn) -> Result<String> {
    let rows: Vec<String> = conn.query("SHOW GRANTS")?;
    Ok(rows.join("\n").to_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_quoted_only_when_needed() {
        assert_eq!(
            set_global_sql("general_log", "ON"),
            "SET GLOBAL general_log = ON"
        );
        assert_eq!(
            set_global_sql("long_query_time", "0"),
            "SET GLOBAL long_query_time = 0"
        );
        assert_eq!(
            set_global_sql("log_output", "FILE"),
            "SET GLOBAL log_output = 'FILE'"
        );
        assert_eq!(set_global_sql("x", "a'b"), "SET GLOBAL x = 'a\\'b'");
    }
}
