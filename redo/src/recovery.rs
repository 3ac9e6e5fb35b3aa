//! Recovery: read the redo stream from the last checkpoint and hand back every committed
//! transaction in SCN order.
//!
//! Because a commit's unit reaches the stream whole and in SCN order, the durable prefix
//! of the stream holds exactly a prefix of the commits: recovery reads forward and stops
//! at the first thing that is not valid redo of this use of the file.
//!
//! # Decision table: why the scan stopped, and what it means
//! | what the scan meets                       | meaning                         | action |
//! |-------------------------------------------|---------------------------------|--------|
//! | twenty zero bytes where a record starts    | padding after the last write    | end    |
//! | a block whose header is for another seq, LSN or database | never written in this use | end |
//! | the next file's header is not for the next seq | the log never reached it    | end    |
//! | a record with a bad checksum, kind or length | torn last write, or damage    | see below |
//!
//! A torn write damages at most the last write, which starts before the damage and spans
//! at most `WRITE_MAX_BYTES`. So if a valid block of the same use exists further than that
//! beyond the stop point, or the next file already holds valid blocks, the log went on past
//! the damage: that is corruption, reported as an error and never silently truncated.
//! Otherwise it is a torn tail, and the log ends there.
//!
//! Mirrored members are read together: each record comes from the first member whose copy
//! of it is intact, so a member that missed writes while out of service, or holds a damaged
//! block, is bridged by another. After recovery every member is repaired to hold the
//! recovered stream (see `RedoLog::open_with`), so members never drift apart.
//!
//! Other checks: SCNs must run densely from the checkpoint's SCN + 1; a gap is corruption.
//! Records of transactions without a commit record are discarded (uncommitted).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::error::{RedoError, Result};
use crate::format::{
    block_floor, decode_commit_payload, decode_record_header, verify_record, BlockHeader, ControlRecord,
    Geometry, HeaderScan, LogFileHeader, RecordHeader, RecordKind, BLOCK_BYTES, BLOCK_HEADER_BYTES,
    RECORD_HEADER_BYTES, WRITE_MAX_BYTES,
};
use crate::storage::StorageFile;
use crate::types::{LogSeq, Lsn, Scn, TxnId};

/// A committed transaction found by recovery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveredTxn {
    pub txn: TxnId,
    pub scn: Scn,
    /// End of the transaction's commit unit in the stream.
    pub commit_lsn: Lsn,
    pub commit_time_unix_us: u64,
    /// The change payloads, in the order they were logged.
    pub changes: Vec<Vec<u8>>,
}

/// Why the scan of the stream stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Zero padding after the last record.
    Padding,
    /// A block not written in this use of its file (torn or never written).
    StaleBlock { block_lsn: Lsn },
    /// The log file for the next sequence does not carry that sequence.
    FileNotInUse { seq: LogSeq },
    /// A damaged record at the end of the log (a torn write).
    TornRecord { detail: String },
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::Padding => write!(f, "end of redo (padding after the last record)"),
            StopReason::StaleBlock { block_lsn } => {
                write!(f, "block at {block_lsn} was not written in this use of its file")
            }
            StopReason::FileNotInUse { seq } => write!(f, "log file for {seq} not yet in use"),
            StopReason::TornRecord { detail } => {
                write!(f, "torn record at the end of the log ({detail})")
            }
        }
    }
}

/// What recovery did, for the operator.
#[derive(Clone, Debug)]
pub struct RecoveryReport {
    pub checkpoint_scn: Scn,
    pub scan_from: Lsn,
    /// End of the valid redo: new redo continues here.
    pub end: Lsn,
    pub stop: StopReason,
    pub transactions: u64,
    pub uncommitted_discarded: u64,
    pub bytes_scanned: u64,
    pub last_scn: Scn,
    /// Member whose copy supplied the last record (0-based).
    pub member_used: u32,
    /// Members found unusable, or that had to fill in for another, with what was wrong.
    pub member_notes: Vec<String>,
    pub elapsed: Duration,
}

impl std::fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "recovered {} transactions (SCN {} to {}), {} bytes of redo from {} to {}; stopped: {}; {} uncommitted discarded; {:.1} ms",
            self.transactions,
            self.checkpoint_scn.0 + 1,
            self.last_scn.0,
            self.bytes_scanned,
            self.scan_from,
            self.end,
            self.stop,
            self.uncommitted_discarded,
            self.elapsed.as_secs_f64() * 1000.0
        )
    }
}

/// Where the recovered bytes of one block came from: each record's part of the block, as
/// (start, end) offsets in the block and the member that served it, in stream order.
/// Usually one member served them all; after member failures and torn writes, records of
/// one block can come from different members, and none of the copies holds them all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockSources {
    pub segments: Vec<(u32, u32, u32)>,
}

impl BlockSources {
    /// Notes that `member` served the block's bytes `[from, to)`.
    fn add(&mut self, from: u32, to: u32, member: u32) {
        match self.segments.last_mut() {
            Some((_, end, m)) if *m == member && *end == from => *end = to,
            _ => self.segments.push((from, to, member)),
        }
    }

    /// The member that served the block's latest record: its copy holds the block header
    /// and, unless another member served an earlier record, everything before.
    pub fn latest(&self) -> u32 {
        self.segments.last().expect("a block with a source has a segment").2
    }
}

/// Notes that `member` served the stream bytes `[from, to)`.
fn note_source(sources: &mut BTreeMap<Lsn, BlockSources>, from: Lsn, to: Lsn, member: u32) {
    let mut block = block_floor(from);
    while block < to {
        let start = from.max(block).0 - block.0;
        let end = to.min(Lsn(block.0 + BLOCK_BYTES)).0 - block.0;
        sources.entry(block).or_default().add(start as u32, end as u32, member);
        block = Lsn(block.0 + BLOCK_BYTES);
    }
}

pub(crate) struct RecoveryOutcome {
    pub transactions: Vec<RecoveredTxn>,
    pub report: RecoveryReport,
    /// Bytes `[block_floor(end), end)` of the chosen member: the partial last block.
    pub tail: Vec<u8>,
    pub max_txn: TxnId,
    /// For each block of the scanned range, where its recovered records came from
    /// (members are repaired from these after recovery).
    pub block_sources: BTreeMap<Lsn, BlockSources>,
    /// The record at the end runs on into the next log file: it was torn there, and what
    /// its write left at the start of that file must be zeroed before the log goes on in
    /// this one (the next recovery, finding the log ending inside this file, would take it
    /// for valid redo after the end).
    pub torn_into_next: bool,
}

/// Reads the stream of one member, block by block, checking every block it enters.
struct MemberStream<'a> {
    files: &'a [Vec<Option<Box<dyn StorageFile>>>],
    paths: &'a dyn Fn(u32, u32) -> PathBuf,
    member: u32,
    geometry: Geometry,
    db_id: u64,
    pos: Lsn,
    chunk: Vec<u8>,
    chunk_start: Lsn,
    /// Blocks of the chunk below this LSN have been checked.
    checked_upto: Lsn,
    header_ok: Option<LogSeq>,
}

enum StreamStop {
    Reason(StopReason),
    Error(RedoError),
}

const CHUNK_BYTES: u64 = 1 << 20;

impl<'a> MemberStream<'a> {
    fn file(&self, seq: LogSeq) -> Option<&'a dyn StorageFile> {
        self.files[self.geometry.group_of(seq) as usize][self.member as usize].as_deref()
    }

    fn path(&self, seq: LogSeq) -> PathBuf {
        (self.paths)(self.geometry.group_of(seq), self.member)
    }

    /// Whether the file for `seq` carries `seq` in its header.
    fn file_in_use(&self, seq: LogSeq) -> std::result::Result<bool, StreamStop> {
        let Some(file) = self.file(seq) else {
            return Err(StreamStop::Error(RedoError::Foreign {
                path: self.path(seq),
                detail: "log file missing".into(),
            }));
        };
        let mut buf = vec![0u8; BLOCK_BYTES as usize];
        file.read_exact_at(&mut buf, 0)
            .map_err(|e| StreamStop::Error(RedoError::io("read", self.path(seq), e)))?;
        if buf.iter().all(|&b| b == 0) {
            return Ok(false);
        }
        let h = LogFileHeader::decode(&buf).map_err(|e| {
            StreamStop::Error(RedoError::Foreign { path: self.path(seq), detail: e.to_string() })
        })?;
        Ok(h.seq == seq && h.db_id == self.db_id)
    }

    /// Makes sure the block at `block_lsn` is loaded and valid.
    fn enter_block(&mut self, block_lsn: Lsn) -> std::result::Result<(), StreamStop> {
        debug_assert_eq!(block_lsn.0 % BLOCK_BYTES, 0);
        let seq = self.geometry.seq_of(block_lsn);
        if self.header_ok != Some(seq) {
            if !self.file_in_use(seq)? {
                return Err(StreamStop::Reason(StopReason::FileNotInUse { seq }));
            }
            self.header_ok = Some(seq);
        }
        let in_chunk = block_lsn >= self.chunk_start
            && block_lsn.0 + BLOCK_BYTES <= self.chunk_start.0 + self.chunk.len() as u64;
        if !in_chunk {
            let file_end = self.geometry.end_of(seq);
            let len = (file_end.0 - block_lsn.0).min(CHUNK_BYTES);
            self.chunk.resize(len as usize, 0);
            let offset = self.geometry.file_offset(block_lsn);
            let file = self.file(seq).expect("checked by file_in_use");
            if let Err(e) = file.read_exact_at(&mut self.chunk, offset) {
                return Err(StreamStop::Error(RedoError::io("read", self.path(seq), e)));
            }
            self.chunk_start = block_lsn;
        }
        let at = (block_lsn.0 - self.chunk_start.0) as usize;
        if !BlockHeader::matches(&self.chunk[at..], self.db_id, seq, block_lsn) {
            return Err(StreamStop::Reason(StopReason::StaleBlock { block_lsn }));
        }
        self.checked_upto = Lsn(block_lsn.0 + BLOCK_BYTES);
        Ok(())
    }

    /// Appends the next `n` stream bytes to `out`.
    fn read(&mut self, mut n: usize, out: &mut Vec<u8>) -> std::result::Result<(), StreamStop> {
        while n > 0 {
            if self.pos.0.is_multiple_of(BLOCK_BYTES) {
                self.enter_block(self.pos)?;
                self.pos = Lsn(self.pos.0 + BLOCK_HEADER_BYTES);
            } else if self.pos >= self.checked_upto || self.pos < self.chunk_start {
                self.enter_block(block_floor(self.pos))?;
            }
            let in_block = (BLOCK_BYTES - self.pos.0 % BLOCK_BYTES) as usize;
            let take = n.min(in_block);
            let at = (self.pos.0 - self.chunk_start.0) as usize;
            out.extend_from_slice(&self.chunk[at..at + take]);
            self.pos = Lsn(self.pos.0 + take as u64);
            n -= take;
        }
        Ok(())
    }

    /// Appends the record bytes of the stream positions `[from, to)`, which lie in one
    /// block (its header skipped if `from` is the block's start).
    fn read_span(&mut self, from: Lsn, to: Lsn, out: &mut Vec<u8>) -> std::result::Result<(), StreamStop> {
        debug_assert_eq!(block_floor(from), block_floor(Lsn(to.0 - 1)), "a span within one block");
        let header = if from.0.is_multiple_of(BLOCK_BYTES) { BLOCK_HEADER_BYTES } else { 0 };
        self.pos = from;
        self.read((to.0 - from.0 - header) as usize, out)
    }

    /// Bytes `[block_floor(end), end)`.
    fn tail_bytes(&mut self, end: Lsn) -> std::result::Result<Vec<u8>, StreamStop> {
        let floor = block_floor(end);
        if floor == end {
            return Ok(Vec::new());
        }
        self.enter_block(floor)?;
        let at = (floor.0 - self.chunk_start.0) as usize;
        Ok(self.chunk[at..at + (end.0 - floor.0) as usize].to_vec())
    }

    /// Evidence that the log continued past `end`: a valid block of the same use beyond
    /// any possible torn write, or valid redo in the next log file.
    ///
    /// Only the last write can be torn (a write starts once the one before it is
    /// synced), and no write spans two files. When the record at `end` runs on into the
    /// next file (`straddles`), its part there was the last write, torn: blocks of it in
    /// the next file are that write's remains, not evidence, so the evidence must lie
    /// beyond what that write could cover (or in the file after).
    fn log_continues_after(
        &mut self,
        end: Lsn,
        straddles: bool,
    ) -> std::result::Result<Option<Lsn>, StreamStop> {
        let seq = self.geometry.seq_of(end);
        let (seq, beyond) = if straddles {
            let next = LogSeq(seq.0 + 1);
            (next, Lsn(self.geometry.start_of(next).0 + WRITE_MAX_BYTES))
        } else {
            (seq, Lsn(block_floor(end).0 + WRITE_MAX_BYTES))
        };
        if self.file_in_use(seq)? {
            let mut block = beyond;
            let file_end = self.geometry.end_of(seq);
            while block < file_end {
                match self.enter_block(block) {
                    Ok(()) => return Ok(Some(block)),
                    Err(StreamStop::Reason(_)) => {}
                    Err(e) => return Err(e),
                }
                block = Lsn(block.0 + BLOCK_BYTES);
            }
        }
        let next = LogSeq(seq.0 + 1);
        if self.file_in_use(next)? {
            let first = self.geometry.start_of(next);
            if self.enter_block(first).is_ok() {
                return Ok(Some(first));
            }
        }
        Ok(None)
    }

    /// Whether the record at `end`, as this member's copy of its header says, runs on
    /// past the end of `end`'s log file. False if the header does not read.
    fn record_straddles_file_end(&mut self, end: Lsn) -> bool {
        let mut header = Vec::with_capacity(RECORD_HEADER_BYTES);
        self.pos = end;
        if self.read(RECORD_HEADER_BYTES, &mut header).is_err() {
            return false;
        }
        match decode_record_header(&header) {
            Ok(HeaderScan::Record(h)) => {
                let record_end = stream_span(end, RECORD_HEADER_BYTES + h.payload_len as usize);
                record_end > self.geometry.end_of(self.geometry.seq_of(end))
            }
            _ => false,
        }
    }
}

/// Reads the record at `at` from one member: its header, payload and end.
fn read_record(
    s: &mut MemberStream<'_>,
    at: Lsn,
    header: &mut Vec<u8>,
    payload: &mut Vec<u8>,
) -> std::result::Result<(RecordHeader, Lsn), StreamStop> {
    s.pos = at;
    header.clear();
    s.read(RECORD_HEADER_BYTES, header)?;
    let h = match decode_record_header(header) {
        Ok(HeaderScan::Padding) => return Err(StreamStop::Reason(StopReason::Padding)),
        Ok(HeaderScan::Record(h)) => h,
        Err(e) => return Err(StreamStop::Reason(StopReason::TornRecord { detail: e.to_string() })),
    };
    payload.clear();
    s.read(h.payload_len as usize, payload)?;
    verify_record(header, payload)
        .map_err(|e| StreamStop::Reason(StopReason::TornRecord { detail: e.to_string() }))?;
    Ok((h, s.pos))
}

/// A record read from several members: its header, its end, and each block's member.
type MixedRecord = (RecordHeader, Lsn, Vec<(Lsn, u32)>);

/// How many ways to take a record's blocks from different members a mixed read tries.
const MIXED_READ_TRIES: usize = 64;

/// The stream length (block headers included) that `n` record bytes starting at `at` take.
fn stream_span(at: Lsn, n: usize) -> Lsn {
    let mut pos = at.0;
    let mut left = n as u64;
    loop {
        if pos.is_multiple_of(BLOCK_BYTES) {
            pos += BLOCK_HEADER_BYTES;
        }
        let room = BLOCK_BYTES - pos % BLOCK_BYTES;
        if left <= room {
            return Lsn(pos + left);
        }
        left -= room;
        pos += room;
    }
}

/// Reads the record at `at` taking each block from a member whose copy of it belongs to
/// this use of its file, for a record no single member holds whole: after a member was
/// taken out of service and another later, a record that spans two log files (or a
/// stretch of blocks) can have its first part only on one member and its second only on
/// another, and both parts were durable. The record's checksum decides which combination
/// of copies is right (a copy can have a valid block header and torn contents); at most
/// [`MIXED_READ_TRIES`] combinations are tried. Returns the record and the member of each
/// block it spans.
fn read_record_mixed(
    streams: &mut [MemberStream<'_>],
    usable: &[u32],
    at: Lsn,
    header: &mut Vec<u8>,
    payload: &mut Vec<u8>,
) -> Option<MixedRecord> {
    // The members whose copy of the block at `b` is of this use, in preference order.
    fn candidates_of(streams: &mut [MemberStream<'_>], usable: &[u32], b: Lsn) -> Vec<u32> {
        usable.iter().copied().filter(|&m| streams[m as usize].enter_block(b).is_ok()).collect()
    }
    // The header: the first valid copy of each block it touches.
    let header_end = stream_span(at, RECORD_HEADER_BYTES);
    let mut bytes = Vec::with_capacity(RECORD_HEADER_BYTES);
    let mut block = block_floor(at);
    while block < header_end {
        let from = at.max(block);
        let to = header_end.min(Lsn(block.0 + BLOCK_BYTES));
        let &m = candidates_of(streams, usable, block).first()?;
        streams[m as usize].read_span(from, to, &mut bytes).ok()?;
        block = Lsn(block.0 + BLOCK_BYTES);
    }
    let h = match decode_record_header(&bytes) {
        Ok(HeaderScan::Record(h)) => h,
        _ => return None,
    };
    let end = stream_span(at, RECORD_HEADER_BYTES + h.payload_len as usize);
    let blocks: Vec<Lsn> = (block_floor(at).0..end.0).step_by(BLOCK_BYTES as usize).map(Lsn).collect();
    let choices: Vec<Vec<u32>> = blocks.iter().map(|&b| candidates_of(streams, usable, b)).collect();
    if choices.iter().any(|c| c.is_empty()) {
        return None;
    }
    // Every combination, the first member of each block first, in an odometer's order.
    let mut pick = vec![0usize; blocks.len()];
    for _ in 0..MIXED_READ_TRIES {
        let mut record = Vec::with_capacity(RECORD_HEADER_BYTES + h.payload_len as usize);
        let mut read_all = true;
        for (i, &b) in blocks.iter().enumerate() {
            let (from, to) = (at.max(b), end.min(Lsn(b.0 + BLOCK_BYTES)));
            let m = choices[i][pick[i]];
            if streams[m as usize].read_span(from, to, &mut record).is_err() {
                read_all = false;
                break;
            }
        }
        if read_all && record.len() == RECORD_HEADER_BYTES + h.payload_len as usize {
            let (head, body) = record.split_at(RECORD_HEADER_BYTES);
            if verify_record(head, body).is_ok() {
                header.clear();
                header.extend_from_slice(head);
                payload.clear();
                payload.extend_from_slice(body);
                let sources =
                    blocks.iter().zip(&pick).enumerate().map(|(i, (&b, &p))| (b, choices[i][p])).collect();
                return Some((h, end, sources));
            }
        }
        // The next combination; none left: the record is not there whole.
        let mut i = blocks.len();
        loop {
            if i == 0 {
                return None;
            }
            i -= 1;
            pick[i] += 1;
            if pick[i] < choices[i].len() {
                break;
            }
            pick[i] = 0;
        }
    }
    None
}

/// Scans the stream from the checkpoint, reading each record from whichever member holds
/// it intact (the member that served the previous record first), so a damaged or stale
/// member copy is bridged by another member's. Returns the outcome or the corruption found.
pub(crate) fn recover(
    files: &[Vec<Option<Box<dyn StorageFile>>>],
    paths: &dyn Fn(u32, u32) -> PathBuf,
    geometry: Geometry,
    control: &ControlRecord,
) -> Result<RecoveryOutcome> {
    let t0 = Instant::now();
    let members = control.members;
    let mut streams: Vec<MemberStream<'_>> = (0..members)
        .map(|member| MemberStream {
            files,
            paths,
            member,
            geometry,
            db_id: control.db_id,
            pos: control.checkpoint_scan_from,
            chunk: Vec::new(),
            chunk_start: Lsn(0),
            checked_upto: Lsn(0),
            header_ok: None,
        })
        .collect();
    let mut unusable: Vec<Option<RedoError>> = (0..members).map(|_| None).collect();
    let mut open: HashMap<TxnId, Vec<Vec<u8>>> = HashMap::new();
    let mut transactions = Vec::new();
    let mut expected = control.checkpoint_scn.next();
    let mut max_txn = TxnId(0);
    let mut header = Vec::with_capacity(RECORD_HEADER_BYTES);
    let mut payload = Vec::new();
    let mut block_sources: BTreeMap<Lsn, BlockSources> = BTreeMap::new();
    let mut bridged: Vec<u64> = vec![0; members as usize];
    // Records a member could not supply but another could: (count, first LSN).
    let mut lacking: Vec<(u64, Option<Lsn>)> = vec![(0, None); members as usize];
    let mut preferred = 0u32;
    let mut pos = control.checkpoint_scan_from;
    let stop = loop {
        let mut served = None;
        let mut first_stop: Option<StopReason> = None;
        let mut failed_here: Vec<u32> = Vec::new();
        for k in 0..members {
            let m = (preferred + k) % members;
            if unusable[m as usize].is_some() {
                continue;
            }
            match read_record(&mut streams[m as usize], pos, &mut header, &mut payload) {
                Ok((h, end)) => {
                    served = Some((m, h, end));
                    break;
                }
                Err(StreamStop::Reason(r)) => {
                    failed_here.push(m);
                    first_stop.get_or_insert(r);
                }
                Err(StreamStop::Error(e)) => unusable[m as usize] = Some(e),
            }
        }
        if served.is_some() {
            for f in failed_here {
                let l = &mut lacking[f as usize];
                l.0 += 1;
                l.1.get_or_insert(pos);
            }
        }
        let mut mixed = false;
        let served = match served {
            Some(served) => Some(served),
            // No member holds the record whole: its blocks may still all be there, on
            // different members (see `read_record_mixed`).
            None if members > 1 => {
                let usable: Vec<u32> = (0..members)
                    .map(|k| (preferred + k) % members)
                    .filter(|&m| unusable[m as usize].is_none())
                    .collect();
                match read_record_mixed(&mut streams, &usable, pos, &mut header, &mut payload) {
                    Some((h, end, sources)) => {
                        for &(block, m) in &sources {
                            note_source(
                                &mut block_sources,
                                pos.max(block),
                                end.min(Lsn(block.0 + BLOCK_BYTES)),
                                m,
                            );
                        }
                        mixed = true;
                        let last = sources.last().expect("a record spans a block").1;
                        Some((last, h, end))
                    }
                    None => None,
                }
            }
            None => None,
        };
        let Some((m, h, end)) = served else {
            match first_stop {
                Some(r) => break r,
                None => {
                    let e = unusable.iter_mut().find_map(|e| e.take()).expect("every member unusable");
                    return Err(e);
                }
            }
        };
        if m != preferred {
            bridged[m as usize] += 1;
            preferred = m;
        }
        if !mixed {
            note_source(&mut block_sources, pos, end, m);
        }
        max_txn = max_txn.max(h.txn);
        match h.kind {
            RecordKind::Change => open.entry(h.txn).or_default().push(payload.clone()),
            RecordKind::Commit => {
                let (scn, time) = match decode_commit_payload(&payload) {
                    Ok(v) => v,
                    Err(e) => break StopReason::TornRecord { detail: e.to_string() },
                };
                let changes = open.remove(&h.txn).unwrap_or_default();
                if scn > control.checkpoint_scn {
                    if scn != expected {
                        return Err(RedoError::Corruption {
                            lsn: pos,
                            path: paths(geometry.group_of(geometry.seq_of(pos)), m),
                            detail: format!(
                                "commit {scn} found where {expected} was expected (SCNs must be dense)"
                            ),
                        });
                    }
                    expected = expected.next();
                    transactions.push(RecoveredTxn {
                        txn: h.txn,
                        scn,
                        commit_lsn: end,
                        commit_time_unix_us: time,
                        changes,
                    });
                }
            }
        }
        pos = end;
    };
    let end = pos;
    let straddles = (0..members)
        .filter(|&m| unusable[m as usize].is_none())
        .any(|m| streams[m as usize].record_straddles_file_end(end));
    for m in 0..members {
        if unusable[m as usize].is_some() {
            continue;
        }
        match streams[m as usize].log_continues_after(end, straddles) {
            Ok(Some(valid_at)) => {
                return Err(RedoError::Corruption {
                    lsn: end,
                    path: paths(geometry.group_of(geometry.seq_of(end)), m),
                    detail: format!(
                        "{stop}, but valid redo follows at {valid_at}: the damage is inside the log, not a torn tail"
                    ),
                })
            }
            Ok(None) | Err(StreamStop::Reason(_)) => {}
            Err(StreamStop::Error(e)) => unusable[m as usize] = Some(e),
        }
    }
    // The bytes of the block holding the end, which the next write rewrites. The member
    // that served the record ending there has them. If the scan read no record (the log
    // ends at the point it started from, a checkpoint inside a block), any member whose
    // copy of that block belongs to this use of the file has them: a member that fell
    // behind may hold an older use's block there, or none.
    let tail = if end == block_floor(end) {
        Vec::new()
    } else {
        let candidates: Vec<u32> = match block_sources.get(&block_floor(end)) {
            Some(sources) => vec![sources.latest()],
            None => (0..members).map(|k| (preferred + k) % members).collect(),
        };
        let mut tail = None;
        let mut reasons = Vec::new();
        for m in candidates {
            if unusable[m as usize].is_some() {
                continue;
            }
            match streams[m as usize].tail_bytes(end) {
                Ok(t) => {
                    tail = Some(t);
                    break;
                }
                Err(StreamStop::Error(e)) => return Err(e),
                Err(StreamStop::Reason(r)) => reasons.push(format!("member {}: {r}", m + 1)),
            }
        }
        match tail {
            Some(t) => t,
            None => {
                return Err(RedoError::Corruption {
                    lsn: end,
                    path: paths(geometry.group_of(geometry.seq_of(end)), preferred),
                    detail: format!(
                        "no member holds the block the redo ends in, which was durable: {}",
                        reasons.join("; ")
                    ),
                })
            }
        }
    };
    let mut notes = Vec::new();
    for m in 0..members {
        if let Some(e) = &unusable[m as usize] {
            notes.push(format!("member {} unusable: {e}", m + 1));
            continue;
        }
        if let (n, Some(at)) = lacking[m as usize] {
            notes.push(format!(
                "member {} is damaged or behind: {n} records from {at} on were read from another member",
                m + 1
            ));
        }
        if bridged[m as usize] > 0 {
            notes.push(format!(
                "member {} supplied {} records another member lacked",
                m + 1,
                bridged[m as usize]
            ));
        }
    }
    let report = RecoveryReport {
        checkpoint_scn: control.checkpoint_scn,
        scan_from: control.checkpoint_scan_from,
        end,
        stop,
        transactions: transactions.len() as u64,
        uncommitted_discarded: open.len() as u64,
        bytes_scanned: end.0 - control.checkpoint_scan_from.0,
        last_scn: transactions.last().map(|t| t.scn).unwrap_or(control.checkpoint_scn),
        member_used: preferred,
        member_notes: notes,
        elapsed: t0.elapsed(),
    };
    Ok(RecoveryOutcome { transactions, report, tail, max_txn, block_sources, torn_into_next: straddles })
}
