//! Parameters: SHOW PARAMETER, ALTER SESSION / SYSTEM SET with their scopes and errors,
//! the deprecated commit_write, PostgreSQL's synchronous_commit, and their effect on
//! commits.

use crate::common::open;
use db::sql::oracle::{ParamValue, Scope};
use db::{Column, DataType, Database, TableSchema, Value};
use redo::{CommitOptions, CommitWait};

fn word(v: &str) -> ParamValue {
    ParamValue::Word(v.into())
}

fn commit_one(db: &Database, s: &mut db::Session, id: i64) -> redo::CommitReceipt {
    if db.snapshot().table("t").is_err() {
        let schema = TableSchema::new(
            "t",
            vec![Column { name: "id".into(), ty: DataType::Int, nullable: false }],
            vec![0],
        );
        s.create_table(schema.unwrap()).unwrap();
    }
    s.insert("t", vec![Value::Int(id)]).unwrap();
    s.commit(CommitOptions::DEFAULT).unwrap().unwrap()
}

#[test]
fn show_parameter_lists_names_types_and_this_sessions_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let s = db.session();
    let rows = s.show_parameters(Some("COMMIT"));
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["call_commit_optimization", "commit_logging", "commit_wait", "commit_write"]);
    let wait = rows.iter().find(|r| r.name == "commit_wait").unwrap();
    assert_eq!((wait.type_name, wait.value.as_str()), ("string", "WAIT"));
    let all = s.show_parameters(None);
    let buffer = all.iter().find(|r| r.name == "log_buffer").unwrap();
    assert_eq!(
        (buffer.type_name, buffer.value.as_str(), buffer.modifiable),
        ("big integer", "262144", "FALSE")
    );
}

#[test]
fn session_settings_apply_to_that_session_and_system_settings_to_all_others() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut a = db.session();
    let mut b = db.session();
    a.set_parameter(Scope::Session, "COMMIT_WAIT", &word("nowait")).unwrap();
    assert_eq!(a.parameter_value("commit_wait").unwrap(), "NOWAIT");
    assert_eq!(b.parameter_value("commit_wait").unwrap(), "WAIT");
    assert!(!commit_one(&db, &mut a, 1).waited);
    assert!(commit_one(&db, &mut b, 2).waited);
    // The system default changes every session without its own setting.
    b.set_parameter(Scope::System, "commit_logging", &word("batch")).unwrap();
    assert_eq!(a.parameter_value("commit_logging").unwrap(), "BATCH");
    assert_eq!(commit_one(&db, &mut b, 3).logging, redo::CommitLogging::Batch);
    // System FORCE_WAIT overrides a session's NOWAIT and a statement's NOWAIT.
    b.set_parameter(Scope::System, "commit_wait", &word("force_wait")).unwrap();
    assert_eq!(a.parameter_value("commit_wait").unwrap(), "FORCE_WAIT");
    a.insert("t", vec![Value::Int(4)]).unwrap();
    let r = a.commit(CommitOptions { wait: Some(CommitWait::NoWait), logging: None }).unwrap().unwrap();
    assert!(r.waited);
    // DEFAULT takes the session back to the system's value.
    b.set_parameter(Scope::System, "commit_wait", &word("wait")).unwrap();
    a.set_parameter(Scope::Session, "commit_wait", &ParamValue::Default).unwrap();
    assert_eq!(a.parameter_value("commit_wait").unwrap(), "WAIT");
}

#[test]
fn the_deprecated_commit_write_is_mapped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let warning =
        s.set_parameter(Scope::Session, "commit_write", &ParamValue::Quoted("batch,nowait".into())).unwrap();
    assert!(warning.unwrap().contains("COMMIT_WRITE is deprecated"));
    assert_eq!(s.parameter_value("commit_wait").unwrap(), "NOWAIT");
    assert_eq!(s.parameter_value("commit_logging").unwrap(), "BATCH");
    let r = commit_one(&db, &mut s, 1);
    assert!(!r.waited);
    let e = s
        .set_parameter(Scope::Session, "commit_write", &ParamValue::Quoted("batch,fast".into()))
        .unwrap_err();
    assert_eq!(e.sqlstate(), "22023", "{e}");
}

#[test]
fn bad_names_values_and_scopes_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let e = s.set_parameter(Scope::Session, "no_such_thing", &word("1")).unwrap_err();
    assert_eq!(e.sqlstate(), "42704", "{e}");
    let e = s.set_parameter(Scope::System, "log_buffer", &ParamValue::Number("1048576".into())).unwrap_err();
    assert_eq!(e.sqlstate(), "55P02", "{e}");
    assert!(e.to_string().contains("log_buffer"));
    let e = s.set_parameter(Scope::Session, "commit_wait", &word("sometimes")).unwrap_err();
    assert_eq!(e.sqlstate(), "22023", "{e}");
    assert!(e.to_string().contains("WAIT, NOWAIT or FORCE_WAIT"), "{e}");
    let e = s
        .set_parameter(Scope::Session, "batch_flush_timeout_ms", &ParamValue::Number("10".into()))
        .unwrap_err();
    assert!(e.to_string().contains("ALTER SYSTEM"), "{e}");
    let e = s
        .set_parameter(Scope::System, "batch_flush_timeout_ms", &ParamValue::Number("0".into()))
        .unwrap_err();
    assert_eq!(e.sqlstate(), "22023", "{e}");
    assert!(s.parameter_value("nope").is_err());
}

#[test]
fn batch_triggers_and_the_checkpoint_interval_change_at_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.set_parameter(Scope::System, "batch_flush_timeout_ms", &ParamValue::Number("250".into())).unwrap();
    s.set_parameter(Scope::System, "batch_flush_bytes", &ParamValue::Number("65536".into())).unwrap();
    assert_eq!(db.log().batch_triggers(), (3, 65536, 250));
    s.set_parameter(Scope::System, "checkpoint_interval_ms", &ParamValue::Number("1000".into())).unwrap();
    assert_eq!(s.parameter_value("checkpoint_interval_ms").unwrap(), "1000");
}

#[test]
fn synchronous_commit_maps_onto_commit_wait() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(s.synchronous_commit(), "on");
    s.set_synchronous_commit("off").unwrap();
    assert_eq!(s.parameter_value("commit_wait").unwrap(), "NOWAIT");
    assert_eq!(s.synchronous_commit(), "off");
    assert!(!commit_one(&db, &mut s, 1).waited);
    s.set_synchronous_commit("remote_apply").unwrap();
    assert_eq!(s.synchronous_commit(), "on");
    assert!(s.set_synchronous_commit("maybe").is_err());
}
