//! Row and table locks (Oracle's TX enqueue), with deadlock detection.
//!
//! - A transaction locks a row (table, primary key) before it inserts, updates or deletes
//!   it, and holds the lock until its commit record is in the log buffer (early lock
//!   release) or it rolls back. Inserts lock the key too, so two transactions inserting
//!   the same key serialize and the second gets "duplicate key" once the first commits.
//! - DDL (CREATE, DROP, TRUNCATE) locks the whole table exclusively: it waits for every
//!   other transaction holding row locks on the table, and row lockers wait for it.
//! - A key may also be locked in share mode (`lock_row_shared`), by any number of
//!   transactions at once: a foreign key's check locks the parent key it found this way
//!   (PostgreSQL's `FOR KEY SHARE`), so that children of one parent are inserted
//!   concurrently while the parent's deletion, which locks the key exclusively, waits for
//!   them (and they for it).
//! - A transaction about to wait first follows the wait-for graph from the holders; if
//!   that leads back to itself, it gets a deadlock error instead of waiting (it is the
//!   victim; the others go on).
//!
//! A wait ends early, with `DbError::Canceled`, when the waiter's session is cancelled
//! (its `CancelFlag` wakes it), or with `DbError::StatementTimeout` at the statement's
//! deadline (its sleeps end there); the waiter then holds nothing it did not hold before.
//!
//! The row locks are partitioned like the committed state (`state::shard_of` of the key),
//! each shard under its own mutex, so the commit path's lock and release take only the
//! mutex of their key's shard. Every shard also records every table lock, so a row
//! locker looks at one shard; a table lock takes all shards. The wait-for graph has its
//! own mutex, taken only by waits and by the releases that have a waiter to wake.
//!
//! Invariants: a row of table T is locked only by transactions that do not conflict with
//! T's table lock holder, and each lock has exactly one owner. A waiter registers in the
//! graph while it holds the shard mutex under which it saw its blockers, so a blocker's
//! release (which needs that mutex) comes after the registration and wakes it. Locks are
//! taken in the order: shards in ascending order, then the graph.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use redo::TxnId;

use crate::error::{DbError, DbResult};
use crate::lock_wait::{LockWaitSignal, Sleeper};
use crate::schema::Key;
use crate::sessions::CancelFlag;
use crate::state::{shard_of, SHARDS};

/// The locks of the keys of one shard.
#[derive(Default)]
struct LockShard {
    /// The owner of each locked row, by table then key: found from `&str` and `&Key`
    /// without building an owned key. A table's entry stays when its last lock goes
    /// (tables are few), so the next lock does not allocate its name again. (No count of
    /// each transaction's locks: a table lock, which is rare, finds the holders it waits
    /// for among the owners, and the commit path does not keep a count it never reads.)
    /// A hash map, not an ordered one: nothing needs the locked keys in order, and the
    /// B-tree's insert and remove cost more (a prepared UPDATE + COMMIT: 10,561
    /// instructions with the B-tree, 10,431 with the hash map; callgrind).
    rows: FxHashMap<String, FxHashMap<Key, TxnId>>,
    /// The holders of each key locked in share mode, by table then key (empty unless
    /// foreign keys are checked: the exclusive path looks here only if it is not).
    shared: FxHashMap<String, FxHashMap<Key, SmallVec<[TxnId; 2]>>>,
    /// Every table lock (the same in every shard).
    tables: FxHashMap<String, TxnId>,
}

/// Who waits for whom.
#[derive(Default)]
struct WaitGraph {
    /// Who each waiting transaction waits for.
    waits_for: HashMap<TxnId, Vec<TxnId>>,
    /// What wakes each waiting transaction (its thread, or its deferred wait's signal)
    /// when one of its blockers releases (only those: a release wakes no waiter it does
    /// not concern).
    sleepers: HashMap<TxnId, Sleeper>,
}

impl WaitGraph {
    fn would_deadlock(&self, me: TxnId, holders: &[TxnId]) -> bool {
        let mut seen = HashSet::new();
        let mut stack: Vec<TxnId> = holders.to_vec();
        while let Some(t) = stack.pop() {
            if t == me {
                return true;
            }
            if seen.insert(t) {
                if let Some(next) = self.waits_for.get(&t) {
                    stack.extend(next.iter().copied());
                }
            }
        }
        false
    }
}

/// What a transaction holds, so it can release everything at once.
#[derive(Default, Debug)]
pub struct HeldLocks {
    /// Row locks per table (a transaction touches few tables: a short list).
    rows: Vec<(String, Vec<Key>)>,
    /// Keys locked in share mode, per table.
    shared: Vec<(String, Vec<Key>)>,
    tables: Vec<String>,
}

impl HeldLocks {
    pub fn is_empty(&self) -> bool {
        self.rows.iter().all(|(_, keys)| keys.is_empty()) && self.shared.is_empty() && self.tables.is_empty()
    }

    /// Forgets every lock (they are released), keeping each table's entry and room for
    /// keys: a session's next transaction reuses them instead of allocating again.
    fn clear(&mut self) {
        for (_, keys) in &mut self.rows {
            keys.clear();
        }
        self.shared.clear();
        self.tables.clear();
    }

    fn add_row(&mut self, table: &str, key: Key) {
        match self.rows.iter_mut().find(|(t, _)| t == table) {
            Some((_, keys)) => keys.push(key),
            None => self.rows.push((table.to_string(), vec![key])),
        }
    }

    fn add_shared(&mut self, table: &str, key: Key) {
        match self.shared.iter_mut().find(|(t, _)| t == table) {
            Some((_, keys)) => keys.push(key),
            None => self.shared.push((table.to_string(), vec![key])),
        }
    }
}

/// The time a transaction spent waiting for locks (the `enq: TX - row lock contention`
/// wait), returned so the caller can count it.
pub type LockWait = Option<Duration>;

/// A row lock granted: how long it waited, and whether the transaction took it now (false:
/// it held it already).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowLock {
    pub waited: LockWait,
    pub acquired: bool,
}

/// A shard's mutex on a cache line of its own (two sessions locking keys of different
/// shards do not move one line between their CPUs).
#[repr(align(128))]
#[derive(Default)]
struct PaddedShard(Mutex<LockShard>);

pub struct LockManager {
    /// What a transaction that finds its lock taken does.
    on_conflict: OnConflict,
    shards: Box<[PaddedShard]>,
    graph: Mutex<WaitGraph>,
    /// Transactions registered in `graph` as waiting: while none is, a release wakes
    /// nobody and does not take the graph's mutex.
    waiting: AtomicUsize,
}

/// What one lock request does when the key is taken (`lock_row`, `lock_row_shared`).
pub enum OnBusy<'a> {
    /// Sleeps until the holders release it (`enq: TX - row lock contention`).
    Sleep,
    /// Registers the wait with a signal (left in the slot) and returns
    /// `DbError::LockWaitDeferred` instead of sleeping (see `lock_wait`).
    Defer(&'a mut Option<Arc<LockWaitSignal>>),
    /// Fails at once with `DbError::LockNotAvailable` (55P03), registering nothing:
    /// `FOR UPDATE NOWAIT`, and `SKIP LOCKED`, which skips the row on it.
    Fail,
}

/// What a transaction that finds its lock taken does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnConflict {
    /// Waits for the holder (`enq: TX - row lock contention`): a database's sessions.
    Wait,
    /// Fails at once with 55P03 (`FOR UPDATE NOWAIT`'s error): a database driven by one
    /// thread (`Scheduling::Driven`), where the holder could never go on to release it.
    Fail,
}

impl Default for LockManager {
    fn default() -> LockManager {
        LockManager::new(OnConflict::Wait)
    }
}

impl LockManager {
    pub fn new(on_conflict: OnConflict) -> LockManager {
        LockManager {
            on_conflict,
            shards: (0..SHARDS).map(|_| PaddedShard::default()).collect(),
            graph: Mutex::default(),
            waiting: AtomicUsize::new(0),
        }
    }
}

/// How long a lock waiter sleeps before looking again on its own. Only a safety net: a
/// release wakes exactly the transactions waiting for the releaser.
pub(crate) const LOCK_RECHECK: Duration = Duration::from_millis(100);

impl LockManager {
    fn shard(&self, index: usize) -> MutexGuard<'_, LockShard> {
        self.shards[index].0.lock().expect("lock table poisoned")
    }

    fn graph(&self) -> MutexGuard<'_, WaitGraph> {
        self.graph.lock().expect("wait graph poisoned")
    }

    /// Locks one row for `txn`, waiting while another transaction holds it or holds the
    /// table exclusively (until `cancel` is raised). Sets `slept` if it waited, whether
    /// it then got the lock or failed (cancelled, or a deadlock found on a later look):
    /// the wait happened either way, and the session counts it.
    ///
    /// `on_busy` says what a taken row does: sleep; or, deferred, not slept here but
    /// registered with a new signal as what wakes it, the signal left in the slot, and
    /// the call failing with `DbError::LockWaitDeferred` (see `lock_wait`; `end_wait`
    /// ends the registration; no signal is made unless a wait is: the uncontended path
    /// allocates nothing); or fail at once (NOWAIT, SKIP LOCKED).
    #[allow(clippy::too_many_arguments)]
    pub fn lock_row(
        &self,
        txn: TxnId,
        held: &mut HeldLocks,
        table: &str,
        key: &Key,
        cancel: &CancelFlag,
        slept: &mut bool,
        on_busy: OnBusy<'_>,
    ) -> DbResult<RowLock> {
        let what = || format!("row {key:?} of \"{table}\"");
        self.lock_key(shard_of(key), txn, cancel, slept, on_busy, what, |shard| {
            let mut blockers = Vec::new();
            blockers.extend(shard.tables.get(table).copied().filter(|&owner| owner != txn));
            if !shard.shared.is_empty() {
                let sharers = shard.shared.get(table).and_then(|keys| keys.get(key));
                blockers.extend(sharers.into_iter().flatten().copied().filter(|&t| t != txn));
            }
            let owners = match shard.rows.get_mut(table) {
                Some(owners) => owners,
                None => shard.rows.entry(table.to_string()).or_default(),
            };
            // One walk of the owners for the look and the insert.
            match owners.entry(key.clone()) {
                Entry::Occupied(owner) if *owner.get() == txn => Ok(false),
                Entry::Occupied(owner) => {
                    blockers.push(*owner.get());
                    Err(blockers)
                }
                Entry::Vacant(free) if blockers.is_empty() => {
                    free.insert(txn);
                    held.add_row(table, key.clone());
                    Ok(true)
                }
                Entry::Vacant(_) => Err(blockers),
            }
        })
    }

    /// Locks one key in share mode for `txn`: beside other share-mode holders, waiting
    /// while another transaction holds it exclusively or holds the table (until `cancel`
    /// is raised). A transaction holding the key exclusively has it already. Sets `slept`
    /// and goes on a taken key as `lock_row` does.
    #[allow(clippy::too_many_arguments)]
    pub fn lock_row_shared(
        &self,
        txn: TxnId,
        held: &mut HeldLocks,
        table: &str,
        key: &Key,
        cancel: &CancelFlag,
        slept: &mut bool,
        on_busy: OnBusy<'_>,
    ) -> DbResult<RowLock> {
        let what = || format!("key {key:?} of \"{table}\" (share)");
        self.lock_key(shard_of(key), txn, cancel, slept, on_busy, what, |shard| {
            let mut blockers: Vec<TxnId> = Vec::new();
            blockers.extend(shard.tables.get(table).copied().filter(|&owner| owner != txn));
            match shard.rows.get(table).and_then(|owners| owners.get(key)) {
                Some(&owner) if owner == txn => return Ok(false),
                Some(&owner) => blockers.push(owner),
                None => {}
            }
            if !blockers.is_empty() {
                return Err(blockers);
            }
            let holders = shard.shared.entry(table.to_string()).or_default().entry(key.clone()).or_default();
            if holders.contains(&txn) {
                return Ok(false);
            }
            holders.push(txn);
            held.add_shared(table, key.clone());
            Ok(true)
        })
    }

    /// The wait loop of a key's lock in shard `index`: `attempt` looks under the shard's
    /// mutex and either has the lock (`Ok(acquired)`: false when `txn` held it already)
    /// or names the transactions in the way, which this waits for before it looks again.
    /// Sets `slept` as `lock_row` does. Inlined into each caller: `lock_row` is on every
    /// UPDATE's path.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn lock_key(
        &self,
        index: usize,
        txn: TxnId,
        cancel: &CancelFlag,
        slept: &mut bool,
        mut on_busy: OnBusy<'_>,
        what: impl Fn() -> String,
        mut attempt: impl FnMut(&mut LockShard) -> Result<bool, Vec<TxnId>>,
    ) -> DbResult<RowLock> {
        let mut waited_since: Option<Instant> = None;
        loop {
            let mut shard = self.shard(index);
            match attempt(&mut shard) {
                Ok(acquired) => return Ok(RowLock { waited: waited_since.map(|t| t.elapsed()), acquired }),
                Err(blockers) => match &mut on_busy {
                    OnBusy::Defer(slot) => {
                        return Err(self.defer_wait(shard, txn, blockers, cancel, slot, &what))
                    }
                    OnBusy::Fail => return Err(DbError::LockNotAvailable(what())),
                    OnBusy::Sleep => self.wait(shard, txn, blockers, &mut waited_since, cancel, &what)?,
                },
            }
            *slept = true;
        }
    }

    /// Locks a table exclusively for DDL, waiting for every other transaction with row
    /// locks on it (until `cancel` is raised). Sets `slept` as `lock_row` does.
    pub fn lock_table(
        &self,
        txn: TxnId,
        held: &mut HeldLocks,
        table: &str,
        cancel: &CancelFlag,
        slept: &mut bool,
    ) -> DbResult<LockWait> {
        let mut waited_since: Option<Instant> = None;
        loop {
            let mut all: Vec<MutexGuard<'_, LockShard>> = (0..SHARDS).map(|i| self.shard(i)).collect();
            let mut blockers: Vec<TxnId> = Vec::new();
            for shard in &all {
                let owners = shard.rows.get(table).into_iter().flat_map(|owners| owners.values());
                let sharers = shard.shared.get(table).into_iter().flat_map(|keys| keys.values().flatten());
                for &t in owners.chain(sharers) {
                    if t != txn && !blockers.contains(&t) {
                        blockers.push(t);
                    }
                }
            }
            match all[0].tables.get(table) {
                Some(&owner) if owner == txn && blockers.is_empty() => {
                    return Ok(waited_since.map(|t| t.elapsed()))
                }
                Some(&owner) if owner != txn => blockers.push(owner),
                _ => {}
            }
            if blockers.is_empty() {
                for shard in &mut all {
                    shard.tables.insert(table.to_string(), txn);
                }
                held.tables.push(table.to_string());
                return Ok(waited_since.map(|t| t.elapsed()));
            }
            self.wait(all, txn, blockers, &mut waited_since, cancel, || format!("table \"{table}\""))?;
            *slept = true;
        }
    }

    /// Registers `txn` as waiting for `blockers` (seen under `shards`, still held), lets
    /// go of the shards and sleeps until a blocker's release wakes it (or the recheck
    /// interval passes, or a cancel). The caller then looks again.
    fn wait<G>(
        &self,
        shards: G,
        txn: TxnId,
        blockers: Vec<TxnId>,
        waited_since: &mut Option<Instant>,
        cancel: &CancelFlag,
        what: impl Fn() -> String,
    ) -> DbResult<()> {
        self.register_wait(txn, blockers, cancel, Sleeper::Thread(std::thread::current()), what)?;
        waited_since.get_or_insert_with(Instant::now);
        drop(shards);
        // A release between the drop and the park leaves the wake-up token: none is lost.
        // A cancel wakes the sleeper too, and is seen by the check above on the next turn.
        cancel.sleep(LOCK_RECHECK);
        self.end_wait(txn);
        Ok(())
    }

    /// As `wait`, but registers a signal (left in `slot`) as what wakes `txn` and returns
    /// instead of sleeping: `DbError::LockWaitDeferred`, or the error that ends the wait
    /// at once (a cancel, a deadlock, `OnConflict::Fail`), which registers nothing.
    fn defer_wait(
        &self,
        shard: MutexGuard<'_, LockShard>,
        txn: TxnId,
        blockers: Vec<TxnId>,
        cancel: &CancelFlag,
        slot: &mut Option<Arc<LockWaitSignal>>,
        what: impl Fn() -> String,
    ) -> DbError {
        let signal = Arc::new(LockWaitSignal::default());
        if let Err(e) = self.register_wait(txn, blockers, cancel, Sleeper::Signal(signal.clone()), what) {
            return e;
        }
        *slot = Some(signal);
        // The shard goes after the registration: a blocker's release, which needs it,
        // finds the waiter registered.
        drop(shard);
        DbError::LockWaitDeferred
    }

    /// Registers `txn` in the wait-for graph as waiting for `blockers`, woken by
    /// `sleeper`, unless the wait must end at once: a cancel or a passed deadline, a
    /// database that does not wait (`OnConflict::Fail`), or a deadlock (a path from the
    /// blockers back to `txn`), in which case nothing is registered. The caller still
    /// holds the shard under which it saw the blockers.
    fn register_wait(
        &self,
        txn: TxnId,
        blockers: Vec<TxnId>,
        cancel: &CancelFlag,
        sleeper: Sleeper,
        what: impl Fn() -> String,
    ) -> DbResult<()> {
        cancel.check()?;
        if self.on_conflict == OnConflict::Fail {
            return Err(DbError::LockNotAvailable(what()));
        }
        let mut graph = self.graph();
        if graph.would_deadlock(txn, &blockers) {
            return Err(DbError::Deadlock(format!(
                "transaction {txn} waits for {} held by transaction {}, which waits (directly or not) for {txn}",
                what(),
                blockers[0]
            )));
        }
        graph.waits_for.insert(txn, blockers);
        graph.sleepers.insert(txn, sleeper);
        self.waiting.fetch_add(1, SeqCst);
        Ok(())
    }

    /// Ends the wait `register_wait` registered for `txn` (woken or not): a sleeper's
    /// after its sleep, a deferred one's when its caller ends it.
    pub fn end_wait(&self, txn: TxnId) {
        let mut graph = self.graph();
        let registered = graph.waits_for.remove(&txn).is_some();
        assert!(registered, "transaction {txn} has a wait registered");
        graph.sleepers.remove(&txn);
        self.waiting.fetch_sub(1, SeqCst);
    }

    /// Releases one row lock `txn` took last for `table` (a key an exact-key UPDATE or
    /// DELETE locked and then found no row to change), waking its waiters.
    pub fn unlock_row(&self, txn: TxnId, held: &mut HeldLocks, table: &str, key: &Key) {
        let (_, keys) =
            held.rows.iter_mut().find(|(t, _)| t == table).expect("the table's row locks are held");
        let at = keys.iter().rposition(|k| k == key).expect("the row lock is held");
        let key = keys.swap_remove(at);
        let one = HeldLocks { rows: vec![(table.to_string(), vec![key])], ..HeldLocks::default() };
        self.release_batch(std::iter::once((txn, &one)));
        held.rows.retain(|(_, keys)| !keys.is_empty());
    }

    /// Releases everything `held` holds and wakes the transactions waiting for `txn`.
    pub fn release_all(&self, txn: TxnId, held: &mut HeldLocks) {
        if held.is_empty() {
            return;
        }
        self.release_batch(std::iter::once((txn, &*held)));
        held.clear();
    }

    /// Releases the locks of several transactions (the committed transactions one apply
    /// made visible), and wakes exactly the transactions that waited for one of them.
    pub fn release_batch<'a>(&self, transactions: impl Iterator<Item = (TxnId, &'a HeldLocks)>) {
        let mut released: smallvec::SmallVec<[TxnId; 4]> = smallvec::SmallVec::new();
        for (txn, held) in transactions {
            if held.is_empty() {
                continue;
            }
            released.push(txn);
            // Consecutive keys of one shard under one acquisition of its mutex.
            let mut current: Option<(usize, MutexGuard<'_, LockShard>)> = None;
            for (table, keys) in &held.rows {
                for key in keys {
                    let index = shard_of(key);
                    if current.as_ref().is_none_or(|(i, _)| *i != index) {
                        // Let go first: holding one shard while waiting for another
                        // out of ascending order could deadlock with a table lock.
                        drop(current.take());
                        current = Some((index, self.shard(index)));
                    }
                    let (_, st) = current.as_mut().expect("just locked");
                    let owners = st.rows.get_mut(table).expect("a held row lock's table has locks");
                    let owner = owners.remove(key);
                    assert_eq!(owner, Some(txn), "row lock {key:?} of {table} not held by {txn}");
                }
            }
            drop(current);
            for (table, keys) in &held.shared {
                for key in keys {
                    let mut st = self.shard(shard_of(key));
                    let keys_of_table =
                        st.shared.get_mut(table).expect("a held share lock's table has locks");
                    let holders = keys_of_table.get_mut(key).expect("a held share lock is recorded");
                    let at = holders.iter().position(|&t| t == txn).expect("the share lock is held");
                    holders.swap_remove(at);
                    if holders.is_empty() {
                        keys_of_table.remove(key);
                        if keys_of_table.is_empty() {
                            st.shared.remove(table);
                        }
                    }
                }
            }
            if !held.tables.is_empty() {
                let mut all: Vec<MutexGuard<'_, LockShard>> = (0..SHARDS).map(|i| self.shard(i)).collect();
                for t in &held.tables {
                    for shard in &mut all {
                        if shard.tables.get(t) == Some(&txn) {
                            shard.tables.remove(t);
                        }
                    }
                }
            }
        }
        // After the shards: a waiter registered before it let go of the shard it saw us
        // in, so its registration is visible here.
        if released.is_empty() || self.waiting.load(SeqCst) == 0 {
            return;
        }
        let graph = self.graph();
        let wake: Vec<Sleeper> = graph
            .waits_for
            .iter()
            .filter(|(_, blockers)| blockers.iter().any(|b| released.contains(b)))
            .filter_map(|(waiter, _)| graph.sleepers.get(waiter).cloned())
            .collect();
        drop(graph);
        for sleeper in wake {
            sleeper.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;
    use std::sync::Arc;

    static NO_CANCEL: std::sync::LazyLock<CancelFlag> = std::sync::LazyLock::new(CancelFlag::default);

    fn key(i: i64) -> Key {
        Key::from_elem(Value::Int(i), 1)
    }

    #[test]
    fn a_second_locker_waits_until_the_first_releases() {
        let locks = Arc::new(LockManager::default());
        let mut a = HeldLocks::default();
        assert_eq!(
            locks
                .lock_row(TxnId(1), &mut a, "t", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep)
                .unwrap()
                .waited,
            None
        );
        let l2 = locks.clone();
        let waiter = std::thread::spawn(move || {
            let mut b = HeldLocks::default();
            let waited = l2
                .lock_row(TxnId(2), &mut b, "t", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep)
                .unwrap()
                .waited;
            l2.release_all(TxnId(2), &mut b);
            waited
        });
        std::thread::sleep(Duration::from_millis(50));
        locks.release_all(TxnId(1), &mut a);
        let waited = waiter.join().unwrap().expect("it waited");
        assert!(waited >= Duration::from_millis(40), "{waited:?}");
    }

    #[test]
    fn a_cancelled_waiter_stops_waiting_at_once_and_holds_nothing() {
        let locks = Arc::new(LockManager::default());
        let mut a = HeldLocks::default();
        locks.lock_row(TxnId(1), &mut a, "t", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep).unwrap();
        let cancel = Arc::new(CancelFlag::default());
        let (l2, c2) = (locks.clone(), cancel.clone());
        let waiter = std::thread::spawn(move || {
            let mut b = HeldLocks::default();
            let started = Instant::now();
            let mut slept = false;
            let result = l2.lock_row(TxnId(2), &mut b, "t", &key(1), &c2, &mut slept, OnBusy::Sleep);
            (result, b.is_empty(), started.elapsed(), slept)
        });
        std::thread::sleep(Duration::from_millis(50));
        cancel.request();
        let (result, holds_nothing, waited, slept) = waiter.join().unwrap();
        assert!(matches!(result, Err(DbError::Canceled)), "{result:?}");
        assert!(slept, "a cancelled wait still says it waited (the session counts it)");
        assert!(holds_nothing);
        assert!(waited >= Duration::from_millis(40), "it waited first: {waited:?}");
        // The holder goes on; the row is free once it releases.
        locks.release_all(TxnId(1), &mut a);
        locks.lock_row(TxnId(3), &mut a, "t", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep).unwrap();
        locks.release_all(TxnId(3), &mut a);
    }

    #[test]
    fn a_waiter_past_its_statement_deadline_stops_with_a_timeout_and_holds_nothing() {
        let locks = LockManager::default();
        let mut a = HeldLocks::default();
        locks.lock_row(TxnId(1), &mut a, "t", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep).unwrap();
        let cancel = CancelFlag::default();
        let started = Instant::now();
        cancel.set_deadline(Some(started + Duration::from_millis(20)));
        let mut b = HeldLocks::default();
        let mut slept = false;
        let result = locks.lock_row(TxnId(2), &mut b, "t", &key(1), &cancel, &mut slept, OnBusy::Sleep);
        let waited = started.elapsed();
        assert!(matches!(result, Err(DbError::StatementTimeout)), "{result:?}");
        assert!(slept, "a timed-out wait still says it waited (the session counts it)");
        assert!(b.is_empty());
        assert!(waited >= Duration::from_millis(20), "it waited for its deadline: {waited:?}");
        // The deadline ended the sleep, not the recheck interval after it.
        assert!(waited < LOCK_RECHECK, "{waited:?}");
        locks.release_all(TxnId(1), &mut a);
    }

    #[test]
    fn a_lock_request_that_fails_when_busy_fails_at_once_and_registers_nothing() {
        let locks = LockManager::default();
        let (mut a, mut b) = (HeldLocks::default(), HeldLocks::default());
        locks.lock_row(TxnId(1), &mut a, "t", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep).unwrap();
        let mut slept = false;
        let e =
            locks.lock_row(TxnId(2), &mut b, "t", &key(1), &NO_CANCEL, &mut slept, OnBusy::Fail).unwrap_err();
        assert!(matches!(e, DbError::LockNotAvailable(_)), "{e:?}");
        assert!(!slept);
        let e = locks.lock_row_shared(TxnId(2), &mut b, "t", &key(1), &NO_CANCEL, &mut slept, OnBusy::Fail);
        assert!(matches!(e, Err(DbError::LockNotAvailable(_))), "{e:?}");
        // A free row, and one it holds, it gets as ever.
        assert!(
            locks
                .lock_row(TxnId(2), &mut b, "t", &key(2), &NO_CANCEL, &mut slept, OnBusy::Fail)
                .unwrap()
                .acquired
        );
        assert!(
            !locks
                .lock_row(TxnId(2), &mut b, "t", &key(2), &NO_CANCEL, &mut slept, OnBusy::Fail)
                .unwrap()
                .acquired
        );
        // Nothing registered: 1 may wait for 2's row without a deadlock being seen.
        locks.release_all(TxnId(2), &mut b);
        locks.lock_row(TxnId(1), &mut a, "t", &key(2), &NO_CANCEL, &mut false, OnBusy::Fail).unwrap();
    }

    #[test]
    fn a_deferred_wait_is_registered_woken_by_the_release_and_seen_by_deadlock_detection() {
        let locks = LockManager::default();
        let (mut a, mut b) = (HeldLocks::default(), HeldLocks::default());
        locks.lock_row(TxnId(1), &mut a, "t", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep).unwrap();
        locks.lock_row(TxnId(2), &mut b, "t", &key(2), &NO_CANCEL, &mut false, OnBusy::Sleep).unwrap();
        // Transaction 2 finds key 1 held: its wait is left in the slot, not slept.
        let mut slot = None;
        let e =
            locks.lock_row(TxnId(2), &mut b, "t", &key(1), &NO_CANCEL, &mut false, OnBusy::Defer(&mut slot));
        assert!(matches!(e, Err(DbError::LockWaitDeferred)), "{e:?}");
        let signal = slot.expect("a signal for the deferred wait");
        assert!(!signal.is_raised());
        // Registered as waiting for 1: 1 closing the cycle is refused.
        let e = locks
            .lock_row(TxnId(1), &mut a, "t", &key(2), &NO_CANCEL, &mut false, OnBusy::Sleep)
            .unwrap_err();
        assert!(matches!(e, DbError::Deadlock(_)), "{e:?}");
        // 1's release wakes it; its retry takes the lock.
        locks.release_all(TxnId(1), &mut a);
        assert!(signal.is_raised());
        locks.end_wait(TxnId(2));
        assert_eq!(locks.waiting.load(SeqCst), 0);
        let mut slot = None;
        let lock =
            locks.lock_row(TxnId(2), &mut b, "t", &key(1), &NO_CANCEL, &mut false, OnBusy::Defer(&mut slot));
        assert!(lock.unwrap().acquired);
        assert!(slot.is_none(), "no wait, no signal");
    }

    #[test]
    fn a_cycle_of_waits_is_a_deadlock_for_the_transaction_closing_it() {
        let locks = Arc::new(LockManager::default());
        let (mut a, mut b) = (HeldLocks::default(), HeldLocks::default());
        locks.lock_row(TxnId(1), &mut a, "t", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep).unwrap();
        locks.lock_row(TxnId(2), &mut b, "t", &key(2), &NO_CANCEL, &mut false, OnBusy::Sleep).unwrap();
        let l2 = locks.clone();
        let t1 = std::thread::spawn(move || {
            let r = l2.lock_row(TxnId(1), &mut a, "t", &key(2), &NO_CANCEL, &mut false, OnBusy::Sleep);
            l2.release_all(TxnId(1), &mut a);
            r
        });
        // Let transaction 1 start waiting for row 2.
        std::thread::sleep(Duration::from_millis(50));
        let e = locks
            .lock_row(TxnId(2), &mut b, "t", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep)
            .unwrap_err();
        assert!(matches!(e, DbError::Deadlock(_)), "{e}");
        assert_eq!(e.sqlstate(), "40P01");
        locks.release_all(TxnId(2), &mut b);
        assert!(t1.join().unwrap().is_ok(), "the other transaction goes on");
    }

    #[test]
    fn row_locks_across_shards_exclude_each_other_under_many_lockers_and_table_locks() {
        // Eight transactions at a time lock random keys (spread over the shards) in random
        // order, while one takes the table lock now and then: every key and the table have
        // at most one owner at any time, deadlock victims retry, and nobody hangs.
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
        const KEYS: usize = 24;
        let locks = Arc::new(LockManager::default());
        let owned: Arc<Vec<AtomicBool>> = Arc::new((0..KEYS).map(|_| AtomicBool::new(false)).collect());
        let table_owned = Arc::new(AtomicBool::new(false));
        let next_txn = Arc::new(AtomicU64::new(1));
        let waits = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..9u64)
            .map(|t| {
                let (locks, owned, table_owned, next_txn, waits) =
                    (locks.clone(), owned.clone(), table_owned.clone(), next_txn.clone(), waits.clone());
                std::thread::spawn(move || {
                    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ t;
                    let mut random = move || {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x
                    };
                    for round in 0..200 {
                        let txn = TxnId(next_txn.fetch_add(1, SeqCst));
                        let mut held = HeldLocks::default();
                        if t == 8 {
                            if round % 20 == 0 {
                                locks.lock_table(txn, &mut held, "t", &NO_CANCEL, &mut false).unwrap();
                                assert!(
                                    owned.iter().all(|o| !o.load(SeqCst)),
                                    "a row locked under a table lock"
                                );
                                assert!(!table_owned.swap(true, SeqCst));
                                std::thread::yield_now();
                                table_owned.store(false, SeqCst);
                                locks.release_all(txn, &mut held);
                            }
                            continue;
                        }
                        let mut mine = Vec::new();
                        for _ in 0..3 {
                            let k = (random() % KEYS as u64) as usize;
                            if mine.contains(&k) {
                                continue;
                            }
                            match locks.lock_row(
                                txn,
                                &mut held,
                                "t",
                                &key(k as i64),
                                &NO_CANCEL,
                                &mut false,
                                OnBusy::Sleep,
                            ) {
                                Ok(lock) => {
                                    waits.fetch_add(lock.waited.is_some() as u64, SeqCst);
                                    assert!(!table_owned.load(SeqCst), "a row locked under a table lock");
                                    assert!(!owned[k].swap(true, SeqCst), "row {k} locked twice");
                                    mine.push(k);
                                    // Holding it a while, so that others come to wait.
                                    std::thread::yield_now();
                                }
                                Err(DbError::Deadlock(_)) => break,
                                Err(e) => panic!("{e}"),
                            }
                        }
                        for k in mine {
                            owned[k].store(false, SeqCst);
                        }
                        locks.release_all(txn, &mut held);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert!(waits.load(SeqCst) > 0, "the lockers met");
        let mut held = HeldLocks::default();
        assert_eq!(
            locks.lock_table(TxnId(u64::MAX), &mut held, "t", &NO_CANCEL, &mut false).unwrap(),
            None,
            "all released"
        );
    }

    #[test]
    fn a_table_lock_waits_for_row_lockers_and_blocks_new_ones() {
        let locks = Arc::new(LockManager::default());
        let mut a = HeldLocks::default();
        locks.lock_row(TxnId(1), &mut a, "t", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep).unwrap();
        let l2 = locks.clone();
        let ddl = std::thread::spawn(move || {
            let mut d = HeldLocks::default();
            let waited = l2.lock_table(TxnId(9), &mut d, "t", &NO_CANCEL, &mut false).unwrap();
            (waited, d)
        });
        std::thread::sleep(Duration::from_millis(50));
        locks.release_all(TxnId(1), &mut a);
        let (waited, mut d) = ddl.join().unwrap();
        assert!(waited.is_some());
        // While the table is locked, another transaction's row lock would wait; a
        // transaction in a cycle with it is refused at once.
        locks.release_all(TxnId(9), &mut d);
        locks.lock_row(TxnId(3), &mut a, "t", &key(5), &NO_CANCEL, &mut false, OnBusy::Sleep).unwrap();
        locks.release_all(TxnId(3), &mut a);
    }

    #[test]
    fn share_locks_coexist_and_an_exclusive_locker_waits_for_every_sharer() {
        let locks = Arc::new(LockManager::default());
        let (mut a, mut b) = (HeldLocks::default(), HeldLocks::default());
        assert!(
            locks
                .lock_row_shared(TxnId(1), &mut a, "p", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep)
                .unwrap()
                .acquired
        );
        assert!(
            locks
                .lock_row_shared(TxnId(2), &mut b, "p", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep)
                .unwrap()
                .acquired
        );
        // Again by a holder: nothing new.
        assert!(
            !locks
                .lock_row_shared(TxnId(2), &mut b, "p", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep)
                .unwrap()
                .acquired
        );
        let l2 = locks.clone();
        let deleter = std::thread::spawn(move || {
            let mut d = HeldLocks::default();
            let waited = l2
                .lock_row(TxnId(3), &mut d, "p", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep)
                .unwrap()
                .waited;
            (waited, d)
        });
        std::thread::sleep(Duration::from_millis(30));
        locks.release_all(TxnId(1), &mut a);
        std::thread::sleep(Duration::from_millis(30));
        assert!(!deleter.is_finished(), "the exclusive locker waits while one sharer remains");
        locks.release_all(TxnId(2), &mut b);
        let (waited, mut d) = deleter.join().unwrap();
        assert!(waited.expect("it waited") >= Duration::from_millis(50));
        // Now a sharer waits for the exclusive holder; a sharer that holds the key
        // exclusively has it already.
        assert!(
            !locks
                .lock_row_shared(TxnId(3), &mut d, "p", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep)
                .unwrap()
                .acquired
        );
        let l3 = locks.clone();
        let sharer = std::thread::spawn(move || {
            let mut e = HeldLocks::default();
            let waited = l3
                .lock_row_shared(TxnId(4), &mut e, "p", &key(1), &NO_CANCEL, &mut false, OnBusy::Sleep)
                .unwrap()
                .waited;
            l3.release_all(TxnId(4), &mut e);
            waited
        });
        std::thread::sleep(Duration::from_millis(30));
        locks.release_all(TxnId(3), &mut d);
        assert!(sharer.join().unwrap().is_some());
        // Everything released: the shard keeps no share-mode entry.
        assert!(locks.shards.iter().all(|s| s.0.lock().unwrap().shared.is_empty()));
    }

    #[test]
    fn two_sharers_upgrading_the_same_key_deadlock_and_one_is_refused() {
        let locks = Arc::new(LockManager::default());
        let (mut a, mut b) = (HeldLocks::default(), HeldLocks::default());
        locks.lock_row_shared(TxnId(1), &mut a, "p", &key(7), &NO_CANCEL, &mut false, OnBusy::Sleep).unwrap();
        locks.lock_row_shared(TxnId(2), &mut b, "p", &key(7), &NO_CANCEL, &mut false, OnBusy::Sleep).unwrap();
        let l2 = locks.clone();
        let first = std::thread::spawn(move || {
            let result = l2.lock_row(TxnId(1), &mut a, "p", &key(7), &NO_CANCEL, &mut false, OnBusy::Sleep);
            l2.release_all(TxnId(1), &mut a);
            result.is_ok()
        });
        std::thread::sleep(Duration::from_millis(30));
        let second = locks.lock_row(TxnId(2), &mut b, "p", &key(7), &NO_CANCEL, &mut false, OnBusy::Sleep);
        assert!(matches!(second, Err(DbError::Deadlock(_))), "{second:?}");
        locks.release_all(TxnId(2), &mut b);
        assert!(first.join().unwrap(), "the other upgrade goes through once the victim lets go");
    }
}
