//! results.csv: one row per trial, stable column names (documented in docs/guide.md, "Output");
//! a live run's is one row per window (`report::view::live::CSV_COLUMNS`).
//! A capacity search's trials (`--slo`) are rows too: the objective and the step's phase in
//! the last two columns, blank for every other trial.

use crate::results::Results;

/// The header, in order.
pub const COLUMNS: [&str; 29] = [
    "experiment",
    "variant",
    "threads",
    "trial",
    "qps",
    "tps",
    "queries",
    "errors",
    "duration_s",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "latency_max_ms",
    "client_cpu_us_per_query",
    "server_cpu_us_per_query",
    "log_bytes_per_query",
    "started_at",
    "block",
    "rate_level",
    "rate_asked",
    "rate_achieved",
    "saturated",
    "service_p50_ms",
    "service_p99_ms",
    "schedule_lag_p50_ms",
    "schedule_lag_p99_ms",
    "schedule_lag_max_ms",
    "slo",
    "capacity_phase",
];

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.4}")).unwrap_or_default()
}

/// Render every trial as CSV.
pub fn render(r: &Results) -> String {
    if let Some(l) = &r.live {
        return super::view::live::csv(l);
    }
    let mut out = COLUMNS.join(",") + "\n";
    for c in &r.cells {
        for (i, t) in c.trials.iter().enumerate() {
            let row = [
                field(&r.name),
                field(&c.variant),
                c.threads.to_string(),
                (i + 1).to_string(),
                format!("{:.2}", t.qps),
                format!("{:.2}", t.tps),
                t.queries.to_string(),
                t.errors.to_string(),
                format!("{:.4}", t.duration_s),
                format!("{:.4}", t.latency_ms.p50),
                format!("{:.4}", t.latency_ms.p95),
                format!("{:.4}", t.latency_ms.p99),
                format!("{:.4}", t.latency_ms.max),
                format!("{:.4}", t.client_cpu_us_per_query),
                opt(t.server_cpu_us_per_query),
                opt(t.log_bytes_per_query),
                field(&r.started_at),
                t.block.to_string(),
                field(c.rate.as_ref().map(|x| x.level.as_str()).unwrap_or("")),
                opt(t.rate.as_ref().map(|x| x.asked)),
                opt(t.rate.as_ref().map(|x| x.achieved)),
                t.rate
                    .as_ref()
                    .map(|x| x.saturated.to_string())
                    .unwrap_or_default(),
                opt(t.service_latency_ms.as_ref().map(|x| x.p50)),
                opt(t.service_latency_ms.as_ref().map(|x| x.p99)),
                opt(t.schedule_lag_ms.as_ref().map(|x| x.p50)),
                opt(t.schedule_lag_ms.as_ref().map(|x| x.p99)),
                opt(t.schedule_lag_ms.as_ref().map(|x| x.max)),
                String::new(),
                String::new(),
            ];
            out += &row.join(",");
            out.push('\n');
        }
    }
    for c in &r.capacity {
        for (i, st) in c.steps.iter().enumerate() {
            let achieved = st.held.as_ref().map(|h| h.achieved);
            let l = &st.latency_ms;
            let mut row: Vec<String> = vec![
                field(&r.name),
                field(&c.variant),
                c.threads.to_string(),
                (i + 1).to_string(),
                opt(achieved),
            ];
            // tps … log_bytes_per_query: not kept for a search's trials.
            row.extend(std::iter::repeat_n(String::new(), 4));
            row.extend([l.p50, l.p95, l.p99, l.max].map(|x| format!("{x:.4}")));
            row.extend(std::iter::repeat_n(String::new(), 3));
            row.extend([
                field(&r.started_at),
                st.block.to_string(),
                String::new(),
                opt(Some(st.rate)),
                opt(achieved),
                st.held
                    .as_ref()
                    .map(|h| h.saturated.to_string())
                    .unwrap_or_default(),
            ]);
            row.extend(std::iter::repeat_n(String::new(), 5));
            row.extend([field(&c.slo), field(&st.phase)]);
            debug_assert_eq!(row.len(), COLUMNS.len());
            out += &row.join(",");
            out.push('\n');
        }
    }
    out
}
