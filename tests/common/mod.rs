//! What every test binary shares: the dbtax binary, the committed fixtures, validation
//! against the committed results.json schema, and the arguments of a short `dbtax run`.
//! Each binary uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The dbtax binary under test, with its own state directory and no DBTAX_TARGET.
pub fn dbtax(state_dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dbtax"));
    c.env("DBTAX_STATE_DIR", state_dir)
        .env_remove("DBTAX_TARGET");
    c
}

/// A committed results.json fixture (real runs).
pub fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A fixture, loaded as `dbtax report` loads it.
pub fn fixture(name: &str) -> dbtax::results::Results {
    dbtax::report::load(&fixture_path(name)).unwrap()
}

/// Where `v` breaks the committed schema (empty: it matches).
pub fn schema_errors(v: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../schema/results.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect()
}

/// Read a results.json and assert it matches the schema.
pub fn validate_results(path: &Path) -> serde_json::Value {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let errors = schema_errors(&v);
    assert!(
        errors.is_empty(),
        "{} does not match the schema: {errors:?}",
        path.display()
    );
    v
}

/// Short trials on small tables: the suite's runs take seconds.
pub const SHORT_TRIALS: [&str; 6] = [
    "--trial",
    "0.6s",
    "--warmup",
    "0.2s",
    "--table-size",
    "2000",
];

/// `dbtax run` on `target`: `features` against off, short trials, results in `out`.
pub fn run_args(
    target: &str,
    features: &[&str],
    threads: &str,
    repeats: &str,
    out: &Path,
) -> Vec<String> {
    let mut a = vec!["run".to_string(), "--target".into(), target.to_string()];
    for f in features {
        a.extend(["--feature".to_string(), f.to_string()]);
    }
    a.extend(["--threads", threads, "--repeats", repeats, "--out"].map(String::from));
    a.push(out.display().to_string());
    a.extend(SHORT_TRIALS.map(String::from));
    a
}
