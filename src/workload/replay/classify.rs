//! Which recorded statements a replay may run: the first of the replay's three locks (the
//! others: every replaying session is read-only on the server, and logs in as a user that
//! may only read). A replay runs every trial over the same statements, so one that changes
//! data or schema would change what the next trial reads: such statements are skipped unless
//! the user says otherwise (`--replay-writes`). Statements that change the server itself
//! (its settings, users, replication, plugins, other sessions), that could lift the
//! session's read-only mode, sleep, take locks, move sequences, reach files or programs, or
//! call code dbtax cannot see (a stored function or procedure, a `DO` block, a compound
//! statement, a statement prepared by name) are never replayed.
//!
//! The rule is an allow-list, over tokens from a lexer that reads the statement every way
//! its server could (`lex::readings`): a statement is a read only if every reading is one
//! whose first word is a known read, none of whose words writes, and every function it
//! calls is a built-in known to only compute (or one the user allowed by name). Anything
//! else is skipped, and counted by its reason.

use super::lex::{Dialect, Tok, Unreadable, readings};

/// What a statement does, as far as a replay must tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Reads only (or controls the session: a transaction, a session setting).
    Read,
    /// Changes data or schema: replayed only with `--replay-writes`.
    Write,
    /// Changes the server, or cannot be shown safe: never replayed.
    Server,
}

/// Why a statement is not a plain read: its class, and the reason it is counted under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// What it does.
    pub class: Class,
    /// Why (empty for a read): the words the counts are kept under.
    pub reason: &'static str,
}

const READ: Verdict = Verdict {
    class: Class::Read,
    reason: "",
};

const fn write(reason: &'static str) -> Verdict {
    Verdict {
        class: Class::Write,
        reason,
    }
}

const fn server(reason: &'static str) -> Verdict {
    Verdict {
        class: Class::Server,
        reason,
    }
}

/// The reasons, as counted (results.json `workload.replay.read.skipped`).
pub mod reason {
    /// Changes data or schema.
    pub const WRITES: &str = "changes data or schema";
    /// Changes the server's settings, users, replication or other sessions.
    pub const SERVER: &str = "changes the server";
    /// Several statements in one entry.
    pub const SEVERAL: &str = "several statements in one entry";
    /// A compound statement or code block.
    pub const CODE: &str = "a code block or compound statement";
    /// A stored function or procedure, or a function dbtax does not know.
    pub const FUNCTION: &str = "calls a function dbtax does not know to only read";
    /// Sleeps.
    pub const SLEEP: &str = "sleeps";
    /// Takes a lock (advisory, table or row).
    pub const LOCK: &str = "takes a lock";
    /// Moves a sequence.
    pub const SEQUENCE: &str = "moves a sequence";
    /// Signals or ends another session.
    pub const SIGNAL: &str = "signals another session";
    /// Reaches files, programs or large objects on the server's host.
    pub const FILES: &str = "reaches files or large objects";
    /// Could lift the session's read-only mode or its login.
    pub const LIFTS: &str = "could lift the session's read-only mode";
    /// A statement prepared by name (what it runs is not in the entry).
    pub const PREPARED: &str = "runs a statement prepared by name";
    /// SELECT … INTO (a table, a file, variables).
    pub const INTO: &str = "SELECT … INTO";
    /// The lexer could not read it.
    pub const UNREADABLE: &str = "cannot be read";
    /// Longer than a log statement may be (`replay::MAX_STATEMENT`).
    pub const TOO_LONG: &str = "longer than 16 MB";
}

/// What `sql` (from a log of `dialect`'s servers) does: the worst of every way it can be
/// read. `allowed`: functions and procedures the user allowed by name (lower-case).
pub fn classify(sql: &str, dialect: Dialect, allowed: &[String]) -> Verdict {
    let mut worst = READ;
    let mut read_some = false;
    for reading in readings(sql, dialect) {
        let v = match reading {
            Ok(toks) => {
                read_some = true;
                of_tokens(&toks, dialect, allowed)
            }
            // A server that reads it so refuses it: nothing runs (`'C:\'` under
            // backslash escapes), as long as some reading is whole.
            Err(Unreadable::Refused(_)) => continue,
            Err(Unreadable::Beyond(_)) => server(reason::UNREADABLE),
        };
        let rank = |c: Class| match c {
            Class::Read => 0,
            Class::Write => 1,
            Class::Server => 2,
        };
        if rank(v.class) > rank(worst.class) {
            worst = v;
        }
        if worst.class == Class::Server {
            break;
        }
    }
    if !read_some {
        return server(reason::UNREADABLE);
    }
    worst
}

fn word(t: Option<&Tok>) -> &str {
    match t {
        Some(Tok::Word(w)) => w,
        _ => "",
    }
}

/// One reading's verdict.
fn of_tokens(toks: &[Tok], dialect: Dialect, allowed: &[String]) -> Verdict {
    // One statement per entry (a trailing `;` is allowed).
    let end = toks
        .iter()
        .position(|t| *t == Tok::Semi)
        .unwrap_or(toks.len());
    if toks[end..].iter().any(|t| *t != Tok::Semi) {
        return server(reason::SEVERAL);
    }
    let toks = &toks[..end];
    let form = statement(toks, dialect);
    match (form.class, calls(toks, allowed)) {
        (Class::Read, Some(call)) => call,
        // A write's parentheses are often names (`INSERT INTO t (a)`): only the calls
        // said to sleep, signal, reach files or change the server count there.
        (Class::Write, Some(call))
            if matches!(
                call.reason,
                reason::SLEEP | reason::SIGNAL | reason::FILES | reason::SERVER
            ) =>
        {
            call
        }
        _ => form,
    }
}

/// The verdict of one statement's tokens by its form (calls already checked).
fn statement(toks: &[Tok], dialect: Dialect) -> Verdict {
    // Leading parentheses: `(SELECT …) UNION (SELECT …)`.
    let start = toks.iter().take_while(|t| **t == Tok::Op('(')).count();
    let toks = &toks[start..];
    let w = |i: usize| word(toks.get(i));
    let has = |k: &str| toks.iter().any(|t| matches!(t, Tok::Word(x) if x == k));
    let has_pair = |a: &str, b: &str| {
        toks.windows(2)
            .any(|p| word(Some(&p[0])) == a && word(Some(&p[1])) == b)
    };
    let my = dialect == Dialect::Mysql;
    match w(0) {
        "" => READ,
        "select" | "with" | "values" | "table" => select(toks),
        "show" | "help" => READ,
        "use" if my => READ,
        "describe" | "desc" | "explain" => explain(&toks[1..], dialect),
        "analyze" | "analyse" => {
            // MariaDB's ANALYZE SELECT runs the query and shows its plan; ANALYZE TABLE and
            // PostgreSQL's ANALYZE update statistics.
            let rest = skip_options(&toks[1..]);
            match word(rest.first()) {
                "select" | "with" | "values" | "insert" | "update" | "delete" | "replace"
                | "merge" => statement(rest, dialect),
                // ANALYZE TABLE t, ANALYZE [VERBOSE] t.
                _ => write(reason::WRITES),
            }
        }
        "begin" if has_pair("not", "atomic") => server(reason::CODE),
        "begin" | "start" | "commit" | "rollback" | "end" | "abort" => {
            if w(0) == "start" && !matches!(w(1), "transaction") {
                return server(reason::SERVER);
            }
            if has_pair("read", "write") {
                server(reason::LIFTS)
            } else if has("prepared") {
                server(reason::SERVER)
            } else {
                READ
            }
        }
        "savepoint" | "release" => READ,
        "set" => set(toks, dialect),
        "reset" if !my => {
            // RESET ALL and the read-only settings would lift the session's mode.
            match w(1) {
                "all"
                | "default_transaction_read_only"
                | "transaction_read_only"
                | "session"
                | "role" => server(reason::LIFTS),
                _ => READ,
            }
        }
        "discard" if !my => match w(1) {
            "all" => server(reason::LIFTS),
            _ => READ,
        },
        "declare" if !my => {
            // DECLARE c … CURSOR … FOR query: the query decides.
            match toks.iter().position(|t| word(Some(t)) == "for") {
                Some(at) => statement(&toks[at + 1..], dialect),
                None => server(reason::CODE),
            }
        }
        "fetch" | "move" | "close" if !my => READ,
        "prepare" | "execute" | "deallocate" => server(reason::PREPARED),
        "do" | "if" | "while" | "loop" | "repeat" | "case" | "declare" | "signal" | "resignal"
        | "get" => server(reason::CODE),
        "call" => server(reason::FUNCTION),
        "lock" | "unlock" | "handler" => server(reason::LOCK),
        "kill" => server(reason::SIGNAL),
        "copy" | "load" | "import" => server(reason::FILES),
        "insert" | "update" | "delete" | "replace" | "merge" | "upsert" | "truncate"
        | "comment" | "refresh" | "optimize" | "repair" => write(reason::WRITES),
        "create" | "drop" | "rename" | "alter"
            if matches!(
                w(1),
                "user"
                    | "role"
                    | "server"
                    | "system"
                    | "instance"
                    | "event"
                    | "trigger"
                    | "function"
                    | "procedure"
                    | "extension"
                    | "subscription"
                    | "publication"
                    | "database"
                    | "schema"
                    | "tablespace"
                    | "logfile"
                    | "aggregate"
                    | "language"
                    | "policy"
                    | "rule"
                    | "definer"
                    | "or"
            ) =>
        {
            server(reason::SERVER)
        }
        "create" | "drop" | "rename" | "alter" => write(reason::WRITES),
        // Anything not known to only read is not shown to be a read.
        _ => server(reason::SERVER),
    }
}

/// The options of EXPLAIN / ANALYZE before the statement they show: `(ANALYZE, BUFFERS)`,
/// `ANALYZE VERBOSE`, `FORMAT=JSON`, `EXTENDED`.
fn skip_options(toks: &[Tok]) -> &[Tok] {
    let mut i = 0;
    if toks.first() == Some(&Tok::Op('(')) {
        let mut depth = 0;
        while i < toks.len() {
            match toks[i] {
                Tok::Op('(') => depth += 1,
                Tok::Op(')') => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    while i < toks.len() {
        match &toks[i] {
            Tok::Word(w)
                if matches!(
                    w.as_str(),
                    "analyze"
                        | "analyse"
                        | "verbose"
                        | "extended"
                        | "partitions"
                        | "format"
                        | "json"
                        | "tree"
                        | "traditional"
                        | "costs"
                        | "buffers"
                        | "timing"
                        | "summary"
                        | "settings"
                        | "wal"
                ) =>
            {
                i += 1
            }
            Tok::Op('=') => i += 1,
            _ => break,
        }
    }
    &toks[i..]
}

/// EXPLAIN / DESCRIBE: a table's columns, or the plan of a statement — which runs it under
/// ANALYZE, so the statement shown decides.
fn explain(toks: &[Tok], dialect: Dialect) -> Verdict {
    let rest = skip_options(toks);
    match word(rest.first()) {
        "for" => server(reason::SIGNAL),
        "select" | "with" | "values" | "table" | "insert" | "update" | "delete" | "replace"
        | "merge" | "execute" | "create" | "declare" | "do" | "call" => statement(rest, dialect),
        // DESCRIBE t / EXPLAIN t [column]: a table's columns.
        _ => READ,
    }
}

/// A query: a read unless it writes through a CTE, stores its result, or locks rows.
fn select(toks: &[Tok]) -> Verdict {
    for (i, t) in toks.iter().enumerate() {
        let Tok::Word(w) = t else { continue };
        let next = word(toks.get(i + 1));
        match w.as_str() {
            // (`FOR [NO KEY] UPDATE` is met at its FOR first: a locking read.)
            "insert" | "update" | "delete" | "merge" => return write(reason::WRITES),
            "into" => return write(reason::INTO),
            "procedure" => return server(reason::FUNCTION),
            "for" if matches!(next, "update" | "share" | "no" | "key") => {
                return server(reason::LOCK);
            }
            "lock" if next == "in" => return server(reason::LOCK),
            "next" | "previous" if next == "value" => return server(reason::SEQUENCE),
            _ => {}
        }
    }
    READ
}

/// SET: a session's setting is a read; the server's, a password, a role, the read-only mode
/// or (MariaDB's SET STATEMENT … FOR) the statement it wraps decide otherwise.
fn set(toks: &[Tok], dialect: Dialect) -> Verdict {
    if word(toks.get(1)) == "statement" {
        let at = toks.iter().position(|t| word(Some(t)) == "for");
        let Some(at) = at else {
            return server(reason::SERVER);
        };
        let head = assignments(&toks[2..at]);
        if head.class != Class::Read {
            return head;
        }
        return statement(&toks[at + 1..], dialect);
    }
    assignments(toks)
}

/// The words of a SET that make it more than a session's setting.
fn assignments(toks: &[Tok]) -> Verdict {
    for (i, t) in toks.iter().enumerate() {
        let Tok::Word(x) = t else { continue };
        let next = word(toks.get(i + 1));
        match x.as_str() {
            "global"
            | "persist"
            | "persist_only"
            | "@@global"
            | "@@persist"
            | "@@persist_only"
            | "password"
            | "role"
            | "authorization"
            | "sql_log_bin"
            | "@@sql_log_bin"
            | "session_replication_role"
            | "pseudo_slave_mode"
            | "pseudo_thread_id"
            | "gtid_next"
            | "gtid_seq_no"
            | "gtid_domain_id"
            | "server_id"
            | "wsrep_on" => return server(reason::SERVER),
            "default" if i == 1 && next == "role" => return server(reason::SERVER),
            "tx_read_only" | "transaction_read_only" | "default_transaction_read_only" => {
                return server(reason::LIFTS);
            }
            "read" if next == "write" => return server(reason::LIFTS),
            _ => {}
        }
    }
    READ
}

/// Built-in functions that only compute (no lock, sleep, sequence, file, signal or
/// setting), in both families. A call of anything else is not shown to be a read.
const BUILTINS: &[&str] = &[
    // aggregates and windows
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "group_concat",
    "string_agg",
    "array_agg",
    "json_agg",
    "jsonb_agg",
    "json_object_agg",
    "jsonb_object_agg",
    "bit_and",
    "bit_or",
    "bit_xor",
    "bool_and",
    "bool_or",
    "every",
    "std",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "json_arrayagg",
    "json_objectagg",
    "percentile_cont",
    "percentile_disc",
    "mode",
    "row_number",
    "rank",
    "dense_rank",
    "ntile",
    "lag",
    "lead",
    "first_value",
    "last_value",
    "nth_value",
    "percent_rank",
    "cume_dist",
    "grouping",
    // strings
    "concat",
    "concat_ws",
    "substring",
    "substr",
    "mid",
    "left",
    "right",
    "length",
    "char_length",
    "character_length",
    "octet_length",
    "bit_length",
    "lower",
    "upper",
    "lcase",
    "ucase",
    "trim",
    "ltrim",
    "rtrim",
    "btrim",
    "lpad",
    "rpad",
    "replace",
    "reverse",
    "repeat",
    "position",
    "locate",
    "instr",
    "strpos",
    "format",
    "split_part",
    "regexp_replace",
    "regexp_like",
    "regexp_substr",
    "regexp_instr",
    "regexp_matches",
    "regexp_match",
    "regexp_split_to_array",
    "ascii",
    "char",
    "chr",
    "hex",
    "unhex",
    "md5",
    "sha",
    "sha1",
    "sha2",
    "crc32",
    "to_base64",
    "from_base64",
    "quote",
    "quote_ident",
    "quote_literal",
    "quote_nullable",
    "initcap",
    "translate",
    "space",
    "soundex",
    "field",
    "find_in_set",
    "elt",
    "overlay",
    "starts_with",
    "encode",
    "decode",
    "to_hex",
    "strcmp",
    "substring_index",
    "make_set",
    "export_set",
    "ord",
    "weight_string",
    "collate",
    // numbers
    "abs",
    "ceil",
    "ceiling",
    "floor",
    "round",
    "mod",
    "pow",
    "power",
    "sqrt",
    "exp",
    "ln",
    "log",
    "log2",
    "log10",
    "sign",
    "greatest",
    "least",
    "rand",
    "random",
    "pi",
    "degrees",
    "radians",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "cot",
    "div",
    "conv",
    "bin",
    "oct",
    "trunc",
    "width_bucket",
    "bit_count",
    "cbrt",
    "gcd",
    "lcm",
    "factorial",
    // dates and times
    "now",
    "current_timestamp",
    "current_date",
    "current_time",
    "localtime",
    "localtimestamp",
    "curdate",
    "curtime",
    "sysdate",
    "date",
    "time",
    "year",
    "month",
    "day",
    "dayofmonth",
    "dayofweek",
    "dayofyear",
    "hour",
    "minute",
    "second",
    "microsecond",
    "week",
    "weekday",
    "weekofyear",
    "quarter",
    "date_format",
    "date_add",
    "date_sub",
    "adddate",
    "subdate",
    "datediff",
    "timestampdiff",
    "timestampadd",
    "from_unixtime",
    "unix_timestamp",
    "str_to_date",
    "to_char",
    "to_date",
    "to_timestamp",
    "to_number",
    "date_trunc",
    "date_part",
    "extract",
    "age",
    "makedate",
    "maketime",
    "make_date",
    "make_time",
    "make_timestamp",
    "make_timestamptz",
    "make_interval",
    "last_day",
    "utc_timestamp",
    "utc_date",
    "utc_time",
    "period_add",
    "period_diff",
    "timediff",
    "addtime",
    "subtime",
    "convert_tz",
    "monthname",
    "dayname",
    "justify_days",
    "justify_hours",
    "justify_interval",
    "clock_timestamp",
    "statement_timestamp",
    "transaction_timestamp",
    "timezone",
    "yearweek",
    "to_days",
    "from_days",
    "time_format",
    "time_to_sec",
    "sec_to_time",
    "get_format",
    "isfinite",
    "date_bin",
    // conditions and types
    "coalesce",
    "ifnull",
    "nullif",
    "if",
    "isnull",
    "nvl",
    "nvl2",
    "cast",
    "convert",
    "int",
    "integer",
    "bigint",
    "smallint",
    "tinyint",
    "mediumint",
    "numeric",
    "decimal",
    "dec",
    "varchar",
    "character",
    "nchar",
    "nvarchar",
    "text",
    "timestamp",
    "timestamptz",
    "interval",
    "float",
    "double",
    "real",
    "bit",
    "varbit",
    "json",
    "jsonb",
    "uuid",
    "bool",
    "boolean",
    "bytea",
    "int2",
    "int4",
    "int8",
    "float4",
    "float8",
    "signed",
    "unsigned",
    "binary",
    "varbinary",
    "blob",
    "datetime",
    "time_bucket",
    "row",
    "array",
    "any",
    "all",
    "some",
    "exists",
    "in",
    "values",
    // json and arrays
    "json_extract",
    "json_unquote",
    "json_object",
    "json_array",
    "json_contains",
    "json_contains_path",
    "json_length",
    "json_keys",
    "json_value",
    "json_query",
    "json_set",
    "json_insert",
    "json_replace",
    "json_remove",
    "json_merge",
    "json_merge_patch",
    "json_merge_preserve",
    "json_search",
    "json_type",
    "json_valid",
    "json_quote",
    "json_depth",
    "json_pretty",
    "json_table",
    "json_overlaps",
    "json_build_object",
    "json_build_array",
    "jsonb_build_object",
    "jsonb_build_array",
    "to_json",
    "to_jsonb",
    "row_to_json",
    "array_to_json",
    "json_each",
    "jsonb_each",
    "json_each_text",
    "jsonb_each_text",
    "json_array_elements",
    "jsonb_array_elements",
    "json_array_elements_text",
    "jsonb_array_elements_text",
    "json_array_length",
    "jsonb_array_length",
    "jsonb_extract_path",
    "jsonb_extract_path_text",
    "json_extract_path",
    "json_extract_path_text",
    "jsonb_set",
    "jsonb_insert",
    "jsonb_pretty",
    "json_typeof",
    "jsonb_typeof",
    "jsonb_strip_nulls",
    "json_strip_nulls",
    "jsonb_path_query",
    "jsonb_path_exists",
    "jsonb_object_keys",
    "json_object_keys",
    "array_length",
    "array_upper",
    "array_lower",
    "array_dims",
    "unnest",
    "generate_series",
    "generate_subscripts",
    "array_to_string",
    "string_to_array",
    "cardinality",
    "array_position",
    "array_positions",
    "array_append",
    "array_prepend",
    "array_cat",
    "array_remove",
    "array_replace",
    // identity of the session and the server (reads)
    "version",
    "database",
    "schema",
    "user",
    "current_user",
    "session_user",
    "system_user",
    "current_database",
    "current_schema",
    "current_schemas",
    "current_role",
    "connection_id",
    "last_insert_id",
    "found_rows",
    "row_count",
    "gen_random_uuid",
    "uuid_short",
    "inet_aton",
    "inet_ntoa",
    "inet6_aton",
    "inet6_ntoa",
    "is_ipv4",
    "is_ipv6",
    "pg_backend_pid",
    "match",
    "against",
    "charset",
    "collation",
    "coercibility",
    "pg_typeof",
    "format_type",
    "pg_size_pretty",
    "inet_client_addr",
    "inet_server_addr",
    "host",
    "masklen",
    "network",
    "family",
    "st_astext",
    "st_geomfromtext",
    "st_distance",
    "st_contains",
    "st_within",
    "st_x",
    "st_y",
    "point",
    "default",
];

/// Keywords that a parenthesis follows without a call: `IN (`, `OVER (`, `USING (`.
const BEFORE_PAREN: &[&str] = &[
    "in",
    "exists",
    "values",
    "as",
    "from",
    "join",
    "on",
    "using",
    "over",
    "and",
    "or",
    "not",
    "where",
    "select",
    "when",
    "then",
    "else",
    "filter",
    "within",
    "is",
    "by",
    "like",
    "between",
    "with",
    "union",
    "intersect",
    "except",
    "lateral",
    "into",
    "returning",
    "distinct",
    "partition",
    "window",
    "rows",
    "range",
    "groups",
    "having",
    "limit",
    "offset",
    "recursive",
    "materialized",
    "table",
    "cube",
    "rollup",
    "sets",
    "escape",
    "index",
    "key",
    "force",
    "use",
    "ignore",
    "of",
    "only",
    "to",
    "set",
    "case",
    "all",
    "any",
    "some",
    "array",
    "row",
    "group",
    "order",
    "return",
    "end",
    "explain",
    "analyze",
    "analyse",
    "distinctrow",
    "straight_join",
    "sql_no_cache",
    "sql_cache",
    "high_priority",
    "ilike",
    "similar",
    "at",
    "zone",
    "collate",
    "primary",
    "unique",
    "check",
    "references",
    "mode",
    "share",
    "nowait",
    "skip",
    "locked",
    "for",
    "do",
    "if",
    "elseif",
    "while",
    "interval",
    "char",
    "binary",
    "regexp",
    "rlike",
    "div",
    "mod",
    "xor",
    "null",
    "left",
    "right",
    "inner",
    "outer",
    "cross",
    "natural",
    "full",
    "default",
];

/// The functions that are not shown safe, with the reason they are counted under.
fn reason_of(name: &str) -> &'static str {
    let n = name;
    if matches!(
        n,
        "sleep" | "pg_sleep" | "pg_sleep_for" | "pg_sleep_until" | "benchmark"
    ) {
        reason::SLEEP
    } else if n.starts_with("pg_advisory")
        || n.starts_with("pg_try_advisory")
        || matches!(
            n,
            "get_lock" | "release_lock" | "release_all_locks" | "is_free_lock" | "is_used_lock"
        )
    {
        reason::LOCK
    } else if matches!(n, "nextval" | "setval" | "lastval" | "currval") {
        reason::SEQUENCE
    } else if matches!(n, "pg_terminate_backend" | "pg_cancel_backend" | "kill") {
        reason::SIGNAL
    } else if n.starts_with("lo_")
        || n.starts_with("pg_read_")
        || n.starts_with("pg_ls_")
        || n.starts_with("pg_file")
        || n.starts_with("dblink")
        || matches!(n, "load_file" | "pg_stat_file" | "loread" | "lowrite")
    {
        reason::FILES
    } else if n.starts_with("pg_")
        || n.starts_with("txid_")
        || matches!(n, "set_config" | "master_pos_wait" | "source_pos_wait")
    {
        reason::SERVER
    } else {
        reason::FUNCTION
    }
}

/// The first call in `toks` that is not shown safe, as a verdict.
fn calls(toks: &[Tok], allowed: &[String]) -> Option<Verdict> {
    for i in 0..toks.len().saturating_sub(1) {
        if toks[i + 1] != Tok::Op('(') {
            continue;
        }
        let (name, quoted) = match &toks[i] {
            Tok::Word(w) => (w.as_str(), false),
            Tok::Name(n) => (n.as_str(), true),
            _ => continue,
        };
        let qualified = i > 0 && toks[i - 1] == Tok::Op('.');
        let qualifier = qualified.then(|| match toks.get(i.wrapping_sub(2)) {
            Some(Tok::Word(q) | Tok::Name(q)) => q.as_str(),
            _ => "",
        });
        let prev = if qualified {
            i.checked_sub(3)
        } else {
            i.checked_sub(1)
        };
        let prev = prev.map(|p| &toks[p]);
        // `AS alias(cols)`, `WITH x(cols) AS (`: names, not calls.
        if !qualified && matches!(prev, Some(Tok::Word(w)) if w == "as" || w == "with") {
            continue;
        }
        if !qualified && cte_columns(toks, i + 1) {
            continue;
        }
        if !quoted && !qualified && BEFORE_PAREN.contains(&name) {
            continue;
        }
        let builtin_schema = qualifier.is_none_or(|q| q == "pg_catalog");
        if builtin_schema && BUILTINS.contains(&name) {
            continue;
        }
        let full = match qualifier {
            Some(q) => format!("{q}.{name}"),
            None => name.to_string(),
        };
        if allowed.iter().any(|a| *a == full || *a == name) {
            continue;
        }
        return Some(server(reason_of(name)));
    }
    None
}

/// Whether the parenthesis at `open` closes before `AS (` or `AS [NOT] MATERIALIZED (`: a
/// common table expression's column list.
fn cte_columns(toks: &[Tok], open: usize) -> bool {
    let mut depth = 0;
    for (j, t) in toks.iter().enumerate().skip(open) {
        match t {
            Tok::Op('(') => depth += 1,
            Tok::Op(')') => {
                depth -= 1;
                if depth == 0 {
                    let after: Vec<&str> = toks[j + 1..]
                        .iter()
                        .take(3)
                        .map(|t| word(Some(t)))
                        .collect();
                    return after.first() == Some(&"as")
                        && (toks.get(j + 2) == Some(&Tok::Op('('))
                            || after.get(1) == Some(&"materialized")
                            || after.get(1) == Some(&"not"));
                }
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
