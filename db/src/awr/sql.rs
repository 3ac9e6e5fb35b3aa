//! The workload repository as statements of a session, with Oracle's names:
//!
//! - `EXEC DBMS_WORKLOAD_REPOSITORY.CREATE_SNAPSHOT` (or `EXEC snapshot`, or the bare call
//!   inside a `BEGIN ... END;` block): takes a snapshot, returns its `snap_id`;
//! - `EXEC DBMS_WORKLOAD_REPOSITORY.AWR_REPORT_TEXT(begin_snap, end_snap)` and
//!   `AWR_REPORT_HTML(...)`: the report, one row per line in the column `output` (as
//!   Oracle's table function returns it).
//!
//! `EXECUTE` is a synonym of `EXEC`. A statement naming anything else is not ours
//! ([`parse_awr_call`] returns None) and goes on to the SQL parser, so PostgreSQL's
//! `EXECUTE prepared_name(...)` keeps its meaning.

use super::repository::{load_range_on, take_db_snapshot};
use super::{report_html, report_text, AwrError};
use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::sql::{QueryResult, ResultColumn};
use crate::value::{DataType, Value};

const PACKAGE: &str = "dbms_workload_repository";

/// A call into the workload repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AwrCall {
    CreateSnapshot,
    Report { begin: u64, end: u64, html: bool },
}

impl AwrCall {
    /// The columns of the rows the call returns.
    pub fn result_columns(&self) -> Vec<ResultColumn> {
        match self {
            AwrCall::CreateSnapshot => vec![ResultColumn { name: "snap_id".into(), ty: Some(DataType::Int) }],
            AwrCall::Report { .. } => {
                vec![ResultColumn { name: "output".into(), ty: Some(DataType::Text { max_chars: None }) }]
            }
        }
    }
}

/// Recognises a workload repository call; None when `sql` is not one (give it to the
/// SQL parser). Case-insensitive; a trailing `;` is allowed.
pub fn parse_awr_call(sql: &str) -> Option<DbResult<AwrCall>> {
    let text = sql.trim().trim_end_matches(';').trim_end();
    let (first, after_first) = split_word(text);
    let (name_part, explicit) = if first.eq_ignore_ascii_case("exec") || first.eq_ignore_ascii_case("execute")
    {
        (after_first.trim_start(), true)
    } else {
        (text, false)
    };
    let (name, arguments) = match name_part.find('(') {
        Some(open) => (name_part[..open].trim_end(), Some(&name_part[open..])),
        None => (name_part, None),
    };
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let name = name.to_ascii_lowercase();
    let procedure = match name.split_once('.') {
        Some((PACKAGE, procedure)) => procedure,
        // `EXEC snapshot`: the short form, only after EXEC (a bare word is someone else's).
        None if explicit && name == "snapshot" => "create_snapshot",
        _ => return None,
    };
    let display = if name.contains('.') { name.to_ascii_uppercase() } else { name.clone() };
    Some(parse_procedure(procedure, &display, arguments))
}

/// The first word of `text` and the rest.
fn split_word(text: &str) -> (&str, &str) {
    let end = text.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(text.len());
    (&text[..end], &text[end..])
}

fn parse_procedure(procedure: &str, display: &str, arguments: Option<&str>) -> DbResult<AwrCall> {
    let bad = |message: String| DbError::Awr(AwrError::BadCall(message));
    let numbers = match arguments {
        None => Vec::new(),
        Some(list) => {
            let inner = list
                .strip_prefix('(')
                .and_then(|l| l.strip_suffix(')'))
                .ok_or_else(|| bad(format!("{display}: the argument list {list:?} is not closed by ')'")))?;
            if inner.trim().is_empty() {
                Vec::new()
            } else {
                inner
                    .split(',')
                    .map(|a| {
                        a.trim()
                            .parse::<u64>()
                            .map_err(|_| bad(format!("{display}: {:?} is not a snapshot id", a.trim())))
                    })
                    .collect::<DbResult<Vec<u64>>>()?
            }
        }
    };
    match procedure {
        "create_snapshot" if numbers.is_empty() => Ok(AwrCall::CreateSnapshot),
        "create_snapshot" => Err(bad(format!("{display} takes no arguments"))),
        "awr_report_text" | "awr_report_html" => match numbers[..] {
            [begin, end] => Ok(AwrCall::Report { begin, end, html: procedure.ends_with("html") }),
            _ => Err(bad(format!(
                "{display} takes (begin_snap_id, end_snap_id), {} argument(s) given",
                numbers.len()
            ))),
        },
        other => Err(bad(format!(
            "{}.{} does not exist (known: CREATE_SNAPSHOT, AWR_REPORT_TEXT, AWR_REPORT_HTML)",
            PACKAGE.to_ascii_uppercase(),
            other.to_ascii_uppercase()
        ))),
    }
}

impl Session {
    /// Runs a workload repository call for this session's database.
    pub(crate) fn run_awr_call(&mut self, call: &AwrCall) -> DbResult<QueryResult> {
        let dir = self.db.log().config().dir.clone();
        let rows = match *call {
            AwrCall::CreateSnapshot => {
                let info = take_db_snapshot(&self.db)?;
                vec![vec![Value::Int(info.id as i64)]]
            }
            AwrCall::Report { begin, end, html } => {
                let range = load_range_on(&*self.db.storage, &dir, Some(begin), Some(end))?;
                let report = if html { report_html(&range)? } else { report_text(&range)? };
                report.lines().map(|line| vec![Value::Text(line.to_string())]).collect()
            }
        };
        Ok(QueryResult::rows_of_query(call.result_columns(), rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(sql: &str) -> Option<Result<AwrCall, String>> {
        parse_awr_call(sql).map(|r| r.map_err(|e| e.to_string()))
    }

    #[test]
    fn the_oracle_forms_are_recognised() {
        for sql in [
            "EXEC snapshot",
            "exec SNAPSHOT;",
            "EXECUTE snapshot",
            "EXEC DBMS_WORKLOAD_REPOSITORY.CREATE_SNAPSHOT",
            "exec dbms_workload_repository.create_snapshot();",
            "  DBMS_WORKLOAD_REPOSITORY.CREATE_SNAPSHOT  ",
            "dbms_workload_repository.create_snapshot ( )",
        ] {
            assert_eq!(call(sql), Some(Ok(AwrCall::CreateSnapshot)), "{sql:?}");
        }
        assert_eq!(
            call("EXEC DBMS_WORKLOAD_REPOSITORY.AWR_REPORT_TEXT(3, 7)"),
            Some(Ok(AwrCall::Report { begin: 3, end: 7, html: false }))
        );
        assert_eq!(
            call("exec dbms_workload_repository.awr_report_html( 1 ,2 );"),
            Some(Ok(AwrCall::Report { begin: 1, end: 2, html: true }))
        );
    }

    #[test]
    fn other_statements_are_left_to_the_sql_parser() {
        for sql in
            ["SELECT 1", "snapshot", "EXECUTE my_statement(1, 2)", "EXEC", "INSERT INTO t VALUES (1)", ""]
        {
            assert_eq!(call(sql), None, "{sql:?}");
        }
    }

    #[test]
    fn malformed_calls_are_errors_naming_the_problem() {
        let error = |sql: &str| call(sql).expect("ours").expect_err("an error");
        assert_eq!(
            error("EXEC DBMS_WORKLOAD_REPOSITORY.AWR_REPORT_TEXT(1)"),
            "DBMS_WORKLOAD_REPOSITORY.AWR_REPORT_TEXT takes (begin_snap_id, end_snap_id), 1 argument(s) given"
        );
        assert_eq!(
            error("EXEC DBMS_WORKLOAD_REPOSITORY.AWR_REPORT_TEXT(1, x)"),
            "DBMS_WORKLOAD_REPOSITORY.AWR_REPORT_TEXT: \"x\" is not a snapshot id"
        );
        assert_eq!(error("EXEC snapshot(1)"), "snapshot takes no arguments");
        assert!(error("EXEC DBMS_WORKLOAD_REPOSITORY.DROP_SNAPSHOT_RANGE(1, 2)")
            .contains("DROP_SNAPSHOT_RANGE does not exist"));
        assert!(error("EXEC DBMS_WORKLOAD_REPOSITORY.AWR_REPORT_TEXT(1, 2").contains("not closed"));
    }

    /// The line of the statement whose text ends with `text` in the text report from
    /// snapshot `begin` to `end`, under "SQL ordered by Executions".
    fn executions_line(s: &mut Session, begin: u64, end: u64, text: &str) -> String {
        let sql = format!("EXEC DBMS_WORKLOAD_REPOSITORY.AWR_REPORT_TEXT({begin}, {end})");
        let report = s.execute(&sql, &[]).expect("report");
        let lines: Vec<String> = report.rows().iter().map(|r| r[0].to_string()).collect();
        lines
            .into_iter()
            .skip_while(|l| l != "SQL ordered by Executions")
            .find(|l| l.ends_with(text))
            .unwrap_or_else(|| panic!("{text} among the statements by executions"))
    }

    /// A snapshot that could not be written takes no statement activity with it: the
    /// next snapshot reports it.
    #[test]
    fn a_snapshot_not_written_leaves_its_statements_to_the_next() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = crate::awr::open_test_database(dir.path());
        let mut s = db.session();
        assert_eq!(s.execute("EXEC snapshot", &[]).expect("snapshot").rows()[0][0], Value::Int(1));
        s.execute("CREATE TABLE t (id INT PRIMARY KEY)", &[]).expect("create");
        for i in 0..5 {
            s.execute("INSERT INTO t VALUES ($1)", &[Value::Int(i)]).expect("insert");
        }
        s.execute("COMMIT", &[]).expect("commit");
        // The repository's directory made a file: the snapshot fails.
        let awr = crate::awr::awr_dir(dir.path());
        let away = dir.path().join("awr-away");
        std::fs::rename(&awr, &away).expect("move the repository away");
        std::fs::write(&awr, b"not a directory").expect("a file in its place");
        assert!(s.execute("EXEC snapshot", &[]).is_err());
        std::fs::remove_file(&awr).expect("remove the file");
        std::fs::rename(&away, &awr).expect("the repository back");
        assert_eq!(s.execute("EXEC snapshot", &[]).expect("snapshot").rows()[0][0], Value::Int(2));
        let insert = executions_line(&mut s, 1, 2, "INSERT INTO t VALUES ($1)");
        assert!(insert.split_whitespace().take(2).eq(["5", "5"]), "{insert}");
    }

    #[test]
    fn a_session_takes_snapshots_and_reports_between_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = crate::awr::open_test_database(dir.path());
        let mut s = db.session();
        let snap_id = |r: QueryResult| match r.rows() {
            [row] => row[0].clone(),
            other => panic!("expected one row, got {other:?}"),
        };
        let first = s.execute("EXEC DBMS_WORKLOAD_REPOSITORY.CREATE_SNAPSHOT", &[]).expect("snapshot");
        assert_eq!(first.columns()[0].name, "snap_id");
        assert_eq!(snap_id(first), Value::Int(1));
        s.execute("CREATE TABLE t (id INT PRIMARY KEY)", &[]).expect("create");
        for i in 0..20 {
            s.execute("INSERT INTO t VALUES ($1)", &[Value::Int(i)]).expect("insert");
            s.execute("COMMIT", &[]).expect("commit");
        }
        assert_eq!(snap_id(s.execute("EXEC snapshot", &[]).expect("snapshot")), Value::Int(2));
        let report = s.execute("EXEC DBMS_WORKLOAD_REPOSITORY.AWR_REPORT_TEXT(1, 2)", &[]).expect("report");
        let lines: Vec<String> = report.rows().iter().map(|r| r[0].to_string()).collect();
        assert_eq!(lines[0], "WORKLOAD REPOSITORY report for");
        let commits = lines.iter().find(|l| l.starts_with("user commits ")).expect("user commits line");
        assert!(commits.contains(" 21 "), "20 inserts and the CREATE TABLE: {commits}");
        // The statements of the interval: the prepared INSERT's 20 executions and rows.
        let executed = executions_line(&mut s, 1, 2, "INSERT INTO t VALUES ($1)");
        assert!(executed.split_whitespace().take(2).eq(["20", "20"]), "{executed}");
        // A third snapshot's report from the first adds up both intervals' statements.
        s.execute("INSERT INTO t VALUES (100)", &[]).expect("insert");
        s.execute("COMMIT", &[]).expect("commit");
        assert_eq!(snap_id(s.execute("EXEC snapshot", &[]).expect("snapshot")), Value::Int(3));
        let commits = executions_line(&mut s, 1, 3, " COMMIT");
        assert!(commits.trim_start().starts_with("21 "), "20 and 1 commits: {commits}");
        let html = s.execute("EXEC DBMS_WORKLOAD_REPOSITORY.AWR_REPORT_HTML(1, 2)", &[]).expect("html");
        assert_eq!(html.rows()[0][0], Value::Text("<!DOCTYPE html>".into()));
        let unknown = s.execute("EXEC DBMS_WORKLOAD_REPOSITORY.AWR_REPORT_TEXT(1, 5)", &[]).unwrap_err();
        assert_eq!(unknown.sqlstate(), "22023");
        assert!(unknown.to_string().starts_with("snapshot 5 does not exist"), "{unknown}");
    }
}
