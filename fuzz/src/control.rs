//! The `control_file` target: a control file built from the input, beside the log files
//! of a small database that has committed and checkpointed (made once, on the simulated
//! disk), opened by the engine (`RedoLog::open_with`: the control file's two slots, its
//! checks, recovery from the checkpoint it names).
//!
//! Input: `flags u8, slot 0's first 88 bytes, slot 1's first 88 bytes` (the bytes the
//! format uses, see `redo::format::ControlRecord`; the rest of each 4 KiB slot is zero, as
//! the engine writes it). The database id field holds the difference (xor) from the
//! template's id, which is random for each process: 0 names the template's database.
//! Flag bits 0 and 1 then recompute the checksum of slot 0 and 1, so mutated fields reach
//! the code that uses them.
//!
//! Invariants checked when the log opens: the recovered SCNs run densely from the
//! checkpoint's; a commit made after the open is recovered by the next open. A control
//! file the engine accepts must leave it a log that works.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use redo::format::{ControlRecord, CONTROL_SLOT_BYTES};
use redo::sim::SimStorage;
use redo::storage::{control_path, log_file_path, FileMode, Storage};
use redo::{CommitLogging, CommitOptions, CommitWait, OpenMode, RedoLog};

use crate::redo_files::{self, commit_after_recovery, write_file};

/// Bytes of a control slot the format uses (`CONTROL_USED` in `redo::format`).
pub const SLOT_USED: usize = 88;

/// The files of the database every input starts from, and its control file's bytes.
pub struct Template {
    pub files: Vec<(PathBuf, Vec<u8>)>,
    pub control: Vec<u8>,
}

/// The template: 24 commits of growing size (into the second log file), a checkpoint
/// after the tenth, on a one-member log.
pub fn template() -> &'static Template {
    static TEMPLATE: OnceLock<Template> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let mut config = redo_files::config(1);
        config.open_mode = OpenMode::CreateIfMissing;
        let storage = SimStorage::new();
        storage.create_dir_all(&config.dir).expect("a directory on the simulated disk");
        let (log, _) = RedoLog::open_with(config.clone(), Arc::new(storage.clone())).expect("a new log");
        let mut session = log.session();
        for i in 0..24u32 {
            session.log_change(&vec![i as u8; 200 + 150 * i as usize]).expect("a change");
            let receipt = session
                .commit(CommitOptions::new(CommitWait::Wait, CommitLogging::Immediate))
                .expect("a commit");
            if i == 9 {
                log.checkpoint(receipt.scn, receipt.lsn).expect("a checkpoint");
            }
        }
        drop(session);
        log.shutdown().expect("a clean shutdown");
        drop(log);
        let mut paths = vec![control_path(&config.dir)];
        paths.extend((0..config.log_groups).map(|g| log_file_path(&config.dir, g, 0)));
        let files: Vec<(PathBuf, Vec<u8>)> = paths
            .into_iter()
            .map(|path| {
                let file = storage.open(&path, FileMode::Read).expect("a file of the template");
                let mut bytes = vec![0u8; file.size().expect("its size") as usize];
                file.read_exact_at(&mut bytes, 0).expect("its bytes");
                (path, bytes)
            })
            .collect();
        let control = files[0].1.clone();
        Template { files, control }
    })
}

/// A disk holding the template's files.
fn template_disk() -> SimStorage {
    let config = redo_files::config(1);
    let storage = SimStorage::new();
    storage.create_dir_all(&config.dir).expect("a directory on the simulated disk");
    for (path, bytes) in &template().files {
        storage.create_zeroed(path, bytes.len() as u64).expect("a file");
        write_file(&storage, path, 0, bytes);
    }
    storage
}

/// Recomputes the checksum of a control slot (crc32c of bytes 0..12 and 16..88).
pub fn fix_checksum(slot: &mut [u8]) {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&slot[0..12]), &slot[16..SLOT_USED]);
    slot[12..16].copy_from_slice(&crc.to_le_bytes());
}

/// Where a control slot holds the database id.
const DB_ID_FIELD: std::ops::Range<usize> = 24..32;

/// Xors the database id field of a slot with the template's id.
fn xor_db_id(slot: &mut [u8]) {
    let template = &template().control[DB_ID_FIELD];
    for (byte, t) in slot[DB_ID_FIELD].iter_mut().zip(template) {
        *byte ^= t;
    }
}

/// The control file an input describes.
pub fn control_file(data: &[u8]) -> Option<Vec<u8>> {
    let (&flags, rest) = data.split_first()?;
    let mut file = vec![0u8; 2 * CONTROL_SLOT_BYTES as usize];
    for slot in 0..2 {
        let part = rest.get(slot * SLOT_USED..).unwrap_or_default();
        let part = &part[..part.len().min(SLOT_USED)];
        let at = slot * CONTROL_SLOT_BYTES as usize;
        file[at..at + part.len()].copy_from_slice(part);
        xor_db_id(&mut file[at..at + SLOT_USED]);
        if flags & (1 << slot) != 0 {
            fix_checksum(&mut file[at..at + CONTROL_SLOT_BYTES as usize]);
        }
    }
    Some(file)
}

/// The input that describes the template's own control file (checksums recomputed: the
/// template's database id, and so its checksums, differ in every process).
pub fn template_input() -> Vec<u8> {
    let control = &template().control;
    let slot = CONTROL_SLOT_BYTES as usize;
    let mut input = vec![3u8];
    for at in [0, slot] {
        let mut used = control[at..at + SLOT_USED].to_vec();
        xor_db_id(&mut used);
        input.extend_from_slice(&used);
    }
    input
}

pub fn run(data: &[u8]) {
    let Some(file) = control_file(data) else { return };
    let config = redo_files::config(1);
    let storage = template_disk();
    write_file(&storage, &control_path(&config.dir), 0, &file);
    let storage: Arc<dyn Storage> = Arc::new(storage);
    let Ok((log, recovered)) = RedoLog::open_with(config.clone(), storage.clone()) else { return };
    // The record the engine chose: the valid slot with the highest generation (two valid
    // slots of one generation are refused unless they are the same).
    let slot = CONTROL_SLOT_BYTES as usize;
    let record = [&file[..slot], &file[slot..]]
        .into_iter()
        .filter_map(|bytes| ControlRecord::decode(bytes).ok())
        .reduce(|a, b| if b.generation > a.generation { b } else { a })
        .expect("an open log had a valid control record");
    for (i, txn) in recovered.transactions.iter().enumerate() {
        assert_eq!(
            txn.scn.0,
            record.checkpoint_scn.0 + 1 + i as u64,
            "recovered SCNs run densely from the checkpoint's"
        );
    }
    let scn = commit_after_recovery(&log);
    log.shutdown().expect("a clean shutdown of a log that just committed");
    drop(log);
    let (log, again) = RedoLog::open_with(config, storage).expect("the log reopens after a clean shutdown");
    let last = again.transactions.last().expect("the commit made after the open is recovered");
    assert_eq!(last.scn, scn, "the last commit recovered is the one made after the open");
    log.shutdown().expect("a clean shutdown");
}
