//! The log buffer: one ring of memory holding the newest part of the redo stream in its
//! on-disk block format, filled concurrently through P public strands (`log_parallelism`)
//! and drained by the log writer in ONE contiguous write per member.
//!
//! # How a unit gets in
//! A session takes a strand latch (any free one, else its own), then in the tiny
//! allocation critical section takes the next SCN (for a commit) and the stream range
//! `[start, end)` for its unit, and publishes `start` as the strand's copy position. It
//! then copies outside any shared lock, writing block headers where its range crosses
//! block starts, waiting for ring space (`log buffer space`) when the writer is behind,
//! and finally marks the strand idle. Sessions on different strands copy at once; the
//! allocation section is a few instructions, so strands remove the copy from the
//! serial path without splitting the stream.
//!
//! # What the writer may write
//! `complete_point()` is the lowest of the reserved end and every busy strand's copy
//! position: every byte below it has been copied. Because the allocation section publishes
//! the strand position before it publishes the new reserved end (release/acquire), a
//! reservation below the reserved end the writer sees is always visible in its strand.
//!
//! # Why one ring and not P buffers
//! Oracle gives each strand its own buffer and file region, so a flush is M x P write
//! requests that storage may serialize (seed 002). Here strands are copy lanes into one
//! stream, so a flush is one request per member however many strands there are.
//!
//! Invariants (asserted): `ring_floor <= written <= complete <= reserved_end`,
//! and no byte is copied at or beyond `ring_floor + capacity`.

use crate::clock::Stamp;
use crate::format::{block_floor, stream_advance, BlockHeader, Geometry, BLOCK_BYTES, BLOCK_HEADER_BYTES};
use crate::signal::Signal;
use crate::stats::{Stat, StatsSet, WaitEvent};
use crate::storage::AlignedBuf;
use crate::types::{Lsn, Scn};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Mutex, MutexGuard};

/// A strand position meaning "no copy in progress".
const IDLE: u64 = u64::MAX;

#[repr(align(128))]
struct Strand {
    latch: Mutex<()>,
    /// Stream position up to which the current unit is copied, or IDLE.
    copied_upto: AtomicU64,
}

/// The end of one unit in the stream, queued so the writer can tell which commits a
/// write made durable.
#[derive(Clone, Copy, Debug)]
struct UnitEnd {
    end: Lsn,
    scn: Option<Scn>,
    /// When the commit was called (None for other units, and for commits made with
    /// `timed_statistics` off), for the age of the oldest commit not yet durable.
    reserved_at: Option<Stamp>,
}

/// Commits in the log buffer not yet durable: what a crash would lose of the commits
/// acknowledged under NOWAIT (`v$commit_durability`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitBacklog {
    pub commits: u64,
    /// Bytes of redo stream reserved but not durable.
    pub bytes: u64,
    /// Time since the oldest of those commits was called (None when there is none, or
    /// when it was made with `timed_statistics` off).
    pub oldest: Option<std::time::Duration>,
}

struct Allocation {
    next_lsn: Lsn,
    next_scn: Scn,
    units: VecDeque<UnitEnd>,
}

/// The ring's memory. Writes and reads of disjoint ranges happen from several threads at
/// once; the log buffer's protocol (reservations, `copied_upto`, `ring_floor`) is what
/// makes each range owned by one party at a time.
struct RingMemory {
    buf: AlignedBuf,
}

impl RingMemory {
    /// # Safety
    /// The caller must own `[offset, offset + bytes.len())` of the ring: reserved by it
    /// and above `ring_floor + capacity` no more, and not being read by the writer.
    unsafe fn write(&self, offset: usize, bytes: &[u8]) {
        debug_assert!(offset + bytes.len() <= self.buf.len());
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.buf.as_ptr().add(offset), bytes.len());
    }

    /// # Safety
    /// No thread may write `[offset, offset + len)` while the returned slice lives: the
    /// range must be below the complete point and at or above `ring_floor`.
    unsafe fn slice(&self, offset: usize, len: usize) -> &[u8] {
        debug_assert!(offset + len <= self.buf.len());
        std::slice::from_raw_parts(self.buf.as_ptr().add(offset), len)
    }
}

pub(crate) struct LogBuffer {
    ring: RingMemory,
    capacity: u64,
    strands: Box<[Strand]>,
    alloc: Mutex<Allocation>,
    reserved_end: AtomicU64,
    /// Start of the block holding the written point: ring bytes below it are free.
    ring_floor: AtomicU64,
    space: Signal,
    db_id: u64,
    geometry: Geometry,
}

/// A unit's place in the stream, held with its strand latch until the copy is done.
pub(crate) struct Reservation<'a> {
    _latch: MutexGuard<'a, ()>,
    strand: usize,
    pub start: Lsn,
    pub end: Lsn,
    pub scn: Option<Scn>,
    pos: Lsn,
}

impl LogBuffer {
    pub fn new(
        capacity: u64,
        strands: u32,
        db_id: u64,
        geometry: Geometry,
        end: Lsn,
        next_scn: Scn,
        tail: &[u8],
    ) -> LogBuffer {
        assert!(capacity.is_multiple_of(BLOCK_BYTES) && capacity >= 4 * BLOCK_BYTES);
        let floor = block_floor(end);
        assert_eq!(tail.len() as u64, end.0 - floor.0, "tail must hold the partial last block");
        let buf = AlignedBuf::zeroed(capacity as usize);
        let ring = RingMemory { buf };
        // SAFETY: nothing else references the ring yet.
        unsafe { ring.write((floor.0 % capacity) as usize, tail) };
        LogBuffer {
            ring,
            capacity,
            strands: (0..strands)
                .map(|_| Strand { latch: Mutex::new(()), copied_upto: AtomicU64::new(IDLE) })
                .collect(),
            alloc: Mutex::new(Allocation { next_lsn: end, next_scn, units: VecDeque::new() }),
            reserved_end: AtomicU64::new(end.0),
            ring_floor: AtomicU64::new(floor.0),
            space: Signal::default(),
            db_id,
            geometry,
        }
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    pub fn strands(&self) -> usize {
        self.strands.len()
    }

    pub fn reserved_end(&self) -> Lsn {
        Lsn(self.reserved_end.load(Acquire))
    }

    /// Takes a strand latch (the first free one from `hint`, else `hint`'s) and reserves
    /// `len` bytes of stream, with an SCN if `commit` (and the time the commit was called,
    /// for the backlog's age, if timed). `file_ready(end)` says whether the
    /// log files for a unit ending at `end` are open for writing; while it says no, the
    /// reservation is retried after `wait_for_file(end)` returns true. If it returns false
    /// (the log failed or is shutting down, or the caller was interrupted) no reservation
    /// is made.
    ///
    /// The strand latch is let go during `wait_for_file`: a wait for a log switch can be
    /// long (a checkpoint that cannot be written), and a session queued on the latch
    /// behind it would sleep where it cannot be seen (no wait event) or interrupted. So
    /// every session that needs the next file waits in `wait_for_file` itself.
    pub fn reserve(
        &self,
        hint: usize,
        len: u64,
        commit: bool,
        called_at: Option<Stamp>,
        file_ready: impl Fn(Lsn) -> bool,
        mut wait_for_file: impl FnMut(Lsn) -> bool,
    ) -> Option<Reservation<'_>> {
        let reserved_at = called_at.filter(|_| commit);
        loop {
            let (strand, latch) = self.take_strand(hint);
            let mut a = self.alloc.lock().expect("allocation poisoned");
            let start = a.next_lsn;
            let end = stream_advance(start, len);
            if !file_ready(end) {
                drop(a);
                // Nothing is reserved on this strand (its position is IDLE): let it go.
                drop(latch);
                if !wait_for_file(end) {
                    return None;
                }
                continue;
            }
            let scn = if commit {
                let s = a.next_scn;
                a.next_scn = s.next();
                Some(s)
            } else {
                None
            };
            a.next_lsn = end;
            a.units.push_back(UnitEnd { end, scn, reserved_at });
            // Publish the strand position before the reserved end: see module docs.
            self.strands[strand].copied_upto.store(start.0, Release);
            self.reserved_end.store(end.0, Release);
            drop(a);
            return Some(Reservation { _latch: latch, strand, start, end, scn, pos: start });
        }
    }

    /// A strand latch: the first free one from `hint`, else `hint`'s (waiting for it).
    fn take_strand(&self, hint: usize) -> (usize, MutexGuard<'_, ()>) {
        let n = self.strands.len();
        for i in 0..n {
            let s = (hint + i) % n;
            if let Ok(g) = self.strands[s].latch.try_lock() {
                return (s, g);
            }
        }
        let s = hint % n;
        (s, self.strands[s].latch.lock().expect("strand latch poisoned"))
    }

    /// Copies `bytes` as the next part of the reserved unit, inserting block headers.
    /// Waits for ring space when needed, calling `on_wait` first (to post the writer) and
    /// recording `log buffer space` in `stats` (timed if `timed`). Returns false, leaving the copy unfinished,
    /// if `gave_up()` turns true while waiting (the log failed: nothing will ever be
    /// written again, so the unit can be abandoned).
    #[must_use]
    pub fn copy(
        &self,
        r: &mut Reservation<'_>,
        bytes: &[u8],
        stats: &StatsSet,
        timed: bool,
        on_wait: &impl Fn(),
        gave_up: &impl Fn() -> bool,
    ) -> bool {
        let mut rest = bytes;
        while !rest.is_empty() {
            let mut pos = r.pos.0;
            if pos.is_multiple_of(BLOCK_BYTES) {
                if !self.ensure_space(r, pos + BLOCK_HEADER_BYTES, stats, timed, on_wait, gave_up) {
                    return false;
                }
                let header = BlockHeader { seq: self.geometry.seq_of(Lsn(pos)), block_lsn: Lsn(pos) }
                    .encode(self.db_id);
                // SAFETY: the header position is inside this reservation and has ring space.
                unsafe { self.ring.write((pos % self.capacity) as usize, &header) };
                pos += BLOCK_HEADER_BYTES;
                r.pos = Lsn(pos);
            }
            let take = ((BLOCK_BYTES - pos % BLOCK_BYTES) as usize).min(rest.len());
            if !self.ensure_space(r, pos + take as u64, stats, timed, on_wait, gave_up) {
                return false;
            }
            // SAFETY: [pos, pos+take) lies in this reservation, within one block (so it
            // does not wrap), and below ring_floor + capacity (ensure_space).
            unsafe { self.ring.write((pos % self.capacity) as usize, &rest[..take]) };
            r.pos = Lsn(pos + take as u64);
            rest = &rest[take..];
        }
        assert!(r.pos <= r.end, "copied past the reservation: {} > {}", r.pos, r.end);
        true
    }

    fn ensure_space(
        &self,
        r: &Reservation<'_>,
        upto: u64,
        stats: &StatsSet,
        timed: bool,
        on_wait: &impl Fn(),
        gave_up: &impl Fn() -> bool,
    ) -> bool {
        let fits = || upto <= self.ring_floor.load(SeqCst) + self.capacity;
        if fits() {
            return true;
        }
        // Let the writer see what this unit has copied so far: it may be the very bytes
        // the writer needs to free the space we wait for.
        self.strands[r.strand].copied_upto.store(r.pos.0, Release);
        let t0 = timed.then(Stamp::now);
        stats.begin_wait(WaitEvent::LogBufferSpace, t0);
        stats.add(Stat::RedoBufferAllocationRetries, 1);
        while !fits() {
            if gave_up() {
                stats.cancel_wait();
                return false;
            }
            on_wait();
            self.space.wait_once(|| fits() || gave_up());
        }
        stats.record_wait(WaitEvent::LogBufferSpace, t0.map(|t| t.elapsed()));
        true
    }

    /// Wakes sessions waiting for space so they notice a failure.
    pub fn wake_space_waiters(&self) {
        self.space.notify_all();
    }

    /// Ends the copy: the strand becomes idle and its latch is released.
    pub fn finish(&self, r: Reservation<'_>) {
        assert_eq!(r.pos, r.end, "unit copied partly: {} of {}..{}", r.pos, r.start, r.end);
        self.strands[r.strand].copied_upto.store(IDLE, Release);
    }

    /// Ends a copy that gave up because the log failed. Its strand stays at the point the
    /// copy reached, so the complete point can never pass the missing bytes.
    pub fn abandon(&self, r: Reservation<'_>) {
        self.strands[r.strand].copied_upto.store(r.pos.0, Release);
    }

    /// Every byte below the returned LSN has been copied into the ring.
    pub fn complete_point(&self) -> Lsn {
        let mut point = self.reserved_end.load(Acquire);
        for s in self.strands.iter() {
            point = point.min(s.copied_upto.load(Acquire));
        }
        Lsn(point)
    }

    /// The ring bytes of `[from, to)`, as one or two slices (the ring may wrap).
    ///
    /// # Safety
    /// `[from, to)` must be below the complete point and at or above the ring floor, and
    /// the ring floor must not pass `from` while the slices live (only the writer moves
    /// it, and the writer is the caller).
    pub unsafe fn slices(&self, from: Lsn, to: Lsn) -> (&[u8], &[u8]) {
        assert!(from <= to && to.0 - from.0 <= self.capacity);
        assert!(from.0 >= self.ring_floor.load(Acquire), "reading freed ring bytes at {from}");
        let a = (from.0 % self.capacity) as usize;
        let len = (to.0 - from.0) as usize;
        let first = len.min(self.capacity as usize - a);
        (self.ring.slice(a, first), self.ring.slice(0, len - first))
    }

    /// Called by the writer once `[.., written)` is on disk: frees the ring below the
    /// block that holds `written` (that block is rewritten by the next write).
    pub fn release_upto(&self, written: Lsn) {
        self.ring_floor.store(block_floor(written).0, SeqCst);
        self.space.notify_all();
    }

    /// Removes the units that end at or before `durable` and returns the number of
    /// commits among them and the last one's SCN and unit end.
    pub fn pop_durable(&self, durable: Lsn) -> (u64, Option<(Scn, Lsn)>) {
        let mut a = self.alloc.lock().expect("allocation poisoned");
        let mut commits = 0;
        let mut last = None;
        while let Some(u) = a.units.front() {
            if u.end > durable {
                break;
            }
            if let Some(s) = u.scn {
                commits += 1;
                last = Some((s, u.end));
            }
            a.units.pop_front();
        }
        (commits, last)
    }

    /// Commits in the buffer (copied or being copied) but not yet durable.
    pub fn undurable(&self, durable: Lsn) -> CommitBacklog {
        let a = self.alloc.lock().expect("allocation poisoned");
        let mut pending = a.units.iter().filter(|u| u.end > durable && u.scn.is_some());
        let oldest = pending.clone().next().and_then(|u| u.reserved_at).map(|t| t.elapsed());
        CommitBacklog {
            commits: pending.by_ref().count() as u64,
            bytes: a.next_lsn.0.saturating_sub(durable.0),
            oldest,
        }
    }

    pub fn next_scn(&self) -> Scn {
        self.alloc.lock().expect("allocation poisoned").next_scn
    }
}
