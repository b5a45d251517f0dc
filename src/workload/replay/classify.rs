//! Which recorded statements a replay may run. A replay runs every trial over the same
//! statements, so one that changes data or schema would change what the next trial reads: such
//! statements are skipped unless the user says otherwise (`--replay-writes`). Statements that
//! change the server itself (its settings, users, replication, plugins, other sessions) are
//! never replayed: dbtax leaves a server as it found it. Anything not known to only read is
//! taken for a write.

/// What a statement does, as far as a replay must tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Reads only (or controls the session: a transaction, a session setting).
    Read,
    /// Changes data or schema.
    Write,
    /// Changes the server: never replayed.
    Server,
}

/// The words of `sql` that tell, lower-cased: comments and leading parentheses skipped.
fn words(sql: &str, n: usize) -> Vec<String> {
    let mut s = sql.trim_start();
    loop {
        if let Some(rest) = s.strip_prefix("/*") {
            // MySQL's executable comments (/*!…*/) run: read inside them.
            if let Some(inner) = rest.strip_prefix('!') {
                s = inner.trim_start_matches(|c: char| c.is_ascii_digit());
                continue;
            }
            s = rest.split_once("*/").map_or("", |(_, r)| r).trim_start();
        } else if let Some(rest) = s.strip_prefix("--").or_else(|| s.strip_prefix('#')) {
            s = rest.split_once('\n').map_or("", |(_, r)| r).trim_start();
        } else if let Some(rest) = s.strip_prefix('(') {
            s = rest.trim_start();
        } else {
            break;
        }
    }
    s.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '@'))
        .filter(|w| !w.is_empty())
        .take(n)
        .map(str::to_ascii_lowercase)
        .collect()
}

/// `sql` lower-cased without its string literals' contents (a quote doubled or after a
/// backslash stays inside).
fn code_of(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(_) if c == '\\' => {
                chars.next();
            }
            Some(q) if c == q && chars.peek() == Some(&q) => {
                chars.next();
            }
            Some(q) if c == q => {
                quote = None;
                out.push(c);
            }
            Some(_) => {}
            None => {
                if c == '\'' || c == '"' {
                    quote = Some(c);
                }
                out.push(c.to_ascii_lowercase());
            }
        }
    }
    // A locking read changes nothing.
    out.replace("for update", "for_lock")
}

/// Whether `sql`'s code (not its strings) holds one of `keys` as a whole word.
fn holds(sql: &str, keys: &[&str]) -> bool {
    code_of(sql)
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| keys.contains(&w))
}

/// What `sql` does.
pub fn classify(sql: &str) -> Class {
    let w = words(sql, 3);
    let first = w.first().map(String::as_str).unwrap_or("");
    let second = w.get(1).map(String::as_str).unwrap_or("");
    match first {
        "shutdown" | "kill" | "flush" | "reset" | "purge" | "grant" | "revoke" | "install"
        | "uninstall" | "change" | "restart" | "load" | "cache" | "lock" | "unlock" | "reindex"
        | "vacuum" | "checkpoint" | "cluster" | "listen" | "notify" | "copy" | "handler"
        | "binlog" | "xa" => Class::Server,
        "start" if matches!(second, "slave" | "replica" | "group_replication") => Class::Server,
        "stop" => Class::Server,
        "set" => {
            let global = holds(sql, &["global", "persist", "persist_only"])
                || sql.contains("@@global")
                || second == "password"
                || second == "role"
                || second == "default";
            if global { Class::Server } else { Class::Read }
        }
        "alter" if matches!(second, "system" | "user" | "role" | "server" | "instance") => {
            Class::Server
        }
        "create" | "drop" | "rename" if matches!(second, "user" | "role" | "server") => {
            Class::Server
        }
        "select" | "with" | "values" | "table" => {
            if holds(
                sql,
                &["insert", "update", "delete", "merge", "outfile", "dumpfile"],
            ) || holds(sql, &["nextval", "setval", "pg_advisory_lock"])
            {
                Class::Write
            } else if holds(
                sql,
                &[
                    "pg_terminate_backend",
                    "pg_cancel_backend",
                    "pg_reload_conf",
                    "set_config",
                    "pg_rotate_logfile",
                    "pg_switch_wal",
                    "release_lock",
                    "get_lock",
                    "sleep",
                    "pg_sleep",
                ],
            ) {
                Class::Server
            } else {
                Class::Read
            }
        }
        "show" | "describe" | "desc" | "use" | "begin" | "commit" | "rollback" | "savepoint"
        | "release" | "do" | "help" | "prepare" | "deallocate" | "discard" | "close" | "fetch"
        | "move" | "declare" => Class::Read,
        "start" if second == "transaction" => Class::Read,
        "explain" | "analyze" => {
            let analyze = first == "analyze" || second == "analyze" || second == "analyse";
            if first == "analyze" && !holds(sql, &["select"]) {
                // ANALYZE TABLE / ANALYZE: updates statistics.
                Class::Write
            } else if analyze && holds(sql, &["insert", "update", "delete", "merge"]) {
                Class::Write
            } else {
                Class::Read
            }
        }
        _ => Class::Write,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_writes_and_the_server() {
        for r in [
            "SELECT 1",
            "  /* app */ select * from t where x = 'delete'",
            "(SELECT a FROM t) UNION (SELECT b FROM u)",
            "WITH x AS (SELECT 1) SELECT * FROM x",
            "SHOW STATUS",
            "use shop",
            "BEGIN",
            "START TRANSACTION READ ONLY",
            "SET NAMES utf8mb4",
            "SET autocommit=1",
            "SET SESSION sql_mode = ''",
            "EXPLAIN SELECT 1",
            "EXPLAIN ANALYZE SELECT 1",
            "COMMIT",
            "SELECT a FROM t WHERE id = 1 FOR UPDATE",
            "SELECT 'it''s an update' FROM t",
        ] {
            assert_eq!(classify(r), Class::Read, "{r}");
        }
        for w in [
            "INSERT INTO t VALUES (1)",
            "update t set a = 1",
            "DELETE FROM t",
            "REPLACE INTO t VALUES (1)",
            "CREATE TABLE t (a int)",
            "DROP TABLE t",
            "ALTER TABLE t ADD b int",
            "TRUNCATE t",
            "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
            "SELECT * INTO OUTFILE '/tmp/x' FROM t",
            "SELECT nextval('s')",
            "CALL p()",
            "ANALYZE TABLE t",
            "EXPLAIN ANALYZE DELETE FROM t",
            "/*!40101 INSERT INTO t VALUES (1) */",
        ] {
            assert_eq!(classify(w), Class::Write, "{w}");
        }
        for s in [
            "SET GLOBAL general_log = 0",
            "set @@global.slow_query_log = 1",
            "SET PERSIST max_connections = 10",
            "KILL 12",
            "SHUTDOWN",
            "FLUSH LOGS",
            "GRANT ALL ON *.* TO x",
            "CREATE USER x",
            "ALTER SYSTEM SET log_statement = 'none'",
            "SELECT pg_terminate_backend(42)",
            "SELECT pg_reload_conf()",
            "INSTALL SONAME 'server_audit'",
            "STOP SLAVE",
            "SELECT SLEEP(10)",
        ] {
            assert_eq!(classify(s), Class::Server, "{s}");
        }
    }
}
