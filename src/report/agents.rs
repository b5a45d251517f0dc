//! The agents of a run, for the table and the HTML report: who made the load, how much of
//! it, at what client CPU, and how far apart their measured windows were.

use crate::results::Results;

/// One agent over the whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRow {
    /// As given (`ssh://host`, `local`).
    pub host: String,
    /// Its host name, cores and round trip at hello.
    pub about: String,
    /// Statements it ran in measured windows.
    pub queries: u64,
    /// Its CPU per statement, µs, over every trial.
    pub client_cpu_us_per_query: f64,
    /// The worst skew of its windows, ms.
    pub worst_skew_ms: f64,
}

/// Per agent, summed over every trial; empty when this process made the load.
pub fn rows(r: &Results) -> Vec<AgentRow> {
    r.agents
        .iter()
        .enumerate()
        .map(|(i, a)| {
            // Trials list the active agents in the run's order; the i-th of the run is the
            // entry with its label at the same rank among equal labels.
            let rank = r.agents[..i].iter().filter(|b| b.host == a.host).count();
            let mine = r
                .cells
                .iter()
                .flat_map(|c| &c.trials)
                .filter_map(|t| t.agents.iter().filter(|x| x.host == a.host).nth(rank));
            let (mut queries, mut cpu, mut skew) = (0u64, 0.0, 0.0f64);
            for t in mine {
                queries += t.queries;
                cpu += t.client_cpu_us_per_query * t.queries as f64;
                skew = skew.max(t.skew_ms);
            }
            AgentRow {
                host: a.host.clone(),
                about: format!(
                    "{}, {} cores, {}, round trip {:.2} ms",
                    a.hostname, a.cores, a.arch, a.rtt_ms
                ),
                queries,
                client_cpu_us_per_query: if queries > 0 {
                    cpu / queries as f64
                } else {
                    0.0
                },
                worst_skew_ms: skew,
            }
        })
        .collect()
}

/// One line about the agents for the table, or None without agents.
pub fn summary(r: &Results) -> Option<String> {
    if r.agents.is_empty() {
        return None;
    }
    let trials: Vec<_> = r.cells.iter().flat_map(|c| &c.trials).collect();
    let worst = trials
        .iter()
        .filter_map(|t| t.agent_skew_ms)
        .fold(0.0, f64::max);
    let flagged = trials.iter().filter(|t| t.skewed).count();
    let mut s = format!(
        "Load from {} agents (threads split by weight); windows in step within {worst:.1} ms{}:\n",
        r.agents.len(),
        if flagged > 0 {
            format!(", {flagged} trial(s) SKEWED (more than a tenth of the trial)")
        } else {
            String::new()
        }
    );
    for a in rows(r) {
        s += &format!(
            "  {:<28} {:>12} queries  {:>7.2} µs/query client CPU  skew ≤ {:.1} ms  ({})\n",
            a.host, a.queries, a.client_cpu_us_per_query, a.worst_skew_ms, a.about
        );
    }
    Some(s)
}
