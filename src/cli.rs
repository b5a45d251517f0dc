//! Flags and their docs only (clap derive). Durations and sizes are typed here by their value
//! parsers; `config` turns the rest into validated values. Nothing below `config` sees a flag.
//! The doc comments below are the command line's help text (`ssh://[user@]host`, `<name>`),
//! not links nor HTML: the doc tool's link and tag checks are off for this file.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use crate::client::mode::QueryMode;
use crate::workload::WorkloadKind;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

fn workload_kind() -> impl TypedValueParser<Value = WorkloadKind> {
    PossibleValuesParser::new(WorkloadKind::ALL.map(WorkloadKind::name))
        .map(|s| WorkloadKind::parse(&s).expect("clap checked the possible values"))
}

fn query_mode() -> impl TypedValueParser<Value = QueryMode> {
    PossibleValuesParser::new(QueryMode::ALL.map(QueryMode::name))
        .map(|s| QueryMode::parse(&s).expect("clap checked the possible values"))
}

/// What will turning on a server feature cost your database? dbtax drives a real
/// MySQL/MariaDB server at a sweep of client concurrencies, switches the feature on and off in
/// interleaved trials, and reports the overhead with a 95% confidence interval.
#[derive(Debug, Parser)]
#[command(name = "dbtax", version, about, long_about = None)]
#[command(after_help = "Examples:
  dbtax demo --quick                      general log, slow log, audit vs off on a throwaway MariaDB
  dbtax demo --quick --target managed:postgres     log_statement, log_min_duration, pgaudit on PostgreSQL
  dbtax bench --workload point-select --threads 8 --duration 5s
  dbtax run --feature general-log --threads 1,8 --precision 3
  dbtax run experiment.toml --target 'mysql://root:pw@127.0.0.1:3306/test' --dry-run
  dbtax features --target 'mysql://root@localhost/?socket=/run/mysqld/mysqld.sock'
  dbtax restore --target 'mysql://root:pw@127.0.0.1:3306/'")]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one measurement (one trial) and print QPS, latency and CPU per query.
    #[command(after_help = "Examples:
  dbtax bench                                           point selects, 8 clients, 10 s, throwaway MariaDB
  dbtax bench --workload read-write --threads 16 --duration 30s --json
  dbtax bench --workload query --query 'select 1' --threads 64 --queries 1000000
  dbtax bench --rate 2000 --threads 8                   open loop: 2000 events/s, latency from each intended start
  dbtax bench --rate 50% --json                         half of the capacity measured first
  dbtax bench --target 'mysql://root@localhost/test?socket=/run/mysqld/mysqld.sock'
  dbtax bench --target managed:postgres --workload select-only --threads 32
  dbtax bench --target 'postgres://postgres@/bench?host=/run/postgresql' --workload tpcb-like
  dbtax bench --target 'postgres://app@db:5432/shop?sslmode=verify-full&sslrootcert=ca.crt'
  dbtax bench --threads 128 --client-threads 2          two threads multiplexing the connections (epoll)
  dbtax bench --agents ssh://client1*3,ssh://client2 --threads 64 --target 'mysql://u:pw@db:3306/'")]
    Bench(Box<BenchArgs>),
    /// Run an experiment: variants × thread counts in interleaved, randomized blocks.
    #[command(after_help = "Examples:
  dbtax run --feature general-log --feature slow-log --threads 1,4,16 --repeats 10
  dbtax run --feature general-log --threads 8 --precision 3 --budget 3m
  dbtax run experiment.toml --out results/ --dry-run
  dbtax run --feature slow-log --rate 50%               added latency and server CPU at half of capacity
  dbtax run --feature general-log --rate 25%,50%,80% --threads 8
  dbtax run --feature general-log --at-rate 2000/s --production-cores 16   the bill at your rate
  dbtax run --feature general-log --slo p99=5ms --threads 8 --repeats 6    capacity within p99 <= 5 ms, with and without
  dbtax run experiment.toml --target 'mysql://root:pw@127.0.0.1:3306/'
  dbtax run --preset pg-logging --quick                 log_statement, log_min_duration, pgaudit on PostgreSQL
  dbtax run --target 'postgres://postgres:pw@127.0.0.1:5432/app' --feature auto-explain -w select-only
  dbtax run --feature slow-log --agents ssh://client1,ssh://client2 --agent-bin copy --target 'mysql://u:pw@db:3306/'
  dbtax run --log slow.log --feature audit --threads 8 --queries-per-trial 50000   your own statements, the same every trial
  dbtax run --log postgresql.log --pace recorded --feature pgaudit --replay-user temporary --target 'postgres://postgres@/app?host=/run/postgresql'
  dbtax run --log slow.log --feature slow-log --replay-user reader --target 'mysql://root:pw@db:3306/'   clients log in as a user of yours that may only read
  dbtax run --log general.log --from 10m --to 20m --sessions 16 --dry-run          what would be replayed

The first variant is the baseline. Overhead = 100 x (1 - qps_variant / qps_baseline),
estimated from block-paired ratios with a 95% t interval. Settings are journaled before any
change and restored at exit, on error and on Ctrl-C; `dbtax restore` after a kill -9.")]
    Run(Box<RunArgs>),
    /// General log, slow log and audit vs off, on a throwaway MariaDB or PostgreSQL.
    #[command(after_help = "Examples:
  dbtax demo            threads 1, 4, 16, 64 (about 5 minutes)
  dbtax demo --quick    threads 1 and 16, fewer blocks (under 2 minutes)
  dbtax demo --quick --target managed:postgres")]
    Demo(DemoArgs),
    /// What a feature costs on production's own traffic: switched on and off in short
    /// randomized windows on a running server, no load of dbtax's.
    #[command(after_help = "Examples:
  dbtax live --feature general-log --for 20m --target 'mysql://root:pw@db:3306/' --dry-run
  dbtax live --feature general-log --for 20m --window 20s --target 'mysql://root:pw@127.0.0.1:3306/'
  dbtax live --feature log-statement --for 30m --max-on 25% --target 'postgres://postgres@/app?host=/run/postgresql'
  dbtax live --feature slow-log --for 10m --server-host ssh://db --target 'mysql://root:pw@db:3306/' --yes

The server's own clients are the workload. Each window is paired with the one beside it (one
off, one on, in a random order), so a trend in the traffic hits both sides alike; the
differences in rate and mix between a pair's windows are taken into account. A guard
(sessions running, statement time, the error rate, the disk, Ctrl-C) switches the feature
off at once and ends the run (exit 1). Settings are journaled before any change and restored at exit; `dbtax restore`
after a kill -9.")]
    Live(Box<LiveArgs>),
    /// List the feature catalog and whether the target supports each feature.
    #[command(after_help = "Examples:
  dbtax features
  dbtax features --target managed:postgres
  dbtax features --target 'mysql://root:pw@127.0.0.1:3306/'")]
    Features(FeaturesArgs),
    /// Re-render a results.json: the table, and on request HTML, CSV and SVG charts.
    #[command(after_help = "Examples:
  dbtax report dbtax-results/20261130-101500-demo/results.json
  dbtax report results.json --html report.html --csv results.csv --svg charts/")]
    Report(ReportArgs),
    /// Two results side by side (one experiment on two servers, machines or versions).
    #[command(after_help = "Examples:
  dbtax compare mariadb/results.json mysql/results.json
  dbtax compare a.json b.json --html compare.html")]
    Compare(CompareArgs),
    /// List the presets: the four seed studies, reproduced.
    Presets,
    /// Log-device probe: durable small appends four ways, by writer threads.
    #[command(after_help = "Examples:
  dbtax fsync                          in the current directory, 5 s per measurement
  dbtax fsync --dir /var/lib/mysql --duration 2s --json")]
    Fsync(FsyncArgs),
    /// Load for a coordinator on another host: started by `run`/`bench --agents` through SSH,
    /// speaking JSON lines on stdin/stdout. Not for interactive use.
    #[command(after_help = "Examples:
  dbtax run --feature slow-log --agents ssh://client1,ssh://client2 --target 'mysql://u:pw@db:3306/'
  dbtax agent --stdio      what the coordinator runs on each agent host")]
    Agent(AgentCmdArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = "Examples:
  dbtax completions bash > ~/.local/share/bash-completion/completions/dbtax
  dbtax completions zsh > ~/.zfunc/_dbtax
  dbtax completions fish > ~/.config/fish/completions/dbtax.fish
  make install          the binary, the man page and the bash, zsh and fish completions")]
    Completions(CompletionsArgs),
    /// Print the man page (roff), made from the same definitions as --help.
    #[command(after_help = "Examples:
  dbtax man > dbtax.1 && man ./dbtax.1
  dbtax man run > dbtax-run.1
  dbtax man --dir target/man          every page")]
    Man(ManArgs),
    /// Record the server's own traffic for a while (the slow log at long_query_time=0, or
    /// log_min_duration_statement=0), put the setting back, and write what was logged to a
    /// file ready for `run --log`.
    #[command(after_help = "Examples:
  dbtax capture --for 60s --target 'mysql://root:pw@127.0.0.1:3306/' --out shop.log
  dbtax capture --for 5m --target 'postgres://postgres@/shop?host=/run/postgresql' --max-log-bytes 2G
  dbtax capture --for 60s --target 'mysql://dbtax:pw@db1:3306/' --server-host ssh://admin@db1 --out db1.log
  dbtax run --log shop.log --feature general-log --target 'mysql://root:pw@127.0.0.1:3306/' --replay-user temporary

The setting is journaled before it changes and put back at the end, on error and on Ctrl-C
(what was captured until then is written); after a kill -9, `dbtax restore` puts it back.
The disk guard stops the capture early when the log's filesystem would fall under 10% free
or the log grows past --max-log-bytes. The log is read where the server runs: on this
machine, or for a server elsewhere through --server-host's probe there (over ssh, as run's).")]
    Capture(CaptureArgs),
    /// Put back every setting an interrupted run changed (after kill -9 or a crash).
    #[command(after_help = "Examples:
  dbtax restore --target 'mysql://root:pw@127.0.0.1:3306/'
  dbtax restore --list       show the journals that are waiting
  dbtax restore --target 'postgres://postgres@/app?host=/run/postgresql' \
      --restart-cmd 'systemctl restart postgresql'   after a kill -9 during a restart-only variant")]
    Restore(RestoreArgs),
}

/// Where the server is, and how to start a managed one.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Target")]
pub struct TargetArgs {
    /// managed:mariadb or managed:postgres (a throwaway server), mysql://user:pass@host:port/db,
    /// mysql://user@localhost/db?socket=/path/mysqld.sock, postgres://user:pass@host:port/db
    /// or postgres://user@/db?host=/socket/dir.
    /// [default: managed:mariadb]
    #[arg(long, short = 't', env = "DBTAX_TARGET")]
    pub target: Option<String>,
    /// Schema dbtax creates its tables in (default: the URL's database, else `dbtax`).
    #[arg(long)]
    pub schema: Option<String>,
    /// Managed targets: the server binary (default: mariadbd or mysqld on PATH or /usr/sbin).
    #[arg(long, value_name = "PATH")]
    pub server_bin: Option<PathBuf>,
    /// Managed targets: an extra server option, e.g. innodb_buffer_pool_size=1G (repeatable).
    #[arg(long = "server-opt", value_name = "NAME=VALUE")]
    pub server_opts: Vec<String>,
    /// Managed targets: also listen on 127.0.0.1 at this TCP port.
    #[arg(long)]
    pub port: Option<u16>,
    /// Where the server and dbtax's load run when they share this machine, e.g.
    /// server=1,load=0. A managed server is started on the server's CPUs; a user's server is
    /// never moved (bind it yourself, e.g. `taskset -acp 1 PID`). Default: an even split of
    /// the CPUs for a managed server; the CPUs a user's bound server leaves free.
    #[arg(long, value_name = "server=LIST,load=LIST", conflicts_with = "no_pin")]
    pub cpus: Option<String>,
    /// Let server and load share every core, and say so in the results (the scheduler is then
    /// part of the number).
    #[arg(long)]
    pub no_pin: bool,
}

/// What the clients do.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Workload")]
pub struct WorkloadArgs {
    /// Workload.
    #[arg(long, short = 'w', value_parser = workload_kind())]
    pub workload: Option<WorkloadKind>,
    /// sbtest tables (sbtest1..N).
    #[arg(long)]
    pub tables: Option<u32>,
    /// Rows per sbtest table when dbtax creates them (existing tables are reused as they are).
    #[arg(long)]
    pub table_size: Option<u64>,
    /// pgbench workloads: the scale (100,000 accounts each) when dbtax creates the pgbench
    /// tables; tables made by `pgbench -i -s N` are reused as they are.
    #[arg(long)]
    pub scale: Option<u32>,
    /// How the clients send statements, as your application's connector does: text (the
    /// values written into the statement: the default of MySQL Connector/J, PDO,
    /// mysqlclient, psycopg2; sysbench --db-ps-mode=disable, pgbench -M simple); prepared
    /// (prepared once per connection, executed with bound values: sysbench's default,
    /// pgbench -M prepared, JDBC on PostgreSQL once a statement is reused); prepared-uncached
    /// (MySQL family: prepared, without MariaDB's metadata cache, as libmysqlclient);
    /// extended (PostgreSQL: parsed at every execution, pgbench -M extended). The server
    /// does different work for each, and a feature's cost follows it.
    #[arg(long, value_name = "MODE", value_parser = query_mode())]
    pub protocol: Option<QueryMode>,
    /// SQL for the query workload; several statements separated by ';' (implies --workload query).
    #[arg(long, short = 'q')]
    pub query: Option<String>,
    /// A file of SQL statements for the query workload.
    #[arg(long, value_name = "FILE")]
    pub query_file: Option<PathBuf>,
    /// SQL run once before the query workload (e.g. CREATE TABLE ...).
    #[arg(long)]
    pub setup: Option<String>,
    /// Replay a captured log as the workload (implies --workload replay): a MariaDB/MySQL
    /// general or slow log, or a PostgreSQL stderr log (%c or %p in log_line_prefix),
    /// csvlog or JSON log (jsonlog, CloudNativePG, a Cloud SQL export). Statements that change data run only with --replay-writes
    #[arg(help_heading = "Replay", long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// The log's format when it cannot be told from its first lines: general, slow,
    /// postgres (stderr), csvlog, jsonlog
    #[arg(help_heading = "Replay", long, value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// PostgreSQL's log_line_prefix as the server has it (SHOW log_line_prefix), when the
    /// lines' own is not recognised: '%t [%p]: [%l-1] user=%u,db=%d ' (PostgreSQL's escapes;
    /// the session is %c, else %p)
    #[arg(help_heading = "Replay", long, value_name = "PREFIX")]
    pub log_line_prefix: Option<String>,
    /// Replay only the busiest N sessions of the slice
    #[arg(help_heading = "Replay", long, value_name = "N")]
    pub sessions: Option<u32>,
    /// Start the slice here: an offset from the log's start (90s, 5m) or a time as the log
    /// writes it ('2026-12-01 10:00:00')
    #[arg(help_heading = "Replay", long, value_name = "TIME")]
    pub from: Option<String>,
    /// End the slice here at the latest (same forms as --from)
    #[arg(help_heading = "Replay", long, value_name = "TIME")]
    pub to: Option<String>,
    /// asap: each client's next statement once the last is answered (throughput overhead);
    /// recorded: each statement at its recorded time (latency added, as --rate); 2x: twice
    /// as fast as recorded
    #[arg(help_heading = "Replay", long, value_name = "asap|recorded|Nx")]
    pub pace: Option<String>,
    /// Replay statements that change data or schema too (each trial changes what the next
    /// reads): on a managed target, or with --i-understand-writes
    #[arg(help_heading = "Replay", long)]
    pub replay_writes: bool,
    /// Allow --replay-writes on a server dbtax did not start (results.json records it)
    #[arg(help_heading = "Replay", long)]
    pub i_understand_writes: bool,
    /// At most this many statements in the slice (default 200000)
    #[arg(help_heading = "Replay", long, value_name = "N")]
    pub max_statements: Option<u64>,
    /// The login the replaying clients use, one that may only read: a user of yours (its
    /// password in $DBTAX_REPLAY_PASSWORD; checked to hold no more than SELECT), or
    /// `temporary`: dbtax creates one with read privileges only, journaled, and drops it at
    /// the end (and `dbtax restore` does after a kill). Default on a managed target:
    /// temporary; required on any other unless --replay-writes
    #[arg(help_heading = "Replay", long, value_name = "USER|temporary")]
    pub replay_user: Option<String>,
    /// Stored functions or procedures a replayed statement may call, by name (name or
    /// schema.name, comma-separated); a call of any other function dbtax does not know to
    /// only read is skipped and counted
    #[arg(
        help_heading = "Replay",
        long,
        value_name = "NAME,...",
        value_delimiter = ','
    )]
    pub replay_functions: Vec<String>,
}

/// `dbtax bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Client threads, one connection each.
    #[arg(long, short = 'c', default_value_t = 8, allow_negative_numbers = true,
          value_parser = crate::units::threads)]
    pub threads: u32,
    /// Measured time, e.g. 10s, 500ms, 2m.
    #[arg(long, short = 'd', default_value = "10s", value_parser = crate::units::duration)]
    pub duration: Duration,
    /// Settle time before measuring.
    #[arg(long, default_value = "2s", value_parser = crate::units::duration)]
    pub warmup: Duration,
    /// Stop after N statements in total, split over the threads (mysqlslap's
    /// --number-of-queries); the whole run is measured, no warmup.
    #[arg(long, value_name = "N", conflicts_with = "rate")]
    pub queries: Option<u64>,
    #[command(flatten)]
    pub rate: RateArgs,
    #[command(flatten)]
    pub agents: AgentArgs,
    #[command(flatten)]
    pub clients: ClientArgs,
    /// Print one JSON object (a trial, with results.json's field names) instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// `dbtax agent`.
#[derive(Debug, Args)]
pub struct AgentCmdArgs {
    /// Speak the agent protocol on stdin/stdout (the only mode).
    #[arg(long, required = true)]
    pub stdio: bool,
    /// This binary is a temporary copy made by `--agent-bin copy`: delete it at start.
    #[arg(long, hide = true)]
    pub remove_binary: bool,
}

/// Load from other hosts (agents) instead of this process.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Load")]
pub struct AgentArgs {
    /// Client hosts that generate the load: ssh://[user@]host[:port], comma-separated or
    /// repeated; `local` runs an agent here. Threads (and a rate) are split evenly, or by
    /// weight with `host*N`. This process then only measures the server and changes settings.
    /// SSH is run as `ssh` ($DBTAX_SSH_COMMAND overrides it, as GIT_SSH_COMMAND does).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub agents: Vec<String>,
    /// The dbtax binary on the agent hosts (default: `dbtax` on their PATH), or `copy` to copy
    /// this one to a temporary file there (same architecture checked first).
    #[arg(long, value_name = "PATH|copy")]
    pub agent_bin: Option<String>,
    /// The server's URL as the agents must reach it (default: the one this process uses).
    #[arg(long, value_name = "URL")]
    pub agent_target: Option<String>,
}

/// How this process's own clients run.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Load")]
pub struct ClientArgs {
    /// Drive the connections from N threads, each multiplexing its share through epoll
    /// (pgbench's model: less of the load's CPU, and at many connections less server CPU
    /// per query than an application's clients cause); 0, the default: one thread per
    /// connection, each waiting for its answers as an application's threads do.
    #[arg(long, value_name = "N")]
    pub client_threads: Option<u32>,
}

/// Open loop: a fixed rate instead of as fast as the server answers.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Load")]
pub struct RateArgs {
    /// Open loop at R events per second in total (e.g. 2000 or 2000/s), or a share of the
    /// capacity that dbtax measures first in closed loop (50%); `run` takes a list
    /// (25%,50%,80%). Latency is then measured from each event's intended start, and `run`
    /// adds the bill at each rate (server cores, log a day, added latency). `--at-rate` is
    /// the same flag.
    #[arg(long, visible_alias = "at-rate", value_name = "R")]
    pub rate: Option<String>,
    /// With --rate: how starts are spaced, poisson (independent arrivals) or uniform.
    /// [default: poisson]
    #[arg(long, value_name = "KIND")]
    pub arrival: Option<String>,
    /// With --rate: skip (and count) events that would be sent later than this after their
    /// intended start, like pgbench's --latency-limit (default: send every event, late or not).
    #[arg(long, value_name = "TIME", value_parser = crate::units::duration)]
    pub skip_late: Option<Duration>,
}

/// `dbtax run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Experiment file (TOML). Flags override its fields.
    #[arg(help_heading = "Experiment", conflicts_with = "preset")]
    pub file: Option<PathBuf>,
    /// Run a preset (see `dbtax presets`). Flags override its fields.
    #[arg(help_heading = "Experiment", long, short = 'p')]
    pub preset: Option<String>,
    /// The experiment's name (results folder, report title); default: the file's, the
    /// preset's, or made from the variants (`general-log-slow-log-vs-off`).
    #[arg(help_heading = "Experiment", long)]
    pub name: Option<String>,
    /// With --preset: a small version that takes about two minutes.
    #[arg(
        help_heading = "Experiment",
        long,
        requires = "preset",
        conflicts_with = "full"
    )]
    pub quick: bool,
    /// With --preset: the study's whole thread range.
    #[arg(help_heading = "Experiment", long, requires = "preset")]
    pub full: bool,
    /// Run the same experiment on a second target and compare (as study 000 compared servers).
    #[arg(help_heading = "Target", long, value_name = "T2")]
    pub compare_target: Option<String>,
    /// Restart-only settings on a server dbtax does not manage: a shell command that restarts
    /// it with the options in $DBTAX_SERVER_OPTS and returns when it is up.
    #[arg(help_heading = "Target", long, value_name = "CMD")]
    pub restart_cmd: Option<String>,
    /// A catalog feature to compare against off (repeatable; one variant each).
    #[arg(
        help_heading = "Experiment",
        long = "feature",
        short = 'f',
        value_name = "NAME"
    )]
    pub features: Vec<String>,
    /// Thread counts, e.g. 1,4,16,64.
    #[arg(help_heading = "Experiment", long, value_delimiter = ',', allow_negative_numbers = true,
          value_parser = crate::units::threads)]
    pub threads: Option<Vec<u32>>,
    /// Measured time per trial.
    #[arg(help_heading = "Experiment", long, value_parser = crate::units::duration)]
    pub trial: Option<Duration>,
    /// Each trial runs exactly N statements (split over the clients) and is timed, instead
    /// of running for --trial: with a replay, every trial the same statements
    #[arg(help_heading = "Experiment", long, value_name = "N")]
    pub queries_per_trial: Option<u64>,
    /// The longest settle after each switch, before measuring: the warm-up ends sooner, once
    /// the throughput of successive 100 ms windows shows no trend (never before 0.3 s). Default 1s.
    #[arg(help_heading = "Experiment", long, value_parser = crate::units::duration)]
    pub warmup: Option<Duration>,
    /// Repeats of each variant per thread count: a block runs every variant once in a random
    /// order (with two variants a block is four trials, two of each: two repeats).
    #[arg(help_heading = "Statistics", long, conflicts_with = "precision")]
    pub repeats: Option<u32>,
    /// Add blocks until every 95% CI half-width is at most P percentage points (or --budget).
    #[arg(help_heading = "Statistics", long, value_name = "P")]
    pub precision: Option<f64>,
    /// Time budget for --precision, e.g. 3m.
    #[arg(help_heading = "Statistics", long, value_parser = crate::units::duration)]
    pub budget: Option<Duration>,
    /// Stop before the log files grow by more than this many bytes (e.g. 2G, 500M).
    #[arg(help_heading = "Safety", long, value_parser = crate::units::bytes)]
    pub max_log_bytes: Option<u64>,
    /// Capacity at a latency objective, e.g. p99=5ms (p50, p95, p99 or p99.9; a list, or the
    /// flag again): instead of fixed loads, each variant's highest rate at which that quantile
    /// of the latency (from each event's intended start) stays within it, found by a search
    /// whose steps are interleaved blocks, with a 95% interval and what a feature costs of
    /// it. At the headline's thread count (or the highest); --repeats sets its measured blocks
    #[arg(help_heading = "Statistics", long, value_name = "Q=BOUND")]
    pub slo: Vec<String>,
    /// Rate mode's bill: the cores of the production server, when it has more than the one
    /// measured (the words then say the figures are a lower bound).
    #[arg(help_heading = "Statistics", long, value_name = "N")]
    pub production_cores: Option<u32>,
    /// On a server that is not on this machine, switch features that write a log file
    /// anyway: dbtax cannot watch that file's size there (no disk guard, no log bytes per
    /// query); results.json records that you accepted it
    #[arg(help_heading = "Safety", long)]
    pub unguarded_logs: bool,
    /// A block in which other processes (not the server, not dbtax) used more CPU than this
    /// on the server's or this host, in percent of one core, is left out of every figure
    /// and run again (default 10; "off" keeps every block)
    #[arg(help_heading = "Safety", long, value_name = "PCT|off", value_parser = crate::units::disturbance)]
    pub max_disturbance: Option<crate::units::Limit>,
    /// The database's host, when the server is not on this machine: dbtax starts
    /// `dbtax agent --stdio` there through ssh (as for --agents; --agent-bin names the
    /// binary, `copy` copies this one), which reads the server's CPU, the log files' sizes
    /// and room, and the other processes' CPU there: server CPU per query, log bytes per
    /// query and the disk guard, as for a local server
    #[arg(help_heading = "Target", long, value_name = "ssh://[user@]host[:port]")]
    pub server_host: Option<String>,
    /// How long the probe on --server-host may stay silent before the run stops (its
    /// results kept, its settings put back, a log feature switched off first); a reading
    /// later than 15 s costs only its trial, which is run again (default 60s)
    #[arg(help_heading = "Safety", long, value_name = "TIME", value_parser = crate::units::duration)]
    pub probe_silence: Option<std::time::Duration>,
    #[command(flatten)]
    pub open: RateArgs,
    #[command(flatten)]
    pub agents: AgentArgs,
    #[command(flatten)]
    pub clients: ClientArgs,
    /// Output directory (default ./dbtax-results/<timestamp>-<name>/).
    #[arg(help_heading = "Output", long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Seed for the trial order (default: from the clock; results.json records it, so a run
    /// can be replayed).
    #[arg(help_heading = "Statistics", long)]
    pub seed: Option<u64>,
    /// The thread count the headline is about (default: the highest); fixed before the run,
    /// never picked from the results.
    #[arg(help_heading = "Statistics", long, value_name = "N")]
    pub headline_threads: Option<u32>,
    /// The cost below which a feature is negligible to you, in percent (e.g. 2%): when the
    /// interval spans zero, the words say whether its upper end is below it. Default: an
    /// interval wholly within ±2% is called negligible
    #[arg(help_heading = "Statistics", long, value_name = "PCT", value_parser = crate::units::percent)]
    pub negligible: Option<f64>,
    /// Skip the warm-up round (a block at every thread count first, not counted).
    #[arg(help_heading = "Statistics", long)]
    pub no_warmup_round: bool,
    /// Print the plan and the exact statements; change nothing.
    #[arg(help_heading = "Output", long)]
    pub dry_run: bool,
    /// Print results.json to stdout instead of the table.
    #[arg(help_heading = "Output", long)]
    pub json: bool,
}

/// `dbtax demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Threads 1 and 16 and fewer blocks: under 2 minutes.
    #[arg(long)]
    pub quick: bool,
    /// Output directory (default ./dbtax-results/<timestamp>-demo/).
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Managed server binary.
    #[arg(long, value_name = "PATH")]
    pub server_bin: Option<PathBuf>,
    /// The throwaway server: managed:mariadb, or managed:postgres (log_statement,
    /// log_min_duration_statement and pgaudit on pgbench's select-only).
    #[arg(
        long,
        short = 't',
        default_value = "managed:mariadb",
        value_name = "TARGET"
    )]
    pub target: String,
    /// Let the server and the load share every core (by default the server gets one half of
    /// the CPUs, the load the other); the results then say so.
    #[arg(long)]
    pub no_pin: bool,
    /// The time the measured blocks may take (default 270 s, 100 s with --quick): the
    /// demo's precision goal is met or the budget ends, whichever comes first.
    #[arg(long, value_parser = crate::units::duration)]
    pub budget: Option<std::time::Duration>,
}

/// `dbtax features`.
#[derive(Debug, Args)]
pub struct FeaturesArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// List the catalog without connecting to any server.
    #[arg(long)]
    pub offline: bool,
}

/// `dbtax restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// List pending journals instead of restoring.
    #[arg(long)]
    pub list: bool,
    /// When the interrupted run had restarted the server with restart-only options: a shell
    /// command that restarts it (given no options in $DBTAX_SERVER_OPTS), to finish the job.
    #[arg(long, value_name = "CMD")]
    pub restart_cmd: Option<String>,
}

/// `dbtax capture`.
#[derive(Debug, Args)]
pub struct CaptureArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// How long to log every statement, e.g. 60s, 5m.
    #[arg(long = "for", value_name = "TIME", value_parser = crate::units::duration)]
    pub duration: std::time::Duration,
    /// Where to write the captured log (default: ./dbtax-capture-<time>.log).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// What logs the statements: general-log (the default on MariaDB/MySQL: it reaches every
    /// session at once, a pool's connections opened before the capture too; it has no
    /// Rows_sent) or slow-log (long_query_time = 0: it reaches only sessions opened after it
    /// on MariaDB, and records each statement's rows and duration; the default on
    /// PostgreSQL, where log_min_duration_statement = 0 reaches every session)
    #[arg(long, value_name = "FEATURE", value_parser = ["general-log", "slow-log"])]
    pub source: Option<String>,
    /// Stop early once the log has grown by this much, e.g. 500M, 2G.
    #[arg(help_heading = "Safety", long, value_parser = crate::units::bytes)]
    pub max_log_bytes: Option<u64>,
    /// The database's host, when the server is not on this machine: dbtax starts `dbtax
    /// agent --stdio` there through ssh (as `run --server-host`), which reads the log there
    /// and sends what it gained; the disk guard reads that host's disk
    #[arg(help_heading = "Target", long, value_name = "ssh://[user@]host[:port]")]
    pub server_host: Option<String>,
    /// The dbtax binary on that host (default: `dbtax` on its PATH), or `copy` to copy this
    /// one to a temporary file there
    #[arg(help_heading = "Target", long, value_name = "PATH|copy")]
    pub agent_bin: Option<String>,
}

/// `dbtax live`.
#[derive(Debug, Args)]
pub struct LiveArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// A feature to measure (repeatable: each is switched alone against off).
    #[arg(long = "feature", short = 'f', value_name = "FEATURE", required = true)]
    pub features: Vec<String>,
    /// How long to run the windows, e.g. 20m.
    #[arg(long = "for", value_name = "TIME", value_parser = crate::units::duration)]
    pub duration: std::time::Duration,
    /// One window, settle time included.
    #[arg(long, value_name = "TIME", default_value = "20s", value_parser = crate::units::duration)]
    pub window: std::time::Duration,
    /// Not measured after each switch.
    #[arg(long, value_name = "TIME", default_value = "2s", value_parser = crate::units::duration)]
    pub settle: std::time::Duration,
    /// The share of the time a feature may be on, e.g. 50%, 25%.
    #[arg(
        help_heading = "Safety",
        long,
        value_name = "SHARE",
        default_value = "50%"
    )]
    pub max_on: String,
    /// Sessions running in an on window above this many times the off windows' level switch
    /// the feature off and end the run.
    #[arg(
        help_heading = "Safety",
        long,
        value_name = "FACTOR",
        default_value_t = 2.0
    )]
    pub guard: f64,
    /// Statement time in an on window above this many times what the off windows showed for
    /// the same statements (per shape, where the server sums them: performance_schema's
    /// digests, pg_stat_statements) switches the feature off and ends the run.
    #[arg(
        help_heading = "Safety",
        long,
        value_name = "FACTOR",
        default_value_t = 2.0
    )]
    pub latency_guard: f64,
    /// An error rate in an on window above the off windows' by more than this (statements
    /// in error with performance_schema; transactions rolled back on PostgreSQL) switches
    /// the feature off and ends the run, e.g. 1%.
    #[arg(
        help_heading = "Safety",
        long,
        value_name = "SHARE",
        default_value = "1%"
    )]
    pub error_guard: String,
    /// Stop early once the feature logs have grown by this much, e.g. 500M.
    #[arg(help_heading = "Safety", long, value_parser = crate::units::bytes)]
    pub max_log_bytes: Option<u64>,
    /// Do not ask for confirmation (needed when not on a terminal).
    #[arg(help_heading = "Safety", long)]
    pub yes: bool,
    /// Print the schedule, the signals this server offers and the guards; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Results folder (default: `./dbtax-results/<time>-live/`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The schedule's seed (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print results.json instead of the table.
    #[arg(long)]
    pub json: bool,
    /// The database's host, when the server is not on this machine: its CPU is read there
    /// through `dbtax agent --stdio` over ssh (as `run --server-host`)
    #[arg(help_heading = "Target", long, value_name = "ssh://[user@]host[:port]")]
    pub server_host: Option<String>,
    /// The dbtax binary on that host (default: `dbtax` on its PATH), or `copy`
    #[arg(help_heading = "Target", long, value_name = "PATH|copy")]
    pub agent_bin: Option<String>,
}

/// `dbtax report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A results.json written by `dbtax run` or `dbtax demo`.
    pub results: PathBuf,
    /// Write the self-contained HTML report here.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write one CSV row per trial here.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write each chart as an SVG file into this directory.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
}

/// `dbtax compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The first results.json (A).
    pub a: PathBuf,
    /// The second results.json (B).
    pub b: PathBuf,
    /// Also write the comparison as a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// `dbtax fsync`.
#[derive(Debug, Args)]
pub struct FsyncArgs {
    /// Directory on the device to probe (a temporary file is written there and removed).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Time per (method, threads) measurement.
    #[arg(long, default_value = "5s", value_parser = crate::units::duration)]
    pub duration: Duration,
    /// Writer thread counts.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
    pub threads: Vec<u32>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `dbtax completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    pub shell: clap_complete::Shell,
}

/// `dbtax man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// A subcommand's page (dbtax-run(1)); default: dbtax(1).
    pub command: Option<String>,
    /// Write every page into this folder instead (dbtax.1, dbtax-run.1, …).
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}
