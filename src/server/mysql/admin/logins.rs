//! The replay's third lock on the MySQL family: the login its clients use may only read. A
//! temporary login is created with SELECT alone (no SUPER, CONNECTION ADMIN, SHUTDOWN,
//! EXECUTE, PROCESS, FILE or any write), for the client host this server sees dbtax's
//! admin connection come from; a login the user names is checked to hold no more than
//! reading privileges.

use super::MysqlAdmin;
use crate::server::mysql::db_error;
use anyhow::Result;
use dbtax_logs::read_only::reach::{CodeObject, ServerCode};
use mysql::prelude::Queryable;

/// Privileges a login may hold and still only read.
const READING: [&str; 4] = ["USAGE", "SELECT", "SHOW VIEW", "SHOW DATABASES"];

/// `'user'@'host'` as the server quotes an account.
fn account(user: &str, host: &str) -> String {
    format!("{}@{}", literal(user), literal(host))
}

fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

impl MysqlAdmin {
    /// The host the server sees this connection come from (USER()'s host part): the one a
    /// login for dbtax's clients must be created for.
    fn client_host(&mut self) -> Result<String> {
        let user: Option<String> = self.conn().query_first("SELECT USER()").map_err(db_error)?;
        Ok(user
            .and_then(|u| u.rsplit_once('@').map(|(_, h)| h.to_string()))
            .unwrap_or_else(|| "localhost".into()))
    }
}

impl crate::server::Logins for MysqlAdmin {
    fn reader_spec(&mut self, name: &str) -> Result<String> {
        Ok(account(name, &self.client_host()?))
    }

    fn create_reader(&mut self, spec: &str, password: &str) -> Result<Vec<String>> {
        let create = format!("CREATE USER {spec} IDENTIFIED BY {}", literal(password));
        let grant = format!("GRANT SELECT ON *.* TO {spec}");
        for sql in [&create, &grant] {
            self.conn().query_drop(sql).map_err(db_error)?;
        }
        // (The password is not echoed in what the plan and the log show.)
        Ok(vec![format!("CREATE USER {spec} IDENTIFIED BY '…'"), grant])
    }

    fn drop_reader(&mut self, spec: &str) -> Result<String> {
        let sql = format!("DROP USER IF EXISTS {spec}");
        self.conn().query_drop(&sql).map_err(db_error)?;
        Ok(sql)
    }

    fn only_reads(&mut self) -> Result<Result<(), String>> {
        let grants: Vec<String> = self.conn().query("SHOW GRANTS").map_err(db_error)?;
        Ok(judge_grants(&grants))
    }

    /// Every view (its body runs with its definer's rights unless SQL SECURITY INVOKER, and
    /// may call stored functions that do) and every stored function running with its
    /// definer's rights, in every database: a replayed statement can name any of them.
    fn server_code(&mut self, _schema: &str) -> Result<ServerCode> {
        const SYSTEM: &str = "('mysql', 'sys', 'information_schema', 'performance_schema')";
        let object = |(schema, name, definition): (String, String, Option<String>)| CodeObject {
            schema,
            name,
            definition: definition.unwrap_or_default(),
        };
        let views: Vec<(String, String, Option<String>)> = self
            .conn()
            .query(format!(
                "SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS \
                 WHERE TABLE_SCHEMA NOT IN {SYSTEM}"
            ))
            .map_err(db_error)?;
        let functions: Vec<(String, String, Option<String>)> = self
            .conn()
            .query(format!(
                "SELECT ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_DEFINITION FROM \
                 information_schema.ROUTINES WHERE ROUTINE_TYPE = 'FUNCTION' AND \
                 SECURITY_TYPE = 'DEFINER' AND ROUTINE_SCHEMA NOT IN {SYSTEM}"
            ))
            .map_err(db_error)?;
        Ok(ServerCode {
            views: views.into_iter().map(object).collect(),
            definer_functions: functions.into_iter().map(object).collect(),
            policies: vec![],
        })
    }
}

/// Whether `SHOW GRANTS`' lines give no more than reading: Err names what else they give.
pub fn judge_grants(grants: &[String]) -> Result<(), String> {
    let mut more = vec![];
    for g in grants {
        let upper = g.to_ascii_uppercase();
        let Some(rest) = upper.strip_prefix("GRANT ") else {
            continue;
        };
        let Some((privileges, _)) = rest.split_once(" ON ") else {
            // `GRANT role TO user`: what the role holds is not shown here.
            more.push(format!("a role ({})", g.trim()));
            continue;
        };
        for p in privileges.split(',').map(str::trim) {
            if !READING.contains(&p) {
                more.push(p.to_string());
            }
        }
        if upper.contains("WITH GRANT OPTION") {
            more.push("GRANT OPTION".into());
        }
    }
    more.dedup();
    if more.is_empty() {
        Ok(())
    } else {
        Err(more.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reading_grants_pass() {
        let ok = [
            "GRANT USAGE ON *.* TO `r`@`%`".to_string(),
            "GRANT SELECT, SHOW VIEW ON `shop`.* TO `r`@`%`".to_string(),
        ];
        assert_eq!(judge_grants(&ok), Ok(()));
        let bad = ["GRANT SELECT, INSERT, SUPER ON *.* TO `r`@`%`".to_string()];
        assert_eq!(judge_grants(&bad), Err("INSERT, SUPER".into()));
        let all =
            ["GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION".to_string()];
        assert!(judge_grants(&all).unwrap_err().contains("ALL PRIVILEGES"));
        let role = ["GRANT `admin` TO `r`@`%`".to_string()];
        assert!(judge_grants(&role).unwrap_err().contains("a role"));
    }
}
