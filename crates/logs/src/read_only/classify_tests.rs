//! The classifier against what the adversarial round replayed (issue 33), and against the
//! reads real logs hold.

use super::*;

fn my(sql: &str) -> Verdict {
    classify(sql, Dialect::Mysql, &[])
}

fn pg(sql: &str) -> Verdict {
    classify(sql, Dialect::Postgres, &[])
}

#[test]
fn reads_stay_reads() {
    for r in [
        "SELECT 1",
        "  /* app */ select * from t where x = 'delete'",
        "(SELECT a FROM t) UNION (SELECT b FROM u)",
        "WITH x AS (SELECT 1) SELECT * FROM x",
        "WITH x(a, b) AS (SELECT 1, 2) SELECT a FROM x",
        "SHOW STATUS",
        "use shop",
        "BEGIN",
        "START TRANSACTION READ ONLY",
        "SET NAMES utf8mb4",
        "SET autocommit=1",
        "SET SESSION sql_mode = ''",
        "SET @a = CONCAT('x', 1)",
        "EXPLAIN SELECT 1",
        "EXPLAIN ANALYZE SELECT 1",
        "ANALYZE SELECT * FROM t",
        "DESCRIBE t",
        "COMMIT",
        "SELECT 'it''s an update' FROM t",
        "SELECT c FROM sbtest1 WHERE id=5021",
        "SELECT DISTINCT c FROM sbtest3 WHERE id BETWEEN 4 AND 103 ORDER BY c",
        "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 1 AND 100",
        "SELECT COUNT(*), MAX(id), IFNULL(a, 0), DATE_FORMAT(NOW(), '%Y') FROM t GROUP BY a",
        "SELECT * FROM t WHERE id IN (1, 2) AND EXISTS (SELECT 1 FROM u WHERE u.id = t.id)",
        "SELECT CAST(x AS DECIMAL(10, 2)), REPLACE(name, 'a', 'b') FROM t",
        "/*!40101 SET NAMES utf8 */",
        "SELECT 1 /* a comment */ -- and another\n",
        "select 1;",
        "SELECT @@version, @@session.sql_mode",
    ] {
        assert_eq!(my(r), READ, "{r}");
    }
    for r in [
        "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
        "SELECT x::numeric(10,2), now() - interval '1 day' FROM t",
        "SELECT * FROM generate_series(1, 3) AS g(n)",
        "SELECT row_number() OVER (PARTITION BY a ORDER BY b) FROM t",
        "SET search_path TO app, public",
        "SET LOCAL statement_timeout = '5s'",
        "SHOW work_mem",
        "BEGIN ISOLATION LEVEL REPEATABLE READ",
        "EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM t",
        "SELECT 'C:\\'",
        "SELECT pg_catalog.lower('X')",
        "DECLARE c CURSOR FOR SELECT * FROM t",
        "FETCH 10 FROM c",
        "TABLE t",
        "VALUES (1), (2)",
    ] {
        assert_eq!(pg(r), READ, "{r}");
    }
}

#[test]
fn what_the_adversarial_round_replayed_on_mariadb_is_skipped() {
    for (sql, class) in [
        (
            "SET STATEMENT max_statement_time=1 FOR DELETE FROM t",
            Class::Write,
        ),
        ("BEGIN NOT ATOMIC DELETE FROM t; END", Class::Server),
        ("SELECT f()", Class::Server),
        ("DO f()", Class::Server),
        ("DO NEXTVAL(s)", Class::Server),
        ("SELECT NEXTVAL(s)", Class::Server),
        ("SELECT NEXT VALUE FOR s", Class::Server),
        ("SELECT PREVIOUS VALUE FOR s", Class::Server),
        ("/*!99999 SELECT */ DROP TABLE t", Class::Write),
        (
            "/*!99999 SELECT */ SET GLOBAL max_connections=77",
            Class::Server,
        ),
        (
            "/*!99999 SELECT */ GRANT ALL ON *.* TO 'pwn2'@'localhost'",
            Class::Server,
        ),
        ("/*!99999 SHOW */ SHUTDOWN", Class::Server),
        ("/*M!100000 DROP TABLE t */ SELECT 1", Class::Write),
        ("DO SLEEP(20)", Class::Server),
        ("SELECT SLEEP(20)", Class::Server),
        ("SELECT BENCHMARK(1000000, MD5('x'))", Class::Server),
        ("SELECT GET_LOCK('dbtax.run', 0)", Class::Server),
        (
            "BEGIN NOT ATOMIC KILL IS_USED_LOCK('dbtax.run'); END",
            Class::Server,
        ),
        ("KILL 12", Class::Server),
        ("SELECT * FROM t INTO OUTFILE '/tmp/x'", Class::Write),
        ("SELECT a INTO @x FROM t", Class::Write),
        ("SELECT LOAD_FILE('/etc/passwd')", Class::Server),
        ("SET SESSION TRANSACTION READ WRITE", Class::Server),
        ("SET tx_read_only = 0", Class::Server),
        ("SET @@session.transaction_read_only = 0", Class::Server),
        ("START TRANSACTION READ WRITE", Class::Server),
        ("SET STATEMENT tx_read_only=0 FOR SELECT 1", Class::Server),
        ("SELECT 1; DROP TABLE t", Class::Server),
        ("CALL p()", Class::Server),
        ("PREPARE s FROM 'DELETE FROM t'", Class::Server),
        ("EXECUTE s", Class::Server),
        ("SELECT a FROM t WHERE id = 1 FOR UPDATE", Class::Server),
        ("SELECT a FROM t LOCK IN SHARE MODE", Class::Server),
        ("LOCK TABLES t WRITE", Class::Server),
        ("SET GLOBAL general_log = 0", Class::Server),
        ("set @@global.slow_query_log = 1", Class::Server),
        ("SET PERSIST max_connections = 10", Class::Server),
        ("SET sql_log_bin = 0", Class::Server),
        ("SET PASSWORD = 'x'", Class::Server),
        ("SHUTDOWN", Class::Server),
        ("FLUSH LOGS", Class::Server),
        ("CREATE USER x", Class::Server),
        ("INSTALL SONAME 'server_audit'", Class::Server),
        ("STOP SLAVE", Class::Server),
        ("INSERT INTO t VALUES (1)", Class::Write),
        ("update t set a = 1", Class::Write),
        ("REPLACE INTO t VALUES (1)", Class::Write),
        ("CREATE TABLE t (a int)", Class::Write),
        ("TRUNCATE t", Class::Write),
        ("ANALYZE TABLE t", Class::Write),
        ("EXPLAIN ANALYZE DELETE FROM t", Class::Write),
        ("/*!40101 INSERT INTO t VALUES (1) */", Class::Write),
        ("SELECT 1 --1, SLEEP(5)", Class::Server),
        ("SELECT 'a\\' , SLEEP(5), 'b'", Class::Server),
        // Read with backslash escapes the server refuses this one (unterminated); without,
        // it is a read.
        ("SELECT 'a\\' , SLEEP(5), '", Class::Read),
        ("SELECT 'unterminated", Class::Server),
        ("SELECT db.f(1)", Class::Server),
        ("SELECT `f`(1)", Class::Server),
    ] {
        assert_eq!(my(sql).class, class, "{sql}: {:?}", my(sql));
    }
}

#[test]
fn what_the_adversarial_round_replayed_on_postgresql_is_skipped() {
    for (sql, class) in [
        ("SELECT 1; DELETE FROM t", Class::Server),
        ("DO $$ BEGIN DELETE FROM t; END $$", Class::Server),
        ("DO 'BEGIN DELETE FROM t; END'", Class::Server),
        ("SELECT * INTO t2 FROM t", Class::Write),
        ("EXPLAIN ANALYZE CREATE TABLE t2 AS SELECT 1", Class::Write),
        ("EXPLAIN ANALYZE EXECUTE p(1)", Class::Server),
        ("EXPLAIN (ANALYZE) DELETE FROM t", Class::Write),
        ("SELECT \"setval\"('s', 1)", Class::Server),
        ("SELECT 'a\\', setval('s', 1), 'b'", Class::Server),
        (
            "SELECT pg_create_physical_replication_slot('x')",
            Class::Server,
        ),
        ("SELECT pg_stat_reset()", Class::Server),
        ("SELECT pg_terminate_backend(42)", Class::Server),
        (
            "EXPLAIN ANALYZE SELECT pg_terminate_backend(42)",
            Class::Server,
        ),
        ("SELECT pg_cancel_backend(42)", Class::Server),
        ("SELECT pg_reload_conf()", Class::Server),
        (
            "SELECT set_config('log_statement', 'none', false)",
            Class::Server,
        ),
        ("SELECT pg_sleep(10)", Class::Server),
        ("SELECT pg_advisory_lock(1)", Class::Server),
        ("SELECT nextval('s')", Class::Server),
        ("SELECT lo_import('/etc/passwd')", Class::Server),
        ("SELECT pg_read_file('/etc/passwd')", Class::Server),
        ("COPY t TO PROGRAM 'touch /tmp/pwned'", Class::Server),
        ("COPY (SELECT 1) TO '/tmp/x'", Class::Server),
        ("SELECT f(1)", Class::Server),
        ("SELECT public.f(1)", Class::Server),
        ("SET default_transaction_read_only = off", Class::Server),
        (
            "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
            Class::Server,
        ),
        ("BEGIN READ WRITE", Class::Server),
        ("RESET ALL", Class::Server),
        ("DISCARD ALL", Class::Server),
        ("SET ROLE postgres", Class::Server),
        ("SET SESSION AUTHORIZATION postgres", Class::Server),
        ("COMMIT PREPARED 'x'", Class::Server),
        ("PREPARE TRANSACTION 'x'", Class::Server),
        ("PREPARE p AS DELETE FROM t", Class::Server),
        ("LISTEN x", Class::Server),
        ("NOTIFY x", Class::Server),
        ("VACUUM t", Class::Server),
        ("CHECKPOINT", Class::Server),
        ("ALTER SYSTEM SET log_statement = 'none'", Class::Server),
        ("CREATE EXTENSION pgaudit", Class::Server),
        (
            "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
            Class::Write,
        ),
        ("SELECT a FROM t FOR NO KEY UPDATE", Class::Server),
        ("SELECT $tag$ unterminated", Class::Server),
        ("SELECT 1 /* unterminated /* nested */", Class::Server),
    ] {
        assert_eq!(pg(sql).class, class, "{sql}: {:?}", pg(sql));
    }
}

#[test]
fn a_function_the_user_allows_by_name_is_replayed() {
    let allowed = vec!["price_of".to_string(), "app.tax".to_string()];
    assert_eq!(
        classify(
            "SELECT price_of(3), app.tax(1)",
            Dialect::Postgres,
            &allowed
        ),
        READ
    );
    assert_eq!(
        classify("SELECT other.tax(1)", Dialect::Postgres, &allowed).reason,
        reason::FUNCTION
    );
    // Allowing a function never allows what it is said to do elsewhere.
    assert_eq!(
        classify("SELECT price_of(1) FOR UPDATE", Dialect::Postgres, &allowed).reason,
        reason::LOCK
    );
}

#[test]
fn each_skip_says_why() {
    assert_eq!(my("SELECT SLEEP(1)").reason, reason::SLEEP);
    assert_eq!(my("SELECT 1; SELECT 2").reason, reason::SEVERAL);
    assert_eq!(pg("SELECT nextval('s')").reason, reason::SEQUENCE);
    assert_eq!(pg("SELECT pg_terminate_backend(1)").reason, reason::SIGNAL);
    assert_eq!(
        my("SET SESSION TRANSACTION READ WRITE").reason,
        reason::LIFTS
    );
    assert_eq!(pg("DO $$ BEGIN END $$").reason, reason::CODE);
    assert_eq!(my("EXECUTE s").reason, reason::PREPARED);
    assert_eq!(my("DELETE FROM t").reason, reason::WRITES);
    assert_eq!(my("SELECT 'x").reason, reason::UNREADABLE);
}

/// Two statements of one shape (`number_shape`) have one verdict: statements glued at random
/// from pieces that matter to the lexer and the classifier (quotes, escapes, comments,
/// executable comments with their versions, `$`, `@`, names and functions with digits in
/// them, hex and exponents), with numbers of two kinds in the same places. Pairs whose shapes
/// differ are not compared; most pairs share theirs.
#[test]
fn statements_of_one_shape_have_one_verdict() {
    let pieces = [
        "SELECT ",
        " ",
        "\n",
        "x",
        "e",
        "t",
        ".",
        ",",
        "(",
        ")",
        ";",
        "'",
        "\"",
        "`",
        "\\",
        "$",
        "$$",
        "$a$",
        "@",
        "@@",
        "!",
        "-",
        "--",
        "#",
        "/*",
        "*/",
        "/*!",
        "/*M!",
        "sha",
        "sleep",
        "get_lock",
        "pg_sleep",
        "sleep(",
        "DROP TABLE t",
        " FROM t",
        " INTO OUTFILE 'f'",
        "0x",
        "E'",
        "_",
        "é",
        "{N}",
        "{N}",
        "{N}",
        "{N}",
    ];
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut same, mut compared) = (0, 0);
    for _ in 0..30_000 {
        let n = 1 + next() % 14;
        let parts: Vec<&str> = (0..n)
            .map(|_| pieces[(next() % pieces.len() as u64) as usize])
            .collect();
        let mut fill = |parts: &[&str]| -> String {
            parts
                .iter()
                .map(|p| match *p {
                    "{N}" => {
                        let digits = 1 + next() % 7;
                        (0..digits)
                            .map(|_| char::from(b'0' + (next() % 10) as u8))
                            .collect()
                    }
                    p => p.to_string(),
                })
                .collect()
        };
        let (a, b) = (fill(&parts), fill(&parts));
        let (mut sa, mut sb) = (String::new(), String::new());
        number_shape(&a, &mut sa);
        number_shape(&b, &mut sb);
        compared += 1;
        if sa != sb {
            continue;
        }
        same += 1;
        for d in [Dialect::Mysql, Dialect::Postgres] {
            assert_eq!(
                classify(&a, d, &[]),
                classify(&b, d, &[]),
                "{a:?} / {b:?} ({d:?}), shape {sa:?}"
            );
        }
    }
    assert!(
        same * 2 > compared,
        "{same} of {compared} pairs shared a shape"
    );
    // Numbers in names, in hex and exponents, in versions and after `$` or `@` are the shape.
    for (a, b) in [
        ("SELECT sha1(x)", "SELECT sha9(x)"),
        ("SELECT 0x1F", "SELECT 0x2F"),
        ("SELECT 1e5", "SELECT 1e6"),
        ("SELECT /*!50000 1 */", "SELECT /*!99999 1 */"),
        ("SELECT $1", "SELECT $2"),
        ("SELECT @1", "SELECT @2"),
        ("SELECT 1 FROM t1", "SELECT 1 FROM t2"),
    ] {
        let (mut sa, mut sb) = (String::new(), String::new());
        number_shape(a, &mut sa);
        number_shape(b, &mut sb);
        assert_ne!(sa, sb, "{a} / {b}");
    }
    let mut s = String::new();
    number_shape(
        "SELECT c FROM sbtest1 WHERE id=5003 AND k BETWEEN 4 AND 103",
        &mut s,
    );
    assert_eq!(s, "SELECT c FROM sbtest1 WHERE id=0 AND k BETWEEN 0 AND 0");
}

#[test]
fn every_spelling_of_a_setting_that_lifts_read_only_is_skipped() {
    // Issue 50: `@@` forms and quoted names name the same settings as their bare words.
    for s in [
        "SET @@tx_read_only = 0",
        "SET @@transaction_read_only = OFF",
        "SET @@SESSION.transaction_read_only = 0",
        "SET @@local.tx_read_only := 0",
        "SET @@session.`tx_read_only` = 0",
        "SET `transaction_read_only` = 0",
        "SET STATEMENT @@tx_read_only = 0 FOR SELECT 1",
    ] {
        assert_eq!(my(s).reason, reason::LIFTS, "{s}");
    }
    assert_eq!(my("SET @@sql_log_bin = 0").class, Class::Server);
    assert_eq!(my("SET @@persist.max_connections = 5").class, Class::Server);
    for s in [
        "SET \"default_transaction_read_only\" = off",
        "SET SESSION \"transaction_read_only\" TO off",
        "SET LOCAL \"Default_Transaction_Read_Only\" = false",
        "RESET \"default_transaction_read_only\"",
    ] {
        assert_eq!(pg(s).reason, reason::LIFTS, "{s}");
    }
    // A user variable of the same name is the user's own.
    assert_eq!(my("SET @tx_read_only = 0"), READ);
}

#[test]
fn ansi_quotes_reading_is_one_of_the_readings() {
    // Under ANSI_QUOTES a double quote opens a name (no escape inside) while single quotes
    // still escape with a backslash: here the sleep is code. Read with backslashes escaping
    // in both quotes it hides in a string, and with none the last quote is unterminated.
    let sql = "SELECT \"\\\", SLEEP(5), '\\'' -- \"";
    assert_eq!(my(sql).reason, reason::SLEEP, "{sql}");
    let lock = "SELECT \"a\\\", GET_LOCK('app', 0), '\\'' -- \" FROM t";
    assert_eq!(my(lock).reason, reason::LOCK, "{lock}");
    // Plain reads with both quotes and backslashes stay reads.
    assert_eq!(my("SELECT \"a\\\\b\", 'c\\'d' FROM t"), READ);
}
