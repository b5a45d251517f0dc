//! Against a real MariaDB: one server for this whole test binary (its scenarios in
//! bench.rs, run.rs, safety.rs and restart.rs), started by dbtax's own
//! managed-server code on a private socket (and 127.0.0.1 on a free port), stopped by its pid
//! at the end. The server is the "user's own server" here: dbtax reaches it by URL, so the
//! journal, restore and privilege checks are the real ones. A small harness runs the
//! scenarios in order and prints libtest's summary line.

mod bench;
mod capacity;
mod clients;
#[path = "../common/mod.rs"]
mod common;
mod cpus;
mod disturbance;
mod live;
mod locks;
mod remote;
mod replay;
mod restart;
mod run;
mod safety;

use common::{json_of, text, validate_results};
use dbtax::server::ManagedConfig;
use dbtax::server::mysql::managed::ManagedServer;
use mysql::prelude::Queryable;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Ctx {
    /// The server; stopped (by its pid) when the harness drops the context.
    _server: ManagedServer,
    socket: PathBuf,
    port: u16,
    state_dir: PathBuf,
    work: PathBuf,
}

impl Ctx {
    fn url(&self, schema: &str) -> String {
        format!(
            "mysql://root@localhost/{schema}?socket={}",
            self.socket.display()
        )
    }

    fn url_as(&self, user: &str, pass: &str, schema: &str) -> String {
        format!(
            "mysql://{user}:{pass}@localhost/{schema}?socket={}",
            self.socket.display()
        )
    }

    fn root(&self) -> mysql::Conn {
        common::root(&self.socket)
    }

    fn var(&self, name: &str) -> String {
        common::global_var(&self.socket, name)
    }

    fn set(&self, name: &str, value: &str) {
        self.root()
            .query_drop(format!("SET GLOBAL {name} = {value}"))
            .unwrap();
    }

    /// The number a `SELECT COUNT(*) ...` returns, as root.
    fn count(&self, sql: &str) -> u64 {
        let n: Option<u64> = self.root().query_first(sql).unwrap();
        n.unwrap_or(0)
    }

    fn dbtax(&self) -> Command {
        common::dbtax(&self.state_dir)
    }

    fn run<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Output {
        self.dbtax().args(args).output().expect("running dbtax")
    }

    /// `dbtax run` on this server: `features` against off, short trials, results in `out`.
    fn run_args(
        &self,
        schema: &str,
        features: &[&str],
        threads: &str,
        repeats: &str,
        out: &Path,
    ) -> Vec<String> {
        common::run_args(&self.url(schema), features, threads, repeats, out)
    }

    /// Write an experiment file into the work directory.
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.work.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn out_dir(&self, name: &str) -> PathBuf {
        self.work.join(name)
    }

    fn journals(&self) -> usize {
        std::fs::read_dir(self.state_dir.join("journal"))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
}

fn cell<'a>(v: &'a serde_json::Value, variant: &str, threads: u64) -> &'a serde_json::Value {
    v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["variant"] == variant && c["threads"] == threads)
        .unwrap_or_else(|| panic!("no cell {variant}@{threads}"))
}

fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn main() {
    // Kept alive until the harness returns: the scenarios' files live there.
    let work = tempfile::tempdir().unwrap();
    common::harness(
        crate::scenarios![Ctx;
        bench::bench_prints_one_trial_as_json_over_the_socket,
        bench::tcp_means_tcp,
        bench::query_workload_stops_after_exactly_n_queries,
        bench::sysbench_tables_are_reused_as_they_are,
        run::dry_run_prints_statements_and_changes_nothing,
        run::too_many_threads_for_the_server_are_said_by_the_dry_run,
        run::a_query_the_server_refuses_is_bad_input_and_changes_nothing,
        run::a_failing_setup_is_bad_input_and_changes_nothing,
        run::run_measures_and_restores_every_setting,
        safety::a_bad_out_directory_fails_before_anything_changes,
        run::audit_plugin_is_loaded_only_in_its_variants_and_removed_after,
        run::compare_target_interleaves_two_servers_block_by_block,
        run::compare_target_refuses_the_same_server_twice,
        safety::ctrl_c_restores_settings_and_keeps_partial_results,
        safety::kill_9_then_restore_puts_settings_back,
        safety::a_user_without_privileges_gets_exit_2_and_nothing_changes,
        safety::a_wrong_password_gets_exit_2_without_echoing_it,
        run::features_reports_support_on_the_target,
        bench::bench_on_a_managed_server_prints_one_trial,
        restart::a_restart_only_feature_is_refused_on_a_server_dbtax_does_not_manage,
        restart::the_binary_log_is_switched_by_restarting_a_managed_server,
        live::live_refuses_bad_input_before_any_change,
        live::live_finds_the_general_logs_cost_on_production_traffic,
        live::a_live_guard_that_trips_switches_the_feature_off,
        live::a_live_latency_guard_switches_the_feature_off,
        live::a_killed_live_run_is_put_back_by_restore,
        run::factors_in_a_file_report_each_factor_within_the_other,
        safety::the_disk_guard_stops_a_run_before_the_log_passes_its_limit,
        bench::a_rate_is_held_and_latency_counts_from_the_intended_start,
        run::a_run_at_half_of_capacity_reports_added_latency_and_restores,
        capacity::a_latency_objective_finds_each_variants_capacity_and_restores,
        cpus::a_managed_server_starts_on_its_own_cpus,
        cpus::a_users_unbound_server_is_not_moved_and_the_results_say_they_shared,
        cpus::a_users_bound_server_keeps_its_cpus_and_the_load_takes_the_rest,
        cpus::a_busy_server_slow_to_answer_its_status_is_not_taken_for_other_clients,
        remote::logs_on_a_server_elsewhere_are_refused_unless_accepted,
        disturbance::a_cpu_hog_marks_its_blocks_disturbed_and_they_are_run_again,
        disturbance::the_quick_demo_reports_server_cpu_at_its_headline_and_no_other_clients,
        clients::the_lean_clients_survive_big_rows_errors_and_killed_connections,
        clients::the_lean_client_logs_in_with_a_password_over_tcp,
        clients::each_protocol_sends_what_its_connector_sends,
        clients::connections_killed_while_the_server_refuses_new_ones_come_back,
        clients::idle_connections_the_server_closes_are_made_again,
        clients::the_servers_own_logs_read_back_as_the_sessions_ran_them,
        replay::a_captured_slow_log_replays_with_its_cost_per_statement,
        replay::a_general_logs_prepared_statements_replay_prepared,
        replay::a_log_that_cannot_be_replayed_here_is_bad_input,
        replay::a_2_gb_log_replays_in_bounded_memory,
        locks::a_replay_of_harmful_statements_changes_nothing,
        locks::the_session_and_the_login_refuse_what_the_classifier_would_miss,
        locks::production_code_and_sql_modes_do_not_get_past_the_locks,
        ],
        || {
            let port = common::free_port();
            let server = ManagedServer::start(&ManagedConfig {
                port: Some(port),
                ..Default::default()
            })
            .expect("starting the test MariaDB (make test installs mariadb-server)");
            Ctx {
                socket: server.socket(),
                _server: server,
                port,
                state_dir: work.path().join("state"),
                work: work.path().to_path_buf(),
            }
        },
    );
}
