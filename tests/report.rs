//! The renderers on fixed results.json files (real runs, committed as fixtures): snapshot
//! tests of every exporter, the schema, and the CLI commands that read results alone.

mod common;

use common::{fixture, fixture_path};
use dbtax::report::page::compare;
use dbtax::report::{self, csv};

#[test]
fn fixtures_match_the_committed_schema() {
    for f in [
        "general-log.json",
        "audit-durability.json",
        "capacity.json",
        "live.json",
        "live-lab.json",
    ] {
        let v = serde_json::to_value(fixture(f)).unwrap();
        let errors = common::schema_errors(&v);
        assert!(errors.is_empty(), "{f}: {errors:?}");
    }
}

#[test]
fn table_snapshot() {
    insta::assert_snapshot!(
        "table_general_log",
        report::table(&fixture("general-log.json"))
    );
    insta::assert_snapshot!(
        "table_audit_durability",
        report::table(&fixture("audit-durability.json"))
    );
}

#[test]
fn csv_snapshot_has_one_row_per_trial() {
    let r = fixture("general-log.json");
    let text = csv::render(&r);
    let trials: usize = r.cells.iter().map(|c| c.trials.len()).sum();
    assert_eq!(text.lines().count(), trials + 1);
    assert_eq!(text.lines().next().unwrap(), csv::COLUMNS.join(","));
    insta::assert_snapshot!("csv_general_log", text);
}

#[test]
fn chart_snapshots() {
    let r = fixture("general-log.json");
    for c in report::charts(&r) {
        insta::assert_snapshot!(format!("chart_{}", c.name), c.svg);
    }
}

#[test]
fn html_snapshot_stands_alone() {
    let page = report::html(&fixture("general-log.json"));
    for forbidden in ["<script", "<link", " src=", "url(", "@import"] {
        assert!(
            !page.contains(forbidden),
            "the report must load nothing: found {forbidden}"
        );
    }
    assert!(
        page.contains("The general log"),
        "the answer in words comes first"
    );
    assert_eq!(page.matches("<svg").count(), 5, "five charts inline");
    insta::assert_snapshot!("html_general_log", page);
}

#[test]
fn compare_snapshot() {
    let a = fixture("general-log.json");
    let mut b = a.clone();
    b.target.server_version = "another server".into();
    for c in &mut b.cells {
        c.qps_median *= 0.5;
        for t in &mut c.trials {
            t.qps *= 0.5;
        }
    }
    let text = compare::render_text(&a, &b);
    assert!(text.contains("0.500 ["), "{text}");
    assert!(text.contains("unpaired"), "{text}");
    insta::assert_snapshot!("compare_text", text);
    let page = compare::render_html(&a, &b);
    assert_eq!(page.matches("<svg").count(), 2);
}

#[test]
fn compare_shows_each_sides_bill_at_each_rate() {
    let mut a = fixture("rate.json");
    // (The fixture predates the bill: it is computed from its trials, as a run does.)
    a.bill = dbtax::stats::bill::bills(&a);
    assert!(!a.bill.is_empty(), "a rate-mode run has a bill");
    let mut b = a.clone();
    b.target.url = "mysql://other".into();
    // B's server spent twice the CPU per query on the feature's trials.
    for bill in &mut b.bill {
        if let Some(c) = &mut bill.cpu_cores {
            c.value *= 2.0;
            c.ci95 = [c.ci95[0] * 2.0, c.ci95[1] * 2.0];
        }
    }
    // And A's last bill is one B did not run.
    let only_a = a.bill.last().unwrap().clone();
    b.bill.retain(|x| {
        !(x.level == only_a.level && x.threads == only_a.threads && x.variant == only_a.variant)
    });
    let rows = compare::bills(&a, &b);
    assert_eq!(rows.len(), a.bill.len());
    let first = &rows[0];
    let (wa, wb) = (first.a.as_deref().unwrap(), first.b.as_deref().unwrap());
    assert!(
        wa.starts_with("At ") && wb.starts_with("At "),
        "{wa} / {wb}"
    );
    assert_ne!(wa, wb, "each side its own figures");
    assert!(rows.last().unwrap().b.is_none());
    let text = compare::render_text(&a, &b);
    assert!(text.contains("The bill at each rate:"), "{text}");
    assert!(text.contains(wa) && text.contains(wb), "{text}");
    assert!(text.contains("no bill at this rate"), "{text}");
    // Rate-mode cells are compared at the same rate level, and named by it.
    for p in compare::pairs(&a, &b) {
        assert_eq!(
            p.a.rate.as_ref().unwrap().level,
            p.b.rate.as_ref().unwrap().level
        );
    }
    assert!(text.contains("general-log @50%"), "{text}");
    let page = compare::render_html(&a, &b);
    assert!(page.contains("<h2>The bill at each rate</h2>"));
    // A run with no bill (closed loop) adds nothing.
    let closed = fixture("general-log.json");
    assert!(!compare::render_text(&closed, &closed).contains("bill"));
}

#[test]
fn compare_pairs_blocks_only_when_the_servers_ran_interleaved() {
    let mut a = fixture("general-log.json");
    // (The fixture predates the block numbers: its trials are in block order.)
    for c in &mut a.cells {
        for (i, t) in c.trials.iter_mut().enumerate() {
            t.block = i as u32;
        }
    }
    let mut b = a.clone();
    b.target.url = "mysql://other".into();
    // B is 20% slower, with a little noise of its own on top of A's block-to-block drift.
    for c in &mut b.cells {
        for t in &mut c.trials {
            t.qps *= 0.8 * (1.0 + 0.01 * f64::from(t.block % 3));
        }
    }
    let width = |r: compare::Ratio| r.ci95[1] - r.ci95[0];
    let (unpaired, paired) = {
        let ps = compare::pairs(&a, &b);
        let p = &ps[0];
        (
            compare::b_over_a(p, false).unwrap(),
            compare::b_over_a(p, true).unwrap(),
        )
    };
    for r in [unpaired, paired] {
        assert!(r.ci95[0] < 0.81 && r.ci95[1] > 0.8, "{r}");
    }
    assert!(
        width(paired) < width(unpaired) / 3.0,
        "pairing removes A's drift: {paired} vs {unpaired}"
    );
    // Separate runs are compared unpaired; an interleaved pair (each names the other) paired.
    assert!(compare::render_text(&a, &b).contains("Welch"));
    a.paired_with = Some(b.target.url.clone());
    b.paired_with = Some(a.target.url.clone());
    let text = compare::render_text(&a, &b);
    assert!(text.contains("interleaved"), "{text}");
    assert!(text.contains(&paired.to_string()), "{text}");
}

#[test]
fn report_and_compare_commands_read_results_alone() {
    let dir = tempfile::tempdir().unwrap();
    let fx = fixture_path("general-log.json");
    let state = dir.path().join("state");
    let dbtax = || assert_cmd::Command::from_std(common::dbtax(&state));
    let out = dbtax()
        .arg("report")
        .arg(&fx)
        .arg("--html")
        .arg(dir.path().join("r.html"))
        .arg("--csv")
        .arg(dir.path().join("r.csv"))
        .arg("--svg")
        .arg(dir.path().join("charts"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("threads 25"));
    assert!(dir.path().join("r.html").exists() && dir.path().join("r.csv").exists());
    assert_eq!(
        std::fs::read_dir(dir.path().join("charts"))
            .unwrap()
            .count(),
        5
    );
    let out = dbtax()
        .args(["compare"])
        .arg(&fx)
        .arg(&fx)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("1.00"));
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"not\": \"results\"}").unwrap();
    let out = dbtax().arg("report").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a dbtax results.json"));
}

#[test]
fn a_rate_mode_run_reports_added_latency_and_saturation() {
    // A real run: general log vs off at 50% and 120% of the calibrated capacity.
    let r = fixture("rate.json");
    let errors = common::schema_errors(&serde_json::to_value(&r).unwrap());
    assert!(errors.is_empty(), "{errors:?}");
    let text = report::table(&r);
    assert!(text.contains("threads 2, rate 50%"), "{text}");
    assert!(
        text.contains("SATURATED"),
        "120% of capacity is past it: {text}"
    );
    let words = dbtax::report::headlines(&r);
    assert_eq!(words.len(), 2, "one sentence per rate level: {words:?}");
    assert!(words[0].contains("at 50% of capacity"), "{words:?}");
    assert!(words[0].contains("to p50"), "{words:?}");
    assert!(words[1].contains("past its capacity"), "{words:?}");
    // How far behind the sends ran where it fell behind, and who set the pace: said only
    // where the load had CPUs of its own (this run shared both of the machine's).
    assert!(
        words[1].contains("ms behind their schedule at the median, "),
        "{words:?}"
    );
    assert!(!words[1].contains("set this pace"), "{words:?}");
    let pinned = |client_cores: f64| {
        let mut p = r.clone();
        p.cpus = Some(dbtax::host::cpus::Cpus {
            server: vec![1],
            load: vec![0],
        });
        for c in &mut p.cells {
            for t in &mut c.trials {
                t.client_cpu_us_per_query = client_cores * 1e6 / t.qps;
            }
        }
        dbtax::report::headlines(&p).remove(1)
    };
    let busy = pinned(0.97);
    assert!(
        busy.contains("used 0.97 of the 1 CPUs they had: they, not the server, set this pace"),
        "{busy}"
    );
    let idle = pinned(0.4);
    assert!(
        idle.contains("used 0.40 of the 1 CPUs they had: the server set this pace"),
        "{idle}"
    );
    let names: Vec<&str> = report::charts(&r).iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        [
            "added_latency_p50",
            "added_latency_p99",
            "latency_p99",
            "server_utilisation",
            "log_bytes"
        ]
    );
    let page = report::html(&r);
    assert!(page.contains("rate 50%") && page.contains("added p99 ms"));
    let rows = csv::render(&r);
    let header: Vec<&str> = rows.lines().next().unwrap().split(',').collect();
    let level = header.iter().position(|c| *c == "rate_level").unwrap();
    for line in rows.lines().skip(1) {
        let level_of_row = line.split(',').nth(level).unwrap();
        assert!(["50%", "120%"].contains(&level_of_row), "{line}");
    }
    insta::assert_snapshot!("table_rate", text);
    // `compare` sets two rate-mode runs side by side (the added latency, and the bill when
    // they have one: `compare_shows_each_sides_bill_at_each_rate`), and refuses to set one
    // beside a closed-loop run.
    let dir = tempfile::tempdir().unwrap();
    let fx = fixture_path("rate.json");
    let compare = |b: &std::path::Path| {
        common::dbtax(&dir.path().join("state"))
            .arg("compare")
            .arg(&fx)
            .arg(b)
            .output()
            .unwrap()
    };
    let out = compare(&fx);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("added latency A") && text.contains("general-log @120%"),
        "{text}"
    );
    let out = compare(&fixture_path("general-log.json"));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("closed-loop one"));
}

/// Fewer than 3 paired blocks give no interval: the table, the words and the page say "too
/// few blocks", never a number like −112% [−262911, +100].
#[test]
fn too_few_blocks_are_said_not_computed() {
    let mut r = fixture("general-log.json");
    for c in r.cells.iter_mut() {
        c.trials.truncate(2);
        if c.variant != r.variants[0].name {
            c.overhead = None;
            c.server_cpu_delta_us = None;
        }
    }
    let text = report::table(&r);
    assert!(text.contains("too few blocks (2)"), "{text}");
    // The baseline is still the baseline, not a cell short of blocks.
    let off = text
        .lines()
        .find(|l| l.trim_start().starts_with("off "))
        .unwrap();
    assert!(off.contains("baseline"), "{off}");
    let words = dbtax::report::headlines(&r);
    assert!(
        words.iter().any(|w| w.contains("too few blocks")),
        "{words:?}"
    );
    assert!(report::html(&r).contains("too few blocks (2)"));
}

/// The steadier estimate beside the noisy one: where throughput cannot tell the cost from
/// noise and the server's CPU can (Holm's decision), the words give the CPU cost with its
/// share of the baseline's and say it is measured in CPU, not yet in throughput; where the
/// CPU difference did not pass Holm's family either, they say it is within noise.
#[test]
fn a_cost_measured_in_cpu_and_not_in_throughput_is_said_so() {
    let mut r = fixture("general-log.json");
    let name = r.variants[1].name.clone();
    // The fixture predates the headline's field: the words then take the largest count.
    let at = r.cells.iter().map(|c| c.threads).max().unwrap();
    let cell = r
        .cells
        .iter_mut()
        .find(|c| c.variant == name && c.threads == at)
        .unwrap();
    let o = cell.overhead.as_mut().unwrap();
    (o.pct, o.ci95_pct, o.significant, o.robust) = (40.0, [-5.4, 65.9], false, None);
    cell.server_cpu_delta_us = Some(dbtax::results::CpuDelta {
        estimate: dbtax::results::Estimate {
            value: 8.2,
            ci95: [7.5, 8.9],
        },
        pct_of_baseline: Some(58.2),
        p_value: Some(1e-6),
        significant: Some(true),
        blocks: 4,
    });
    let words = dbtax::report::headlines(&r).join(" ");
    assert!(
        words.contains("+8.2 [+7.5, +8.9] µs of server CPU (+58% of the baseline's)"),
        "{words}"
    );
    assert!(
        words.contains("the cost is measured in server CPU, not yet in throughput"),
        "{words}"
    );
    // The same interval, not significant once adjusted: no claim.
    let d = r
        .cells
        .iter_mut()
        .find(|c| c.variant == name && c.threads == at)
        .unwrap()
        .server_cpu_delta_us
        .as_mut()
        .unwrap();
    d.significant = Some(false);
    let words = dbtax::report::headlines(&r).join(" ");
    assert!(words.contains("server CPU within noise"), "{words}");
    assert!(!words.contains("not yet in throughput"), "{words}");
}

/// Issue 36's verdicts: each interval worded as a DBA can act on it, the same in the words,
/// the table, the HTML and results.json, with the minimum detectable effect beside it. The
/// fixture's headline cell is given each interval in turn (as the statistics would make it,
/// verdict and MDE included), and the words are a snapshot.
#[test]
fn each_verdict_is_worded_in_every_form_with_its_detectable_effect() {
    use dbtax::results::Verdict;
    // (name, pct, ci95, significant, p, mde, the user's negligible threshold)
    type Case = (&'static str, f64, [f64; 2], bool, f64, f64, Option<f64>);
    let cases: [Case; 7] = [
        ("cost", 8.0, [4.0, 12.0], true, 0.001, 5.1, None),
        ("likely", 18.0, [4.6, 29.6], false, 0.01, 16.3, None),
        ("negligible", 0.3, [-1.5, 1.9], false, 0.7, 2.4, None),
        ("at_most", 1.0, [-2.8, 4.8], false, 0.6, 5.4, None),
        (
            "at_most_below_yours",
            -0.8,
            [-6.5, 4.8],
            false,
            0.6,
            6.6,
            Some(5.0),
        ),
        (
            "at_most_above_yours",
            1.0,
            [-2.8, 4.8],
            false,
            0.6,
            5.4,
            Some(3.0),
        ),
        ("unstable", 5.6, [-13.1, 21.2], false, 0.5, 21.5, None),
    ];
    let mut all = String::new();
    for (name, pct, ci, significant, p_value, mde, negligible) in cases {
        let mut r = fixture("general-log.json");
        r.analysis.negligible_pct = negligible;
        r.analysis.intervals = 4;
        let variant = r.variants[1].name.clone();
        let at = r.cells.iter().map(|c| c.threads).max().unwrap();
        let cell = r
            .cells
            .iter_mut()
            .find(|c| c.variant == variant && c.threads == at)
            .unwrap();
        let o = cell.overhead.as_mut().unwrap();
        (o.pct, o.ci95_pct, o.significant, o.p_value, o.robust) =
            (pct, ci, significant, p_value, None);
        o.mde_pct = Some(mde);
        let verdict = dbtax_stats::intervals::verdict::of(o, negligible.unwrap_or(2.0));
        o.verdict = Some(verdict);
        let json = serde_json::to_value(&r).unwrap();
        let errors = common::schema_errors(&json);
        assert!(errors.is_empty(), "{name}: {errors:?}");
        let want = name
            .trim_end_matches("_below_yours")
            .trim_end_matches("_above_yours");
        let in_json = json["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["variant"] == variant.as_str() && c["threads"] == at)
            .unwrap()["overhead"]
            .clone();
        assert_eq!(in_json["verdict"], want, "{name}");
        assert_eq!(in_json["mde_pct"], mde, "{name}");
        assert_eq!(
            serde_json::to_value(verdict).unwrap(),
            want,
            "{name}: the statistics' verdict"
        );
        let words = report::headlines(&r);
        let headline = words.iter().find(|w| w.contains("general log")).unwrap();
        let table = report::table(&r);
        let row = table
            .lines()
            .rfind(|l| l.trim_start().starts_with("general-log"))
            .unwrap();
        assert!(row.contains(&format!("{mde:.1}")), "{name}: {row}");
        let html = report::html(&r);
        assert!(html.contains(&format!("<td>{mde:.1}</td>")), "{name}");
        all += &format!("{name}:\n  {headline}\n  {}\n", row.trim());
        if verdict == Verdict::Likely {
            assert!(headline.contains("not counted as measured"), "{headline}");
            assert!(!headline.contains("Holm"), "{headline}");
        }
    }
    insta::assert_snapshot!("verdicts", all);
}

/// A `--slo` run (the fixture: the general log on the managed MariaDB): the table gives each
/// capacity with its interval and the change, the words lead with it, and `compare` sets two
/// such runs side by side (B/A of the capacities) and refuses a capacity run beside another
/// kind.
#[test]
fn a_capacity_run_is_tabled_worded_and_compared() {
    let a = fixture("capacity.json");
    let text = dbtax::report::table(&a);
    assert!(text.contains("capacity at p99 ≤ 5 ms"), "{text}");
    assert!(text.contains("621/s [479, 762]"), "{text}");
    assert!(text.contains("-5.9% [-17.1, +6.9]"), "{text}");
    let words = dbtax::report::headlines(&a);
    assert_eq!(
        words[0],
        "The general log lowers the rate served at p99 ≤ 5 ms from 621/s [479, 762] to 584/s \
         [444, 725]: -5.9% [-17.1, +6.9], within noise.",
        "{words:?}"
    );
    // results.csv: a row per search trial, with its objective and phase.
    let rows = csv::render(&a);
    let steps: usize = a.capacity.iter().map(|c| c.steps.len()).sum();
    assert!(steps > 0);
    assert_eq!(rows.lines().count(), steps + 1, "{rows}");
    let header: Vec<&str> = rows.lines().next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for line in rows.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), header.len(), "{line}");
        assert_eq!(f[at("slo")], "p99 ≤ 5 ms", "{line}");
        let phase = f[at("capacity_phase")];
        assert!(
            ["calibration", "search", "measured", "set aside"].contains(&phase),
            "{line}"
        );
        let p99: f64 = f[at("latency_p99_ms")].parse().unwrap();
        assert!(p99 > 0.0 || phase == "calibration", "{line}");
    }
    assert!(rows.contains(",measured\n"), "{rows}");
    // A stall set aside is named in the words, beside the figures it left.
    let mut stalled = a.clone();
    stalled.capacity[1].note = Some(
        "1 block(s) set aside for a stall in its trials (a p99 far above its other blocks' at \
         the same rate, with no other process's CPU to explain it): this is the unstalled \
         server's capacity"
            .into(),
    );
    let said = dbtax::report::headlines(&stalled);
    assert_eq!(said[0], words[0]);
    assert!(
        said.iter()
            .any(|w| w.starts_with("General-log at p99 ≤ 5 ms: 1 block(s) set aside for a stall")),
        "{said:?}"
    );
    // B: every capacity and interval 10% lower.
    let mut b = a.clone();
    for c in &mut b.capacity {
        c.rate = c.rate.map(|x| x * 0.9);
        c.ci95 = c.ci95.map(|[lo, hi]| [lo * 0.9, hi * 0.9]);
    }
    let cmp = dbtax::report::page::compare::render_text(&a, &b);
    assert!(
        cmp.contains("general-log at p99 ≤ 5 ms: B/A ×0.900"),
        "{cmp}"
    );
    assert!(cmp.contains("B: 526/s [399, 653], -5.9%"), "{cmp}");
    let page = dbtax::report::page::compare::render_html(&a, &b);
    assert_eq!(
        page.matches("class=\"objective\"").count(),
        2,
        "each side's chart"
    );
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let out = assert_cmd::Command::from_std(common::dbtax(&state))
        .arg("compare")
        .arg(fixture_path("capacity.json"))
        .arg(fixture_path("general-log.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is a capacity run (--slo)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A live run (`dbtax live`, the general log on a MariaDB that sysbench kept busy at 1,000
/// statements/s, then 1,500 from mid-run: `bash bench/live-vs-lab.sh mariadb 120`) as every
/// renderer shows it: the table and words per feature, its verdict, one CSV row
/// per window, a page with the timelines shaded by variant, and `compare` beside a lab run
/// of the same feature at the same rate (`run --at-rate`), with the difference's interval.
#[test]
fn a_live_run_is_shown_by_every_renderer_and_set_beside_a_lab_run() {
    let r = fixture("live.json");
    let l = r.live.as_ref().unwrap();
    let table = report::table(&r);
    assert!(table.contains("production's own traffic"), "{table}");
    assert!(table.contains("server CPU per statement added"), "{table}");
    assert!(table.contains("latency per statement added"), "{table}");
    assert!(
        table.contains("general-log on production's own traffic"),
        "{table}"
    );
    // The verdict, as `run` gives it: the interval clear of zero and past the negligible.
    assert!(l.estimates[0].verdict.is_some());
    assert!(
        table.contains("verdict                     a cost, measured"),
        "{table}"
    );
    let rows = csv::render(&r);
    assert_eq!(rows.lines().count(), 1 + l.windows.len(), "{rows}");
    assert!(rows.starts_with("window,start_s,variant,pair"), "{rows}");
    assert_eq!(
        rows.lines().filter(|x| x.contains(",general-log,")).count(),
        l.slots.iter().filter(|s| s.feature.is_some()).count()
    );
    let page = report::html(&r);
    assert!(page.contains("id=\"chart-timeline\""), "timeline");
    assert!(page.contains("id=\"chart-cpu-timeline\""), "CPU timeline");
    // One band per on window in each timeline.
    let on = l.slots.iter().filter(|s| s.feature.is_some()).count();
    assert_eq!(page.matches("class=\"on\"").count(), 2 * on);
    assert!(!page.contains("http://") || !page.contains("src=\"http"));

    let lab = fixture("live-lab.json");
    let text = compare::render_text(&r, &lab);
    let live_cpu = l.estimates[0].cpu_us_per_statement.unwrap();
    let cell = lab
        .cells
        .iter()
        .find(|c| c.variant == "general-log")
        .unwrap();
    let lab_cpu = cell.server_cpu_delta_us.as_ref().unwrap().estimate.clone();
    let (d, lo, hi) = report::page::beside_live::difference(
        (live_cpu.value, live_cpu.ci95.0, live_cpu.ci95.1),
        (lab_cpu.value, lab_cpu.ci95[0], lab_cpu.ci95[1]),
    );
    assert!(
        text.contains(&format!("{d:+.2} µs [{lo:+.2}, {hi:+.2}]")),
        "{text}"
    );
    assert_eq!(
        text.contains("agree (the interval holds 0)"),
        lo <= 0.0 && hi >= 0.0,
        "{text}"
    );
    let page = compare::render_html(&r, &lab);
    assert!(page.contains("server CPU per statement added"));
}

/// A capacity run whose searches found no capacity (under a busy neighbour the objective may
/// never be met, or no block measured around it) still gets its table, page, CSV and charts,
/// which say so (the run once wrote no page at all then, and the real-server test found it).
#[test]
fn a_capacity_run_that_found_no_capacity_still_renders() {
    let mut r = fixture("capacity.json");
    for c in &mut r.capacity {
        c.rate = None;
        c.ci95 = None;
        c.bracket = None;
        c.blocks = 0;
        c.cost_pct = None;
        c.cost_ci95_pct = None;
    }
    assert!(r.capacity.iter().all(|c| !c.steps.is_empty()));
    let dir = tempfile::tempdir().unwrap();
    report::write_all(dir.path(), &r).unwrap();
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(page.contains("no capacity"), "the page says it");
    assert!(report::table(&r).contains("no capacity"));
}
