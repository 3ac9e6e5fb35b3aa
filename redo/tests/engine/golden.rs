//! Golden files: a database written by format version 1 must keep recovering, byte for
//! byte, in every later build. A format change must bump `FORMAT_VERSION` and add a new
//! golden directory (see examples/write_golden.rs), never silently change version 1.

use std::path::Path;

use redo::{LogConfig, OpenMode, RedoLog, Scn, SyncMethod};

fn golden_changes(i: u64) -> Vec<Vec<u8>> {
    (0..1 + i % 3).map(|k| format!("golden txn {i} change {k} ").repeat(40).into_bytes()).collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn version_1_golden_database_recovers_its_sixty_transactions() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1");
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&golden, tmp.path());
    let mut config = LogConfig::new(tmp.path());
    config.log_groups = 3;
    config.log_file_size = 64 << 10;
    config.log_buffer = 64 << 10;
    config.sync_method = SyncMethod::Fdatasync;
    config.open_mode = OpenMode::MustExist;
    let (_log, recovered) = RedoLog::open(config).expect("golden database opens");
    assert_eq!(recovered.transactions.len(), 60, "{}", recovered.report);
    for (i, t) in recovered.transactions.iter().enumerate() {
        assert_eq!(t.scn, Scn(i as u64 + 1));
        assert_eq!(t.changes, golden_changes(i as u64), "transaction {i}");
    }
    // The 60 transactions span more than one log file.
    assert!(recovered.report.end.0 > 64 << 10, "{}", recovered.report);
}
