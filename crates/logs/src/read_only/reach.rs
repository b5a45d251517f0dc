//! What a replayed statement reaches on the server beyond its own text: views and functions
//! that run with another login's rights (a view's body runs as its definer on MariaDB
//! unless it says SQL SECURITY INVOKER, as its owner on PostgreSQL unless security_invoker;
//! a SECURITY DEFINER function as its definer), and PostgreSQL's row-level policies, whose
//! expressions run on every read of their table. The replay's login and read-only session
//! do not hold there: a plain `SELECT` from such a view can set a global variable, open a
//! second connection that writes (dblink), create a replication slot. So the code is read
//! before the run: a view whose body does more than read (by the classifier's own rules),
//! or names such code, a function running with its definer's rights, and a table whose
//! policy does more than read are unsafe to name, and a statement that names one is left
//! out, counted under `reason::REACHES`.

use crate::read_only::classify::{Class, classify};
use crate::read_only::lex::{Dialect, Tok, readings};
use std::collections::BTreeMap;

/// Code on the server that statements can reach, as its catalog shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerCode {
    /// Views, with their bodies (an empty body: the login cannot see it).
    pub views: Vec<CodeObject>,
    /// Functions that run with their definer's rights.
    pub definer_functions: Vec<CodeObject>,
    /// Row-level policies, as `SELECT <expression>`, by their table's name.
    pub policies: Vec<CodeObject>,
}

/// A view, a function or a policy: where it is, what it is called, its code.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodeObject {
    /// Its schema (database, on the MySQL family).
    pub schema: String,
    /// Its name (a policy: its table's).
    pub name: String,
    /// Its code, as the catalog shows it (a view: its query).
    pub definition: String,
}

/// The names a replayed statement must not name (lower-case, unqualified), each with why.
pub type Unsafe = BTreeMap<String, String>;

/// The objects of `code` a replay must not reach: functions that run with their definer's
/// rights; views and policies whose code the classifier does not show to only read (with
/// the user's `allowed` functions), cannot be seen, or names an unsafe object (to a fixed
/// point: a view over an unsafe view is unsafe).
pub fn unsafe_objects(code: &ServerCode, dialect: Dialect, allowed: &[String]) -> Unsafe {
    let mut out = Unsafe::new();
    for f in &code.definer_functions {
        out.insert(
            lower(&f.name),
            format!("{}.{} runs with its definer's rights", f.schema, f.name),
        );
    }
    let bodies: Vec<(&CodeObject, &str)> = code
        .views
        .iter()
        .map(|v| (v, "view"))
        .chain(code.policies.iter().map(|p| (p, "policy on")))
        .collect();
    for (o, kind) in &bodies {
        let why = if o.definition.trim().is_empty() {
            Some("its body cannot be read by dbtax's login".to_string())
        } else {
            let v = classify(&o.definition, dialect, allowed);
            (v.class != Class::Read).then(|| format!("its body {}", v.reason))
        };
        if let Some(why) = why {
            out.insert(
                lower(&o.name),
                format!("the {kind} {}.{}: {why}", o.schema, o.name),
            );
        }
    }
    // Views and policies that name unsafe code, until nothing changes.
    loop {
        let mut grew = false;
        for (o, kind) in &bodies {
            let name = lower(&o.name);
            if out.contains_key(&name) {
                continue;
            }
            if let Some(n) = names(&o.definition, dialect).find(|n| out.contains_key(n)) {
                out.insert(
                    name,
                    format!("the {kind} {}.{} reaches {n}", o.schema, o.name),
                );
                grew = true;
            }
        }
        if !grew {
            return out;
        }
    }
}

/// The first unsafe object `sql` names, and why it is unsafe.
pub fn reaches<'a>(sql: &str, dialect: Dialect, unsafe_: &'a Unsafe) -> Option<&'a str> {
    if unsafe_.is_empty() {
        return None;
    }
    let mut found = names(sql, dialect).filter_map(|n| unsafe_.get(&n));
    found.next().map(String::as_str)
}

/// The words and quoted names of `sql` in every reading, lower-case (a name in a string is
/// no name).
fn names(sql: &str, dialect: Dialect) -> impl Iterator<Item = String> {
    readings(sql, dialect)
        .into_iter()
        .filter_map(Result::ok)
        .flatten()
        .filter_map(|t| match t {
            Tok::Word(w) | Tok::Name(w) => Some(w.to_string()),
            _ => None,
        })
}

fn lower(s: &str) -> String {
    s.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str, definition: &str) -> CodeObject {
        CodeObject {
            schema: "app".into(),
            name: name.into(),
            definition: definition.into(),
        }
    }

    #[test]
    fn a_view_whose_body_does_more_than_read_is_unsafe_and_so_is_a_view_over_it() {
        let code = ServerCode {
            views: vec![
                obj("v_orders", "SELECT id, total FROM orders"),
                obj("v_audit", "SELECT app.log_read(id) AS x FROM orders"),
                obj("v_over", "select `x` from `app`.`v_audit`"),
                obj("v_hidden", ""),
            ],
            definer_functions: vec![obj("bump", "")],
            policies: vec![obj("accounts", "SELECT (owner = current_user)")],
        };
        let bad = unsafe_objects(&code, Dialect::Mysql, &[]);
        assert!(!bad.contains_key("v_orders"), "{bad:?}");
        assert!(!bad.contains_key("accounts"), "{bad:?}");
        for n in ["v_audit", "v_over", "v_hidden", "bump"] {
            assert!(bad.contains_key(n), "{n}: {bad:?}");
        }
        assert_eq!(
            reaches("SELECT * FROM v_orders", Dialect::Mysql, &bad),
            None
        );
        assert!(reaches("SELECT * FROM app.V_Over WHERE 1", Dialect::Mysql, &bad).is_some());
        assert!(reaches("SELECT bump(1)", Dialect::Mysql, &bad).is_some());
        // In a string it is no name.
        assert_eq!(reaches("SELECT 'v_over'", Dialect::Mysql, &bad), None);
    }

    #[test]
    fn a_policy_that_calls_code_makes_its_table_unsafe() {
        let code = ServerCode {
            policies: vec![obj("accounts", "SELECT dblink_exec('x', 'DELETE FROM t')")],
            ..Default::default()
        };
        let bad = unsafe_objects(&code, Dialect::Postgres, &[]);
        assert!(reaches("SELECT * FROM accounts", Dialect::Postgres, &bad).is_some());
    }
}
