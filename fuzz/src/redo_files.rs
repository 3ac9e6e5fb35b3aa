//! The `redo_log` target: a redo log built from the input on the simulated disk
//! (`redo::sim`), opened by the engine (`RedoLog::open_with`: the block reader, the record
//! decoder, recovery's decision table, the repair of members), the recovered changes
//! replayed by the database layer (`db::database::replay`: the change decoder and its
//! apply), then one more commit and a reopen.
//!
//! Input: `flags u8 [damage u8] stream...`
//! - `RAW`: the stream is whole 4 KiB blocks, headers included, written as they are;
//!   otherwise it is record bytes, and the harness cuts them into blocks and writes each
//!   block's header (a valid header is a checksum over the database id, sequence and
//!   position: mutations would never get past it).
//! - `FIX`: (not RAW) each record's checksum is recomputed as long as the headers decode,
//!   so mutations of lengths, kinds, transaction ids and payloads reach the code that
//!   reads them instead of stopping at the checksum.
//! - `NEAR_END`: the log starts (checkpoint) in the last block of the first file, so a
//!   few KiB of input cross into the next file.
//! - `MIRROR`: the next byte picks a block that is zeroed in member 1 of a two-member log:
//!   the recovery of that log must equal the one-member recovery of the intact stream.
//!
//! Invariants checked when the log opens: the recovered SCNs run densely from 1; a commit
//! made after the open is recovered by the next open after everything recovered before.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use redo::format::{
    decode_record_header, BlockHeader, ControlRecord, Geometry, HeaderScan, LogFileHeader, BLOCK_BYTES,
    BLOCK_DATA_BYTES, CONTROL_SLOT_BYTES, RECORD_HEADER_BYTES,
};
use redo::sim::SimStorage;
use redo::storage::{control_path, log_file_path, FileMode, Storage};
use redo::{
    CommitLogging, CommitOptions, CommitWait, LogConfig, LogSeq, Lsn, OpenMode, RecoveredTxn, RedoLog, Scn,
    SyncMethod, TxnId,
};

/// The database id of every log the harnesses build.
pub const DB_ID: u64 = 0x7265_646f_6675_7a7a;
/// The smallest log file the engine allows: 15 blocks of redo after the header.
pub const FILE_BYTES: u64 = 64 << 10;
pub const GROUPS: u32 = 3;

pub const RAW: u8 = 1;
pub const FIX: u8 = 2;
pub const NEAR_END: u8 = 4;
pub const MIRROR: u8 = 8;

/// The payload of the commit made after recovery.
const AFTER_RECOVERY: &[u8] = b"a commit after recovery";

/// A log of `members` members in `/fuzz/db` (and `/fuzz/mirror`), in the geometry above.
pub fn config(members: u32) -> LogConfig {
    let mut config = LogConfig::new("/fuzz/db");
    if members > 1 {
        config.mirror_dirs = vec![PathBuf::from("/fuzz/mirror")];
    }
    config.open_mode = OpenMode::MustExist;
    config.log_groups = GROUPS;
    config.log_file_size = FILE_BYTES;
    config.log_buffer = 64 << 10;
    config.sync_method = SyncMethod::Fdatasync;
    config
}

pub fn geometry() -> Geometry {
    Geometry::new(FILE_BYTES, GROUPS)
}

/// Where a `NEAR_END` log starts: the last block of the first file.
pub fn near_end_start() -> Lsn {
    Lsn(geometry().end_of(LogSeq(1)).0 - BLOCK_BYTES)
}

/// Writes `bytes` at `offset` of `path` (made beforehand).
pub fn write_file(storage: &dyn Storage, path: &Path, offset: u64, bytes: &[u8]) {
    let file = storage.open(path, FileMode::Control).expect("a file the harness made");
    file.write_at(&[bytes], offset).expect("a write to the simulated disk");
    file.sync().expect("a sync of the simulated disk");
}

/// A disk with the directories, a zeroed control file and zeroed log files of `config`.
pub fn empty_disk(config: &LogConfig) -> SimStorage {
    let storage = SimStorage::new();
    for m in 0..config.members() {
        storage.create_dir_all(config.member_dir(m)).expect("a directory on the simulated disk");
    }
    storage.create_zeroed(&control_path(&config.dir), 2 * CONTROL_SLOT_BYTES).expect("the control file");
    for m in 0..config.members() {
        for g in 0..config.log_groups {
            let path = log_file_path(config.member_dir(m), g, m);
            storage.create_zeroed(&path, config.log_file_size).expect("a log file");
        }
    }
    storage
}

/// The control record of a log that starts at `start` with no commit before it.
pub fn control_record(members: u32, start: Lsn) -> ControlRecord {
    ControlRecord {
        generation: 1,
        db_id: DB_ID,
        log_file_size: FILE_BYTES,
        groups: GROUPS,
        members,
        checkpoint_scan_from: start,
        checkpoint_lsn: start,
        checkpoint_scn: Scn(0),
        created_unix_ms: 1,
        txn_id_hwm: TxnId(0),
    }
}

/// Recomputes the checksum of each record of `stream` (record bytes, no block headers)
/// from the start, as long as the record headers decode and the records are whole.
pub fn fix_record_checksums(stream: &mut [u8]) {
    let mut at = 0;
    while let Ok(HeaderScan::Record(header)) = decode_record_header(&stream[at..]) {
        let end = at + RECORD_HEADER_BYTES + header.payload_len as usize;
        if end > stream.len() {
            break;
        }
        let crc = crc32c::crc32c(&stream[at + 4..end]);
        stream[at..at + 4].copy_from_slice(&crc.to_le_bytes());
        at = end;
    }
}

/// Cuts record bytes into the blocks of the stream from `start` (a block start), each
/// with its header.
pub fn into_blocks(start: Lsn, stream: &[u8]) -> Vec<u8> {
    assert_eq!(start.0 % BLOCK_BYTES, 0, "a log laid out from a block start");
    let geometry = geometry();
    let mut out = Vec::new();
    let mut block_lsn = start;
    for chunk in stream.chunks(BLOCK_DATA_BYTES as usize) {
        let seq = geometry.seq_of(block_lsn);
        out.extend_from_slice(&BlockHeader { seq, block_lsn }.encode(DB_ID));
        out.extend_from_slice(chunk);
        out.resize(out.len() + BLOCK_DATA_BYTES as usize - chunk.len(), 0);
        block_lsn = Lsn(block_lsn.0 + BLOCK_BYTES);
    }
    out
}

/// Writes `blocks` (whole blocks of the stream from `start`; a last partial block is
/// padded with zeros) into every member's log files, with the header of each file they
/// reach, up to the last group (the ring never wraps here). With `damage`, that block
/// (counted from `start`, modulo the blocks written) is zeroed in the first member.
pub fn lay_out(storage: &dyn Storage, config: &LogConfig, start: Lsn, blocks: &[u8], damage: Option<u8>) {
    let geometry = geometry();
    let members = config.members();
    let nblocks = blocks.len().div_ceil(BLOCK_BYTES as usize);
    let damaged = damage.filter(|_| nblocks > 0).map(|d| d as usize % nblocks);
    let mut headers_written = Vec::new();
    for (i, chunk) in blocks.chunks(BLOCK_BYTES as usize).enumerate() {
        let block_lsn = Lsn(start.0 + i as u64 * BLOCK_BYTES);
        let seq = geometry.seq_of(block_lsn);
        if seq.0 > GROUPS as u64 {
            break;
        }
        let group = geometry.group_of(seq);
        let mut block = chunk.to_vec();
        block.resize(BLOCK_BYTES as usize, 0);
        for m in 0..members {
            let path = log_file_path(config.member_dir(m), group, m);
            if !headers_written.contains(&(seq, m)) {
                let header = LogFileHeader {
                    db_id: DB_ID,
                    seq,
                    start_lsn: geometry.start_of(seq),
                    file_size: FILE_BYTES,
                    group,
                    member: m,
                    activated_unix_ms: 1,
                };
                write_file(storage, &path, 0, &header.encode());
                headers_written.push((seq, m));
            }
            let bytes =
                if m == 0 && damaged == Some(i) { vec![0; BLOCK_BYTES as usize] } else { block.clone() };
            write_file(storage, &path, geometry.file_offset(block_lsn), &bytes);
        }
    }
}

/// Splits an input into its parts: flags, damage byte, the log's blocks and its start.
pub fn parse(data: &[u8]) -> Option<(u8, Option<u8>, Lsn, Vec<u8>)> {
    let (&flags, rest) = data.split_first()?;
    let (damage, rest) = if flags & MIRROR != 0 {
        let (&d, rest) = rest.split_first()?;
        (Some(d), rest)
    } else {
        (None, rest)
    };
    let start = if flags & NEAR_END != 0 { near_end_start() } else { Lsn(0) };
    let blocks = if flags & RAW != 0 {
        rest.to_vec()
    } else {
        let mut stream = rest.to_vec();
        if flags & FIX != 0 {
            fix_record_checksums(&mut stream);
        }
        into_blocks(start, &stream)
    };
    Some((flags, damage, start, blocks))
}

pub fn run(data: &[u8]) {
    let Some((_, damage, start, blocks)) = parse(data) else { return };
    let alone = recover_and_go_on(1, start, &blocks, None);
    if let Some(damage) = damage {
        let mirrored = recover_and_go_on(2, start, &blocks, Some(damage));
        match (&alone, &mirrored) {
            (Ok(a), Ok(m)) => assert_eq!(
                a, m,
                "a mirror that fills in a damaged block recovers what one intact member does"
            ),
            (Err(a), Ok(_)) => panic!("one intact member fails ({a}) where a mirrored pair recovers"),
            (Ok(_), Err(m)) => {
                panic!("a mirror with a damaged block fails ({m}) where one intact member recovers")
            }
            (Err(_), Err(_)) => {}
        }
    }
}

/// Opens the log laid out from `blocks`; if it opens, checks what it recovered, replays it
/// through the database layer, commits once more, and checks that a reopen recovers it.
fn recover_and_go_on(
    members: u32,
    start: Lsn,
    blocks: &[u8],
    damage: Option<u8>,
) -> Result<Vec<RecoveredTxn>, String> {
    let config = config(members);
    let storage = empty_disk(&config);
    write_file(&storage, &control_path(&config.dir), 0, &control_record(members, start).encode());
    lay_out(&storage, &config, start, blocks, damage);
    let storage: Arc<dyn Storage> = Arc::new(storage);
    let (log, recovered) = RedoLog::open_with(config.clone(), storage.clone()).map_err(|e| e.to_string())?;
    for (i, txn) in recovered.transactions.iter().enumerate() {
        assert_eq!(txn.scn, Scn(i as u64 + 1), "recovered SCNs run densely from the checkpoint");
    }
    // The database layer's replay of what was recovered: bad change records are errors.
    let mut state = db::state::DbState::default();
    let _ = db::database::replay(&mut state, &recovered);
    commit_after_recovery(&log);
    log.shutdown().expect("a clean shutdown of a log that just committed");
    drop(log);
    let (log, again) = RedoLog::open_with(config, storage).expect("the log reopens after a clean shutdown");
    let n = recovered.transactions.len();
    assert_eq!(again.transactions.len(), n + 1, "the reopen recovers the earlier commits and the new one");
    assert_eq!(again.transactions[..n], recovered.transactions[..], "the reopen recovers the same commits");
    assert_eq!(again.transactions[n].changes, vec![AFTER_RECOVERY.to_vec()]);
    log.shutdown().expect("a clean shutdown");
    Ok(recovered.transactions)
}

/// One WAIT commit of one change: on the simulated disk, without faults, it cannot fail.
pub fn commit_after_recovery(log: &RedoLog) -> Scn {
    let mut session = log.session();
    session.log_change(AFTER_RECOVERY).expect("a change after recovery");
    let receipt = session
        .commit(CommitOptions::new(CommitWait::Wait, CommitLogging::Immediate))
        .expect("a commit after recovery");
    receipt.scn
}

/// The read-back of an input's log with one member, for the seed generator's checks.
pub fn recovered_transactions(data: &[u8]) -> Result<Vec<RecoveredTxn>, String> {
    let (_, _, start, blocks) = parse(data).ok_or("empty input")?;
    recover_and_go_on(1, start, &blocks, None)
}
