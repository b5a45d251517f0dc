//! The calls a replayed statement may make: built-in functions known to only compute (an
//! allow-list for both families), the keywords a parenthesis follows without a call, and the
//! reason a call that is neither is counted under (a sleep, a lock, a sequence, a signal, a
//! file, the server, or a function dbtax cannot see). Part of the classifier.

use crate::read_only::lex::Tok;

/// What a call that is not shown safe does, as far as the classifier's counts tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    /// Sleeps.
    Sleep,
    /// Takes a lock.
    Lock,
    /// Moves a sequence.
    Sequence,
    /// Signals another session.
    Signal,
    /// Reaches files, programs or large objects.
    Files,
    /// Changes or reads the server's own state.
    Server,
    /// A stored function, or one dbtax does not know.
    Unknown,
}

/// A keyword or unquoted name, lower-cased ("" for any other token).
pub(crate) fn word(t: Option<&Tok>) -> &str {
    match t {
        Some(Tok::Word(w)) => w,
        _ => "",
    }
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

/// What a built-in function of either family that is not shown safe does ("it sleeps"),
/// or None for a name that is no such built-in (a stored function's, or one that only
/// computes).
pub(crate) fn builtin(name: &str) -> Option<&'static str> {
    match kind_of(name) {
        Call::Sleep => Some("it sleeps"),
        Call::Lock => Some("it takes a lock"),
        Call::Sequence => Some("it moves a sequence"),
        Call::Signal => Some("it signals another session"),
        Call::Files => Some("it reaches files or large objects"),
        Call::Server => Some("it changes or reads the server's own state"),
        Call::Unknown => None,
    }
}

/// What a function that is not shown safe does.
fn kind_of(name: &str) -> Call {
    let n = name;
    if matches!(
        n,
        "sleep" | "pg_sleep" | "pg_sleep_for" | "pg_sleep_until" | "benchmark"
    ) {
        Call::Sleep
    } else if n.starts_with("pg_advisory")
        || n.starts_with("pg_try_advisory")
        || matches!(
            n,
            "get_lock" | "release_lock" | "release_all_locks" | "is_free_lock" | "is_used_lock"
        )
    {
        Call::Lock
    } else if matches!(n, "nextval" | "setval" | "lastval" | "currval") {
        Call::Sequence
    } else if matches!(n, "pg_terminate_backend" | "pg_cancel_backend" | "kill") {
        Call::Signal
    } else if n.starts_with("lo_")
        || n.starts_with("pg_read_")
        || n.starts_with("pg_ls_")
        || n.starts_with("pg_file")
        || n.starts_with("dblink")
        || matches!(n, "load_file" | "pg_stat_file" | "loread" | "lowrite")
    {
        Call::Files
    } else if n.starts_with("pg_")
        || n.starts_with("txid_")
        || matches!(n, "set_config" | "master_pos_wait" | "source_pos_wait")
    {
        Call::Server
    } else {
        Call::Unknown
    }
}

/// The first call in `toks` that is not shown safe, and what it does.
pub(crate) fn calls(toks: &[Tok], allowed: &[String]) -> Option<Call> {
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
        return Some(kind_of(name));
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
