//! Writes the golden database of the current format version into the directory given as
//! the first argument (used once per format version; the files are committed under
//! `redo/tests/golden/` and `tests/engine/golden.rs` checks that they still recover).
//!
//! `cargo run -p redodb-redo --example write_golden -- redo/tests/golden/v1`

use redo::{CommitLogging, CommitOptions, CommitWait, LogConfig, RedoLog, SyncMethod};

/// The changes of golden transaction `i` (shared with tests/engine/golden.rs by copy).
fn golden_changes(i: u64) -> Vec<Vec<u8>> {
    (0..1 + i % 3).map(|k| format!("golden txn {i} change {k} ").repeat(40).into_bytes()).collect()
}

fn main() {
    let dir = std::env::args().nth(1).expect("usage: write_golden DIR");
    let mut config = LogConfig::new(&dir);
    config.log_groups = 3;
    config.log_file_size = 64 << 10;
    config.log_buffer = 64 << 10;
    config.sync_method = SyncMethod::Fdatasync;
    let (log, recovered) = RedoLog::open(config).expect("open");
    assert!(recovered.transactions.is_empty(), "{dir} must be empty");
    let mut s = log.session();
    for i in 0..60u64 {
        for c in golden_changes(i) {
            s.log_change(&c).expect("log");
        }
        let wait = if i % 2 == 0 { CommitWait::Wait } else { CommitWait::NoWait };
        s.commit(CommitOptions::new(wait, CommitLogging::Immediate)).expect("commit");
    }
    let rolled_back = b"golden rolled back".to_vec();
    s.log_change(&rolled_back).expect("log");
    s.rollback().expect("rollback");
    drop(s);
    log.shutdown().expect("shutdown");
    println!("wrote golden database to {dir}: 60 transactions");
}
