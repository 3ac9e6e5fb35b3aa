//! The log writer: the write cycle (group commit), log switches, and the background LGWR
//! thread.
//!
//! # Group commit: a leader/follower contract
//! The right to write is the `Shared::writer` mutex (the write token). Whoever holds it
//! runs [`Writer::cycle`]: take the complete point, write every complete byte not yet
//! written as ONE request per member, sync, publish the new durable LSN and SCN, and wake
//! the waiters that write covered. The holder is usually LGWR; a session that must wait for
//! its commit and finds the token free runs the cycle itself (a foreground write, counted
//! as `redo writes by foreground`), which saves two thread hand-offs when the system is
//! quiet. Sessions that arrive while a cycle runs wait for the next one; their requests are
//! gathered into it (`requested` is a max), so exactly one sync is in flight per member and
//! the next group fills while the current sync runs.
//!
//! # Waking waiters cheaply
//! Waiters sleep on one of two event counts: the one of the write in flight if that write
//! covers them, else the one of the next write. A finished write wakes only its own event
//! count: one futex wake for all the sessions it made durable, none for those it did not.
//!
//! # Failure
//! A failed write or sync on a member takes that member out of service (logged). If no
//! member of the group took the write, the log latches as failed: the failure is kept,
//! every waiter is woken with an error, and nothing is ever acknowledged again. The sync is
//! never retried: after a failed fdatasync the kernel may have dropped the data.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::*;
use std::sync::{mpsc, Arc, Mutex};
use std::task::Waker;
use std::thread;
use std::time::Duration;

use crate::clock::Stamp;

use crate::error::{LogFailure, RedoError, Result};
use crate::format::{block_floor, LogFileHeader, BLOCK_BYTES, WRITE_MAX_BYTES};
use crate::log::{MemberState, Shared};
use crate::signal::Signal;
use crate::stats::{Stat, WaitEvent};
use crate::storage::{AlignedBuf, StorageFile};
use crate::types::{LogSeq, Lsn};

/// Which waiters a write will wake; see the module docs.
#[derive(Default)]
pub(crate) struct DurableWaiters {
    state: Mutex<WaiterState>,
    buckets: [Signal; 2],
    /// Futures waiting for durability (`DurableWait`): the LSN each needs, and its waker.
    futures: Mutex<Vec<(Lsn, Waker)>>,
    /// How many `futures` holds, so that a write with none to wake takes no lock.
    future_count: AtomicUsize,
}

#[derive(Default)]
struct WaiterState {
    in_flight: Option<(Lsn, usize)>,
    next: usize,
}

impl DurableWaiters {
    fn begin_write(&self, target: Lsn) -> usize {
        let mut s = self.state.lock().expect("waiters poisoned");
        let bucket = s.next;
        s.in_flight = Some((target, bucket));
        s.next ^= 1;
        bucket
    }

    /// The write of everything below `durable` is done (and published).
    fn end_write(&self, bucket: usize, durable: Lsn) {
        self.state.lock().expect("waiters poisoned").in_flight = None;
        self.buckets[bucket].notify_all();
        self.wake_futures(|needs| needs <= durable);
    }

    /// Wakes everyone (failure, shutdown, or a write abandoned half way).
    pub fn wake_all(&self) {
        self.state.lock().expect("waiters poisoned").in_flight = None;
        self.buckets[0].notify_all();
        self.buckets[1].notify_all();
        self.wake_futures(|_| true);
    }

    /// Registers a future that needs `lsn` durable, to be woken by the write that makes it
    /// so (or by a failure). The caller checks durability again AFTER this: a write
    /// publishes its durable LSN before it takes the lock to wake, so either it finds this
    /// waker or the check finds the LSN.
    pub fn register_future(&self, lsn: Lsn, waker: &Waker) {
        let mut futures = self.futures.lock().expect("durable futures poisoned");
        match futures.iter_mut().find(|(_, w)| w.will_wake(waker)) {
            Some(entry) => entry.0 = entry.0.min(lsn),
            None => {
                futures.push((lsn, waker.clone()));
                self.future_count.fetch_add(1, SeqCst);
            }
        }
    }

    fn wake_futures(&self, done: impl Fn(Lsn) -> bool) {
        if self.future_count.load(SeqCst) == 0 {
            return;
        }
        let mut woken = Vec::new();
        {
            let mut futures = self.futures.lock().expect("durable futures poisoned");
            let mut i = 0;
            while i < futures.len() {
                if done(futures[i].0) {
                    woken.push(futures.swap_remove(i).1);
                } else {
                    i += 1;
                }
            }
            self.future_count.fetch_sub(woken.len(), SeqCst);
        }
        // Woken outside the lock: a waker may run code of its runtime.
        for waker in woken {
            waker.wake();
        }
    }

    /// Sleeps until the write that should cover `lsn` completes (or spuriously).
    pub fn sleep_for(&self, lsn: Lsn, ready: impl Fn() -> bool) {
        self.choose(lsn).sleep(ready);
    }

    /// Picks the event count of the write that should cover `lsn` (the write in flight if
    /// it reaches `lsn`, else the next one) and reads its value, both under the lock.
    ///
    /// The value must be read under the lock, not when the waiter goes to sleep: a write
    /// that starts on the chosen count after the lock is released may end short of `lsn`
    /// (an earlier unit was still being copied); read after it, the count would let the
    /// waiter sleep on through the following write, which covers it but bumps the other
    /// count, and if nothing is written after that the waiter sleeps forever. Read under
    /// the lock, any write that begins on the chosen count after the choice changes it, so
    /// the sleep returns at once and the waiter chooses again.
    fn choose(&self, lsn: Lsn) -> SleepTicket<'_> {
        let s = self.state.lock().expect("waiters poisoned");
        let bucket = match s.in_flight {
            Some((end, b)) if lsn <= end => b,
            _ => s.next,
        };
        let signal = &self.buckets[bucket];
        SleepTicket { signal, key: signal.key() }
    }
}

/// A waiter's choice of event count and the count's value then, taken under the waiters'
/// lock (see `DurableWaiters::choose`).
struct SleepTicket<'a> {
    signal: &'a Signal,
    key: u32,
}

impl SleepTicket<'_> {
    /// Sleeps unless the count moved since the choice (or `ready` holds).
    fn sleep(self, ready: impl Fn() -> bool) {
        self.signal.wait_once_from(self.key, ready);
    }
}

/// The write token's contents: everything only the current writer touches.
pub(crate) struct Writer {
    /// End of what has been written (and synced) to the log files.
    pub written: Lsn,
    /// Open log files, `[group][member]`; None where a member could not be opened.
    pub files: Vec<Vec<Option<Box<dyn StorageFile>>>>,
    /// Highest log sequence whose files carry its header (open for writing).
    pub activated: LogSeq,
    /// Sequence of the previous write, to count log switches.
    pub last_write_seq: LogSeq,
    tail: AlignedBuf,
    header: AlignedBuf,
    members: MemberWriters,
}

impl Writer {
    pub fn new(
        written: Lsn,
        files: Vec<Vec<Option<Box<dyn StorageFile>>>>,
        activated: LogSeq,
        last_write_seq: LogSeq,
        members: MemberWriters,
    ) -> Writer {
        Writer {
            members,
            written,
            files,
            activated,
            last_write_seq,
            tail: AlignedBuf::zeroed(BLOCK_BYTES as usize),
            header: AlignedBuf::zeroed(BLOCK_BYTES as usize),
        }
    }

    /// One write cycle. Returns whether anything was written.
    pub fn cycle(&mut self, sh: &Shared, foreground: bool) -> Result<bool> {
        sh.check_failed()?;
        let complete = sh.buffer.complete_point();
        if complete <= self.written {
            return Ok(false);
        }
        let geometry = sh.geometry;
        let seq = geometry.seq_of(self.written);
        assert!(seq <= self.activated, "writing {seq} before it is activated ({})", self.activated);
        let start = block_floor(self.written);
        let target = complete.min(geometry.end_of(seq)).min(Lsn(start.0 + WRITE_MAX_BYTES));
        let full_end = block_floor(target);
        let partial = (target.0 - full_end.0) as usize;
        // SAFETY: [start, target) is below the complete point and at or above the ring
        // floor (which only this writer moves, after the write).
        let (a, b) = unsafe { sh.buffer.slices(start, full_end) };
        if partial > 0 {
            // SAFETY: as above; the bytes past `target` in this block may be being copied
            // by a session right now, so they are not read: the block is padded with zeros.
            let (p1, p2) = unsafe { sh.buffer.slices(full_end, target) };
            let tail = self.tail.as_mut_slice();
            tail[..p1.len()].copy_from_slice(p1);
            tail[p1.len()..partial].copy_from_slice(p2);
            tail[partial..].fill(0);
        }
        let tail: &[u8] = if partial > 0 { self.tail.as_slice() } else { &[] };
        // Empty slices are dropped: a request holds only real bytes (O_DIRECT checks them).
        let bufs: Vec<&[u8]> = [a, b, tail].into_iter().filter(|s| !s.is_empty()).collect();
        let bytes: u64 = bufs.iter().map(|s| s.len() as u64).sum();
        let offset = geometry.file_offset(start);
        let group = geometry.group_of(seq);

        let bucket = sh.waiters.begin_write(target);
        // `log file parallel write` is timed when the system's timed_statistics is on.
        let t0 = sh.timed_statistics().then(Stamp::now);
        let outcome = write_members(sh, &self.members, &self.files[group as usize], group, &bufs, offset);
        let elapsed = t0.map(|t| t.elapsed());
        let requests = match outcome {
            Ok(n) => n,
            Err(failure) => {
                sh.latch_failure(failure);
                sh.waiters.wake_all();
                return Err(sh.failure_error());
            }
        };

        // The write's statistics first, then its durability: a commit this write
        // acknowledges returns to a caller who then sees the write counted (a snapshot
        // taken after the last commit of a test, or by a DBA, is not one write short).
        let st = &sh.background;
        st.record_wait(WaitEvent::LogFileParallelWrite, elapsed);
        st.add(Stat::RedoWrites, 1);
        st.add(Stat::RedoWriteRequests, requests);
        st.add(Stat::RedoWriteBytes, bytes * requests);
        st.add(Stat::RedoBlocksWritten, bytes / BLOCK_BYTES);
        st.add(Stat::RedoWriteTimeUs, elapsed.map_or(0, |e| e.as_micros() as u64));
        if partial > 0 {
            st.add(Stat::RedoWastage, BLOCK_BYTES - partial as u64);
        }
        if foreground {
            st.add(Stat::RedoWritesForeground, 1);
        }

        self.written = target;
        sh.lsn_written.store(target.0, SeqCst);
        sh.buffer.release_upto(target);
        let (_commits, last_scn) = sh.buffer.pop_durable(target);
        if let Some(last) = last_scn {
            *sh.durable_commit.lock().expect("durable commit poisoned") = last;
        }
        sh.lsn_durable.store(target.0, SeqCst);
        sh.waiters.end_write(bucket, target);
        sh.touch_last_write();
        if seq > self.last_write_seq {
            if self.last_write_seq.0 > 0 {
                st.add(Stat::RedoLogSwitches, 1);
                sh.record_switch(seq);
                sh.request_checkpoint();
            }
            self.last_write_seq = seq;
        }
        Ok(true)
    }

    /// Opens log sequence `seq` for writing: writes its header on every member of its
    /// group (a member that failed before gets another chance here) and syncs.
    pub fn activate(&mut self, sh: &Shared, seq: LogSeq) -> Result<()> {
        assert_eq!(seq.0, self.activated.0 + 1, "activating out of order");
        let geometry = sh.geometry;
        let group = geometry.group_of(seq);
        let mut any = false;
        let mut first_error = None;
        for (member, slot) in self.files[group as usize].iter().enumerate() {
            let Some(file) = slot else { continue };
            let header = LogFileHeader {
                db_id: sh.db_id,
                seq,
                start_lsn: geometry.start_of(seq),
                file_size: sh.config.log_file_size,
                group,
                member: member as u32,
                activated_unix_ms: crate::log::unix_ms(),
            }
            .encode();
            self.header.as_mut_slice().copy_from_slice(&header);
            let path = sh.member_path(group, member as u32);
            match file.write_at(&[self.header.as_slice()], 0).and_then(|_| file.sync()) {
                Ok(()) => {
                    sh.set_member_state(group, member as u32, MemberState::InService);
                    any = true;
                }
                Err(e) => {
                    log::error!(
                        "redo log member {} taken out of service: header write failed: {e}",
                        path.display()
                    );
                    sh.set_member_state(group, member as u32, MemberState::WriteFailed);
                    first_error.get_or_insert(LogFailure { op: "header write", path, source: e });
                }
            }
        }
        if !any {
            let failure = first_error.unwrap_or_else(|| LogFailure {
                op: "open",
                path: sh.member_path(group, 0),
                source: std::io::Error::other("no member of the group is available"),
            });
            sh.latch_failure(failure);
            sh.waiters.wake_all();
            return Err(sh.failure_error());
        }
        self.activated = seq;
        sh.activated_end.store(geometry.end_of(seq).0, SeqCst);
        sh.activated_seq.store(seq.0, SeqCst);
        sh.switch_signal.notify_all();
        Ok(())
    }
}

type MemberResult = std::result::Result<(), (&'static str, std::io::Error)>;

fn write_and_sync(f: &dyn StorageFile, bufs: &[&[u8]], offset: u64) -> MemberResult {
    f.write_at(bufs, offset).map_err(|e| ("write", e))?;
    f.sync().map_err(|e| ("sync", e))
}

/// One member's write+sync handed to a member writer thread. It borrows the writer's file
/// and buffers through raw pointers: see `MemberWriters::write` for why that is sound.
struct MemberJob {
    member: u32,
    file: *const dyn StorageFile,
    bufs: Vec<(*const u8, usize)>,
    offset: u64,
}

// SAFETY: the pointers are only dereferenced while `MemberWriters::write` blocks waiting
// for the job's result, which keeps the file and the buffers alive and unchanged.
unsafe impl Send for MemberJob {}

/// Threads that write mirrored members (2..M) concurrently with the writer's own write of
/// the first one, kept alive for the life of the log: spawning a thread per write would
/// cost tens of microseconds against a sync of ~70.
pub(crate) struct MemberWriters {
    jobs: Vec<mpsc::Sender<MemberJob>>,
    results: mpsc::Receiver<(u32, MemberResult)>,
}

impl MemberWriters {
    pub fn new(members: u32) -> std::io::Result<MemberWriters> {
        let (done_tx, results) = mpsc::channel();
        let mut jobs = Vec::new();
        for i in 1..members {
            let (tx, rx) = mpsc::channel::<MemberJob>();
            let done = done_tx.clone();
            thread::Builder::new().name(format!("redo-member-{}", i + 1)).spawn(move || {
                for job in rx {
                    // SAFETY: see MemberJob; the sender waits for this result.
                    let file = unsafe { &*job.file };
                    let bufs: Vec<&[u8]> = job
                        .bufs
                        .iter()
                        .map(|&(p, len)| unsafe { std::slice::from_raw_parts(p, len) })
                        .collect();
                    let result = write_and_sync(file, &bufs, job.offset);
                    if done.send((job.member, result)).is_err() {
                        return;
                    }
                }
            })?;
            jobs.push(tx);
        }
        Ok(MemberWriters { jobs, results })
    }

    /// Writes `bufs` at `offset` on every member in `live` (member number, file), the first
    /// on this thread and the others on member writer threads, all at once; returns each
    /// member's result. Blocks until every job has answered, which is what makes lending
    /// the borrowed file and buffers to the other threads sound.
    fn write(
        &self,
        live: &[(u32, &dyn StorageFile)],
        bufs: &[&[u8]],
        offset: u64,
    ) -> Vec<(u32, MemberResult)> {
        let Some((&(first, first_file), rest)) = live.split_first() else { return Vec::new() };
        // Drains the outstanding results even if this thread unwinds, so no worker can
        // still be reading the borrowed buffers once they are gone.
        struct Outstanding<'a> {
            results: &'a mpsc::Receiver<(u32, MemberResult)>,
            count: usize,
            out: Vec<(u32, MemberResult)>,
        }
        impl Drop for Outstanding<'_> {
            fn drop(&mut self) {
                while self.count > 0 {
                    match self.results.recv() {
                        Ok(r) => self.out.push(r),
                        Err(_) => break,
                    }
                    self.count -= 1;
                }
            }
        }
        let mut pending =
            Outstanding { results: &self.results, count: 0, out: Vec::with_capacity(live.len()) };
        for (worker, &(member, file)) in rest.iter().enumerate() {
            let job = MemberJob {
                member,
                // SAFETY: only the lifetime is erased; see MemberJob.
                file: unsafe {
                    std::mem::transmute::<*const (dyn StorageFile + '_), *const (dyn StorageFile + 'static)>(
                        file as *const (dyn StorageFile + '_),
                    )
                },
                bufs: bufs.iter().map(|b| (b.as_ptr(), b.len())).collect(),
                offset,
            };
            match self.jobs.get(worker).map(|tx| tx.send(job)) {
                Some(Ok(())) => pending.count += 1,
                _ => pending.out.push((member, write_and_sync(file, bufs, offset))),
            }
        }
        pending.out.push((first, write_and_sync(first_file, bufs, offset)));
        while pending.count > 0 {
            match pending.results.recv() {
                Ok(r) => pending.out.push(r),
                // The threads live as long as `self`; a closed channel means one died.
                Err(_) => panic!("a redo member writer thread died while holding a write"),
            }
            pending.count -= 1;
        }
        std::mem::take(&mut pending.out)
    }
}

/// Writes `bufs` at `offset` on every in-service member of `group` (concurrently when
/// there are several) and syncs each. Returns the number of write requests issued, or the
/// failure if no member took the write.
fn write_members(
    sh: &Shared,
    pool: &MemberWriters,
    members: &[Option<Box<dyn StorageFile>>],
    group: u32,
    bufs: &[&[u8]],
    offset: u64,
) -> std::result::Result<u64, LogFailure> {
    let live: Vec<(u32, &dyn StorageFile)> = members
        .iter()
        .enumerate()
        .filter(|(m, _)| sh.member_state(group, *m as u32) == MemberState::InService)
        .filter_map(|(m, f)| f.as_deref().map(|f| (m as u32, f)))
        .collect();
    let results = pool.write(&live, bufs, offset);
    let mut ok = 0u64;
    let mut first_error = None;
    for (member, result) in results {
        match result {
            Ok(()) => ok += 1,
            Err((op, e)) => {
                let path = sh.member_path(group, member);
                log::error!("redo log member {} taken out of service: {op} failed: {e}", path.display());
                sh.set_member_state(group, member, MemberState::WriteFailed);
                first_error.get_or_insert(LogFailure { op, path, source: e });
            }
        }
    }
    if ok == 0 {
        return Err(first_error.unwrap_or_else(|| LogFailure {
            op: "write",
            path: sh.member_path(group, 0),
            source: std::io::Error::other("no member of the group is in service"),
        }));
    }
    Ok(live.len() as u64)
}

/// The background log writer. Runs until shutdown or failure.
pub(crate) fn lgwr_main(sh: Arc<Shared>) {
    // The time model's background figures, added after each round of work when
    // timed_statistics is on. The CPU time is the difference between two rounds' ends, so
    // the thread's few instructions between rounds count too; a round that starts
    // untimed forgets the previous reading, so turning timing back on never bills the
    // untimed stretch.
    let mut cpu_before: Option<Duration> = None;
    let account = |cpu_before: &mut Option<Duration>, busy_since: Stamp| {
        let cpu = crate::stats::thread_cpu_time();
        if let Some(before) = *cpu_before {
            sh.background.add(Stat::BackgroundCpuTimeUs, cpu.saturating_sub(before).as_micros() as u64);
        }
        sh.background.add(Stat::BackgroundElapsedTimeUs, busy_since.elapsed().as_micros() as u64);
        *cpu_before = Some(cpu);
    };
    loop {
        if sh.is_failed() {
            sh.waiters.wake_all();
            sh.switch_signal.notify_all();
            return;
        }
        let shutting_down = sh.shutdown.load(SeqCst);
        let activation = sh.activation_wanted();
        let write = sh.write_wanted(shutting_down);
        if activation.is_some() || write {
            let busy_since = if sh.timed_statistics() {
                if cpu_before.is_none() {
                    cpu_before = Some(crate::stats::thread_cpu_time());
                }
                Some(Stamp::now())
            } else {
                cpu_before = None;
                None
            };
            let mut w = sh.writer.lock().expect("writer poisoned");
            if let Some(seq) = sh.activation_wanted() {
                if seq.0 == w.activated.0 + 1 && w.activate(&sh, seq).is_err() {
                    continue;
                }
            }
            // Opening a group is no reason to write BATCH redo early.
            if !write && !sh.write_wanted(shutting_down) {
                continue;
            }
            let outcome = w.cycle(&sh, false);
            drop(w);
            if let Some(busy_since) = busy_since {
                account(&mut cpu_before, busy_since);
            }
            match outcome {
                Ok(true) | Err(_) => continue,
                Ok(false) => {}
            }
        }
        if shutting_down
            && sh.buffer.complete_point() >= sh.buffer.reserved_end()
            && sh.lsn_durable() >= sh.buffer.reserved_end()
        {
            sh.waiters.wake_all();
            return;
        }
        let wait = if shutting_down {
            Duration::from_millis(1)
        } else if sh.buffer.reserved_end().0 > sh.lsn_written.load(SeqCst) {
            // Unwritten redo: wake up when the background timeout fires for it.
            sh.time_to_timeout().max(Duration::from_micros(100))
        } else {
            // Nothing to write: sleep until posted (the timeout is only a safety net).
            sh.batch_flush_timeout()
        };
        thread::park_timeout(wait);
    }
}

impl From<LogFailure> for RedoError {
    fn from(f: LogFailure) -> RedoError {
        RedoError::LogFailed(Arc::new(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::time::Duration;

    /// The sequence issue 19 suspected: a waiter chooses its event count, then, before it
    /// sleeps, a write that stops short of its LSN (an earlier unit still being copied)
    /// starts and ends on that count, and the write that does cover it uses the other one.
    /// Nothing else is written afterwards. The waiter must not sleep through it.
    #[test]
    fn a_waiter_is_not_lost_when_a_short_write_ends_between_its_choice_and_its_sleep() {
        let waiters = Arc::new(DurableWaiters::default());
        let durable = Arc::new(AtomicU64::new(0));
        let lsn = Lsn(8192);
        let ticket_ready = {
            let (waiters, durable) = (waiters.clone(), durable.clone());
            let (chosen_tx, chosen_rx) = mpsc::channel();
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let (done_tx, done_rx) = mpsc::channel();
            thread::spawn(move || {
                let ready = || durable.load(SeqCst) >= lsn.0 || durable.load(SeqCst) == u64::MAX;
                let ticket = waiters.choose(lsn);
                chosen_tx.send(()).expect("test alive");
                go_rx.recv().expect("test alive");
                // The first sleep is on the count chosen before the writes ran; later
                // rounds choose again, as `Shared::wait_durable` does.
                ticket.sleep(ready);
                while !ready() {
                    waiters.sleep_for(lsn, ready);
                }
                done_tx.send(()).expect("test alive");
            });
            (chosen_rx, go_tx, done_rx)
        };
        let (chosen, go, done) = ticket_ready;
        chosen.recv().expect("waiter alive");
        // A write that stops short of the waiter's LSN starts and ends on its count...
        let short = waiters.begin_write(Lsn(4096));
        durable.store(4096, SeqCst);
        waiters.end_write(short, Lsn(4096));
        // ...then the waiter goes to sleep, and the write that covers it runs on the other.
        go.send(()).expect("waiter alive");
        thread::sleep(Duration::from_millis(20));
        let covering = waiters.begin_write(lsn);
        assert_ne!(covering, short, "consecutive writes use the two counts in turn");
        durable.store(lsn.0, SeqCst);
        waiters.end_write(covering, lsn);
        let woke = done.recv_timeout(Duration::from_secs(5)).is_ok();
        if !woke {
            // Free the thread before failing.
            durable.store(u64::MAX, SeqCst);
            waiters.wake_all();
        }
        assert!(woke, "the waiter slept through the write that made its LSN durable");
    }
}
