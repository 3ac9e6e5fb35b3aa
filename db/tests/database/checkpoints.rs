//! Checkpoint images: recovery from an image plus the redo after it, log groups reused
//! thanks to images, damaged or partial images skipped for the previous one.

use std::path::Path;

use db::checkpoint::list_images;
use db::{Column, DataType, Database, DbConfig, TableSchema, Value};
use redo::storage::FileStorage;
use redo::{CommitLogging, CommitOptions, CommitWait, LogConfig, Stat, SyncMethod};

const WAIT: CommitOptions =
    CommitOptions { wait: Some(CommitWait::Wait), logging: Some(CommitLogging::Immediate) };

fn config(file_size: u64) -> DbConfig {
    let mut log = LogConfig::new(".");
    log.log_file_size = file_size;
    log.log_buffer = 64 << 10;
    log.sync_method = SyncMethod::Fdatasync;
    DbConfig { log, checkpoint_interval_ms: 0, snapshot_interval_minutes: 0, ..DbConfig::default() }
}

fn open(dir: &Path, file_size: u64) -> Database {
    Database::open(dir, config(file_size)).unwrap_or_else(|e| panic!("open: {e}"))
}

fn items() -> TableSchema {
    TableSchema::new(
        "items",
        vec![
            Column { name: "id".into(), ty: DataType::Int, nullable: false },
            Column { name: "v".into(), ty: DataType::Text { max_chars: None }, nullable: true },
        ],
        vec![0],
    )
    .unwrap()
}

fn insert_range(db: &Database, ids: std::ops::Range<i64>, width: usize) {
    let mut s = db.session();
    for i in ids {
        s.insert("items", vec![Value::Int(i), Value::Text(format!("{i:0width$}"))]).unwrap();
        s.commit(WAIT).unwrap();
    }
}

fn ids(db: &Database) -> Vec<i64> {
    db.snapshot()
        .table("items")
        .unwrap()
        .rows
        .keys()
        .map(|k| match k[0] {
            Value::Int(i) => i,
            _ => unreachable!(),
        })
        .collect()
}

#[test]
fn an_image_plus_the_redo_after_it_recovers_the_state() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path(), 1 << 20);
        db.session().create_table(items()).unwrap();
        insert_range(&db, 0..100, 10);
        let first = db.checkpoint().unwrap().expect("an image");
        insert_range(&db, 100..150, 10);
        let second = db.checkpoint().unwrap().expect("an image");
        assert!(second.scn > first.scn);
        assert!(db.checkpoint().unwrap().is_none(), "nothing new to checkpoint");
        insert_range(&db, 150..160, 10);
        // The log's checkpoint is the previous image (two-image rule).
        assert_eq!(db.log().last_checkpoint().2, first.scn);
    }
    let db = open(dir.path(), 1 << 20);
    assert_eq!(ids(&db), (0..160).collect::<Vec<_>>());
    assert_eq!(db.replayed_commits(), 10, "only the commits after the newest image are replayed");
}

#[test]
fn the_log_reuses_its_groups_while_the_checkpointer_writes_images() {
    let dir = tempfile::tempdir().unwrap();
    {
        // 3 groups of 64 KiB hold under 200 KB of redo; this writes ~1.5 MB.
        let db = open(dir.path(), 64 << 10);
        db.session().create_table(items()).unwrap();
        insert_range(&db, 0..3000, 400);
        assert!(db.log().stats().get(Stat::RedoLogSwitches) > 10);
        assert!(!list_images(&FileStorage, dir.path()).unwrap().is_empty());
    }
    let db = open(dir.path(), 64 << 10);
    assert_eq!(ids(&db).len(), 3000);
}

#[test]
fn a_damaged_newest_image_falls_back_to_the_previous_one() {
    let dir = tempfile::tempdir().unwrap();
    let newest;
    {
        let db = open(dir.path(), 1 << 20);
        db.session().create_table(items()).unwrap();
        insert_range(&db, 0..50, 10);
        db.checkpoint().unwrap().unwrap();
        insert_range(&db, 50..80, 10);
        newest = db.checkpoint().unwrap().unwrap();
        insert_range(&db, 80..90, 10);
    }
    let mut bytes = std::fs::read(&newest.path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&newest.path, &bytes).unwrap();
    let db = open(dir.path(), 1 << 20);
    assert_eq!(ids(&db), (0..90).collect::<Vec<_>>());
    assert_eq!(db.replayed_commits(), 40, "replayed from the previous image");
}

#[test]
fn a_partial_image_and_a_leftover_temporary_file_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let image;
    {
        let db = open(dir.path(), 1 << 20);
        db.session().create_table(items()).unwrap();
        insert_range(&db, 0..40, 10);
        image = db.checkpoint().unwrap().unwrap();
        insert_range(&db, 40..45, 10);
    }
    // A crash while writing a newer image: a half-written temporary file, and a
    // truncated image under a newer name.
    let data = image.path.parent().unwrap();
    let bytes = std::fs::read(&image.path).unwrap();
    std::fs::write(data.join("image-00000000000000099999.img.tmp"), &bytes[..bytes.len() / 3]).unwrap();
    std::fs::write(data.join("image-00000000000000099998.img"), &bytes[..bytes.len() / 2]).unwrap();
    let db = open(dir.path(), 1 << 20);
    assert_eq!(ids(&db), (0..45).collect::<Vec<_>>());
}

/// Commits are applied as they reach the log buffer, not always in SCN order, so an
/// image can hold commits beyond its SCN; it lists them and recovery must not replay
/// them again (replaying an insert twice would fail the open with a duplicate key).
#[test]
fn an_image_holding_commits_applied_ahead_of_its_scn_recovers_each_commit_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 1 << 20);
    let mut s = db.session();
    s.create_table(items()).unwrap();
    insert_range(&db, 1..4, 3);
    let before_gap = db.snapshot();
    let mut receipts = Vec::new();
    for i in 4..6 {
        s.insert("items", vec![Value::Int(i), Value::Text(format!("{i:03}"))]).unwrap();
        receipts.push(s.commit(WAIT).unwrap().expect("a commit"));
    }
    drop(s);
    // The state as if commit 5 had been applied before commit 4.
    let mut image_state = (*before_gap).clone();
    image_state
        .apply(&db::Change::Insert {
            table: "items".into(),
            row: vec![Value::Int(5), Value::Text("005".into())].into(),
        })
        .unwrap();
    image_state.mark_applied(receipts[1].scn, receipts[1].lsn);
    assert_eq!(image_state.ahead.len(), 1, "commit 5 is ahead of the gap left by commit 4");
    let db_id = db.log().db_id();
    let final_scn = db.snapshot().scn;
    drop(db);
    db::checkpoint::write_image(&FileStorage, dir.path(), db_id, &image_state).unwrap();

    let db = open(dir.path(), 1 << 20);
    assert_eq!(ids(&db), vec![1, 2, 3, 4, 5]);
    assert_eq!(db.snapshot().scn, final_scn);
    assert!(db.snapshot().ahead.is_empty());
    assert_eq!(db.replayed_commits(), 1, "only commit 4 is replayed: 5 is in the image");
}
