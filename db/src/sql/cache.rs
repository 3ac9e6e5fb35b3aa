//! The statement cache (Oracle's shared pool): parsed statements by their exact text,
//! bounded, least recently used out first, shared by every session.
//!
//! It is what makes bind variables pay off (seed 004): `SELECT ... WHERE id = $1` is parsed
//! once and found in the cache on every later execution (a soft parse), while literal SQL
//! (`... WHERE id = 42`, `... = 43`) is a new text each time and pays a hard parse, and
//! fills the cache with statements used once. The counters show it:
//! `parse count (total)` (every lookup), `parse count (hard)` (misses that had to parse),
//! `session cursor cache hits` (lookups served from the cache). Per statement, `v$sql`
//! shows its parse calls and, from [`StatementStats`], its executions, rows processed and
//! elapsed time; [`StatementCache::take_activity`] hands the workload repository what
//! each statement did since the previous snapshot.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Weak};

use crate::error::DbResult;

/// What the executions of one cached statement added up to, as `v$sql` shows them.
///
/// Every session running the statement adds to it, and a prepared statement's execution is
/// the commit path: one counter shared by all would be a cache line bounced between the
/// CPUs on every execution. So the counters are spread over [`STAT_SLOTS`] lines, a
/// session adding to the one its sid picks, and read as their sum.
#[derive(Default)]
pub struct StatementStats {
    slots: [StatSlot; STAT_SLOTS],
}

/// How many cache lines a statement's counters are spread over.
pub const STAT_SLOTS: usize = 8;

#[derive(Default)]
#[repr(align(64))]
struct StatSlot {
    executions: AtomicU64,
    rows_processed: AtomicU64,
    elapsed_ns: AtomicU64,
}

/// A statement's executions so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatementTotals {
    pub executions: u64,
    /// Rows a query returned, or a DML statement changed.
    pub rows_processed: u64,
    /// Time in its executions (nanoseconds; 0 for those run with `timed_statistics` off).
    pub elapsed_ns: u64,
}

impl StatementStats {
    /// One execution by session `sid`.
    #[inline]
    pub fn record(&self, sid: u64, rows_processed: u64, elapsed_ns: u64) {
        let slot = &self.slots[sid as usize % STAT_SLOTS];
        slot.executions.fetch_add(1, Relaxed);
        if rows_processed > 0 {
            slot.rows_processed.fetch_add(rows_processed, Relaxed);
        }
        if elapsed_ns > 0 {
            slot.elapsed_ns.fetch_add(elapsed_ns, Relaxed);
        }
    }

    pub fn totals(&self) -> StatementTotals {
        self.slots.iter().fold(StatementTotals::default(), |t, s| StatementTotals {
            executions: t.executions + s.executions.load(Relaxed),
            rows_processed: t.rows_processed + s.rows_processed.load(Relaxed),
            elapsed_ns: t.elapsed_ns + s.elapsed_ns.load(Relaxed),
        })
    }
}

/// What one statement did between two calls of [`StatementCache::take_activity`] (two
/// workload repository snapshots).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatementActivity {
    pub text: String,
    pub parse_calls: u64,
    pub totals: StatementTotals,
}

struct Entry<T> {
    value: Arc<T>,
    /// Its executions; a prepared statement holds it too, and keeps counting into it
    /// (unseen) once the text is evicted.
    stats: Arc<StatementStats>,
    /// Its counters at the last `take_activity`.
    taken: StatementTotals,
    taken_parse_calls: u64,
    last_used: u64,
    /// Lookups of this text while it was cached (its hard parse included).
    parse_calls: u64,
    /// When it was parsed into the cache, and last looked up (unix microseconds).
    first_load_us: u64,
    last_active_us: u64,
}

/// A statement in the cache, as `v$sql` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedStatement {
    pub text: String,
    pub parse_calls: u64,
    pub first_load_us: u64,
    pub last_active_us: u64,
    pub totals: StatementTotals,
}

struct Inner<T> {
    entries: HashMap<String, Entry<T>>,
    /// last_used tick -> text, for finding the least recently used.
    by_use: BTreeMap<u64, String>,
    tick: u64,
    /// The counters of evicted statements a prepared statement still held, and their
    /// base for the next `take_activity`: parsed again, a text counts on where its
    /// prepared statements do (else their executions would go to counters nobody reads).
    evicted: HashMap<String, (Weak<StatementStats>, StatementTotals)>,
}

/// Counters of the statement cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub parse_count_total: u64,
    pub parse_count_hard: u64,
    pub cache_hits: u64,
    pub evictions: u64,
    pub entries: u64,
}

pub struct StatementCache<T> {
    inner: Mutex<Inner<T>>,
    capacity: usize,
    parses: AtomicU64,
    hard_parses: AtomicU64,
    hits: AtomicU64,
    evictions: AtomicU64,
}

impl<T> StatementCache<T> {
    pub fn new(capacity: usize) -> StatementCache<T> {
        assert!(capacity > 0, "a statement cache holds at least one statement");
        StatementCache {
            inner: Mutex::new(Inner {
                entries: HashMap::new(),
                by_use: BTreeMap::new(),
                tick: 0,
                evicted: HashMap::new(),
            }),
            capacity,
            parses: AtomicU64::new(0),
            hard_parses: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    /// The parsed form of `text`: from the cache, or from `parse` (a hard parse), which is
    /// then cached. Returns it, the counters its executions add to, and whether it was a
    /// cache hit. Parse errors are not cached.
    pub fn get_or_parse(
        &self,
        text: &str,
        parse: impl FnOnce(&str) -> DbResult<T>,
    ) -> DbResult<(Arc<T>, Arc<StatementStats>, bool)> {
        self.parses.fetch_add(1, Relaxed);
        {
            let mut inner = self.inner.lock().expect("statement cache poisoned");
            inner.tick += 1;
            let tick = inner.tick;
            if let Some(entry) = inner.entries.get_mut(text) {
                let old = std::mem::replace(&mut entry.last_used, tick);
                entry.parse_calls += 1;
                entry.last_active_us = crate::awr::clock::now_unix_us();
                let (value, stats) = (entry.value.clone(), entry.stats.clone());
                inner.by_use.remove(&old);
                inner.by_use.insert(tick, text.to_string());
                self.hits.fetch_add(1, Relaxed);
                return Ok((value, stats, true));
            }
        }
        // Parse outside the lock: a slow parse must not hold up other sessions.
        self.hard_parses.fetch_add(1, Relaxed);
        let value = Arc::new(parse(text)?);
        let mut inner = self.inner.lock().expect("statement cache poisoned");
        inner.tick += 1;
        let tick = inner.tick;
        let now = crate::awr::clock::now_unix_us();
        let mut entry = Entry {
            value: value.clone(),
            stats: Arc::default(),
            taken: StatementTotals::default(),
            taken_parse_calls: 0,
            last_used: tick,
            parse_calls: 1,
            first_load_us: now,
            last_active_us: now,
        };
        if let Some(previous) = inner.entries.get(text) {
            // Another session parsed the same text meanwhile: its lookups and executions
            // still count.
            entry.parse_calls += previous.parse_calls;
            entry.first_load_us = previous.first_load_us;
            entry.stats = previous.stats.clone();
            entry.taken = previous.taken;
            entry.taken_parse_calls = previous.taken_parse_calls;
        } else if let Some((held, taken)) = inner.evicted.remove(text) {
            if let Some(stats) = held.upgrade() {
                entry.stats = stats;
                entry.taken = taken;
            }
        }
        let stats = entry.stats.clone();
        if let Some(previous) = inner.entries.insert(text.to_string(), entry) {
            inner.by_use.remove(&previous.last_used);
        }
        inner.by_use.insert(tick, text.to_string());
        while inner.entries.len() > self.capacity {
            let (&oldest, _) = inner.by_use.iter().next().expect("entries and by_use agree");
            let victim = inner.by_use.remove(&oldest).expect("present");
            let evicted = inner.entries.remove(&victim).expect("entries and by_use agree");
            if Arc::strong_count(&evicted.stats) > 1 {
                inner.evicted.insert(victim, (Arc::downgrade(&evicted.stats), evicted.taken));
                if inner.evicted.len() > self.capacity {
                    inner.evicted.retain(|_, (held, _)| held.strong_count() > 0);
                }
            }
            self.evictions.fetch_add(1, Relaxed);
        }
        debug_assert_eq!(inner.entries.len(), inner.by_use.len());
        Ok((value, stats, false))
    }

    /// Every cached statement, the most recently used first.
    pub fn statements(&self) -> Vec<CachedStatement> {
        let inner = self.inner.lock().expect("statement cache poisoned");
        inner
            .by_use
            .values()
            .rev()
            .map(|text| {
                let e = &inner.entries[text];
                CachedStatement {
                    text: text.clone(),
                    parse_calls: e.parse_calls,
                    first_load_us: e.first_load_us,
                    last_active_us: e.last_active_us,
                    totals: e.stats.totals(),
                }
            })
            .collect()
    }

    /// What each cached statement did since the last call: those that did anything, with
    /// the differences of their counters (as Oracle's repository keeps its `*_DELTA`
    /// columns). Their present counters are the base of the next call. A statement
    /// evicted in between loses what it did since the last call, as SQL aged out of
    /// Oracle's shared pool between two snapshots does.
    pub fn take_activity(&self) -> Vec<StatementActivity> {
        let mut inner = self.inner.lock().expect("statement cache poisoned");
        let mut active = Vec::new();
        for (text, entry) in inner.entries.iter_mut() {
            let now = entry.stats.totals();
            let since = StatementTotals {
                executions: now.executions.saturating_sub(entry.taken.executions),
                rows_processed: now.rows_processed.saturating_sub(entry.taken.rows_processed),
                elapsed_ns: now.elapsed_ns.saturating_sub(entry.taken.elapsed_ns),
            };
            let parse_calls = entry.parse_calls.saturating_sub(entry.taken_parse_calls);
            if since != StatementTotals::default() || parse_calls > 0 {
                active.push(StatementActivity { text: text.clone(), parse_calls, totals: since });
            }
            entry.taken = now;
            entry.taken_parse_calls = entry.parse_calls;
        }
        active
    }

    /// Gives back what [`take_activity`](Self::take_activity) took, when it could not be
    /// kept (the snapshot was not written): the next take reports it again.
    pub fn restore_activity(&self, activity: &[StatementActivity]) {
        let mut inner = self.inner.lock().expect("statement cache poisoned");
        for a in activity {
            if let Some(entry) = inner.entries.get_mut(&a.text) {
                let taken = &mut entry.taken;
                taken.executions = taken.executions.saturating_sub(a.totals.executions);
                taken.rows_processed = taken.rows_processed.saturating_sub(a.totals.rows_processed);
                taken.elapsed_ns = taken.elapsed_ns.saturating_sub(a.totals.elapsed_ns);
                entry.taken_parse_calls = entry.taken_parse_calls.saturating_sub(a.parse_calls);
            }
        }
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            parse_count_total: self.parses.load(Relaxed),
            parse_count_hard: self.hard_parses.load(Relaxed),
            cache_hits: self.hits.load(Relaxed),
            evictions: self.evictions.load(Relaxed),
            entries: self.inner.lock().expect("statement cache poisoned").entries.len() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::DbError;

    #[test]
    fn repeated_text_is_parsed_once_and_literals_parse_every_time() {
        let cache = StatementCache::new(100);
        let mut parsed = 0;
        for _ in 0..10 {
            let (v, _, _) = cache
                .get_or_parse("SELECT v FROM t WHERE id = $1", |t| {
                    parsed += 1;
                    Ok(t.len())
                })
                .unwrap();
            assert_eq!(*v, 29);
        }
        for i in 0..10 {
            cache.get_or_parse(&format!("SELECT v FROM t WHERE id = {i}"), |t| Ok(t.len())).unwrap();
        }
        assert_eq!(parsed, 1);
        let s = cache.stats();
        assert_eq!((s.parse_count_total, s.parse_count_hard, s.cache_hits), (20, 11, 9));
        // Per statement: the bind text parsed once and looked up ten times; each literal
        // once; the most recently used first.
        let statements = cache.statements();
        assert_eq!(statements.len(), 11);
        assert_eq!(statements[0].text, "SELECT v FROM t WHERE id = 9");
        let bind = statements.iter().find(|s| s.text.contains("$1")).unwrap();
        assert_eq!(bind.parse_calls, 10);
        assert!(bind.first_load_us > 0 && bind.last_active_us >= bind.first_load_us);
        assert!(statements.iter().filter(|s| !s.text.contains("$1")).all(|s| s.parse_calls == 1));
    }

    #[test]
    fn the_least_recently_used_statement_is_evicted_first() {
        let cache = StatementCache::new(2);
        cache.get_or_parse("a", |_| Ok(1)).unwrap();
        cache.get_or_parse("b", |_| Ok(2)).unwrap();
        assert!(cache.get_or_parse("a", |_| Ok(1)).unwrap().2, "a is cached");
        cache.get_or_parse("c", |_| Ok(3)).unwrap(); // evicts b, the least recently used
        assert!(cache.get_or_parse("a", |_| Ok(1)).unwrap().2);
        assert!(!cache.get_or_parse("b", |_| Ok(2)).unwrap().2, "b was evicted");
        let s = cache.stats();
        assert_eq!(s.entries, 2);
        assert_eq!(s.evictions, 2);
    }

    /// Executions from many sessions add up, whichever slot each session adds to, and a
    /// statement parsed again after another session cached it keeps one set of counters.
    #[test]
    fn executions_add_up_over_the_sessions() {
        let cache = StatementCache::new(4);
        let (_, stats, _) = cache.get_or_parse("q", |_| Ok(1)).unwrap();
        std::thread::scope(|scope| {
            for sid in 0..(2 * STAT_SLOTS as u64 + 3) {
                let stats = &stats;
                scope.spawn(move || {
                    for _ in 0..1000 {
                        stats.record(sid, 2, 10);
                    }
                });
            }
        });
        let (_, again, hit) = cache.get_or_parse("q", |_| Ok(1)).unwrap();
        assert!(hit && Arc::ptr_eq(&stats, &again));
        again.record(1, 0, 0);
        let sessions = 2 * STAT_SLOTS as u64 + 3;
        assert_eq!(
            cache.statements()[0].totals,
            StatementTotals {
                executions: sessions * 1000 + 1,
                rows_processed: sessions * 2000,
                elapsed_ns: sessions * 10_000
            }
        );
    }

    /// Each call tells what happened since the one before, and only the statements that
    /// did something.
    #[test]
    fn activity_is_taken_as_the_differences_since_the_last_take() {
        let cache = StatementCache::new(4);
        let (_, a, _) = cache.get_or_parse("a", |_| Ok(1)).unwrap();
        let (_, b, _) = cache.get_or_parse("b", |_| Ok(2)).unwrap();
        a.record(1, 3, 1_000);
        a.record(2, 1, 500);
        let mut first = cache.take_activity();
        first.sort_by(|x, y| x.text.cmp(&y.text));
        assert_eq!(
            first,
            [
                StatementActivity {
                    text: "a".into(),
                    parse_calls: 1,
                    totals: StatementTotals { executions: 2, rows_processed: 4, elapsed_ns: 1_500 }
                },
                StatementActivity { text: "b".into(), parse_calls: 1, totals: StatementTotals::default() },
            ]
        );
        b.record(1, 0, 0);
        cache.get_or_parse("b", |_| Ok(2)).unwrap();
        assert_eq!(
            cache.take_activity(),
            [StatementActivity {
                text: "b".into(),
                parse_calls: 1,
                totals: StatementTotals { executions: 1, rows_processed: 0, elapsed_ns: 0 }
            }],
            "a did nothing since"
        );
        assert_eq!(cache.take_activity(), []);
    }

    /// A prepared statement keeps counting where v$sql looks after its text was evicted
    /// and parsed again; one nobody holds starts afresh.
    #[test]
    fn a_text_parsed_again_after_eviction_counts_on_where_its_prepared_statements_do() {
        let cache = StatementCache::new(2);
        let (_, held, _) = cache.get_or_parse("held", |_| Ok(1)).unwrap();
        cache.get_or_parse("dropped", |_| Ok(2)).unwrap().1.record(0, 0, 0);
        held.record(0, 1, 0);
        cache.take_activity();
        held.record(0, 1, 0);
        cache.get_or_parse("x", |_| Ok(3)).unwrap();
        cache.get_or_parse("y", |_| Ok(4)).unwrap(); // both evicted
        assert!(cache.statements().iter().all(|s| s.text != "held" && s.text != "dropped"));
        let (_, again, hit) = cache.get_or_parse("held", |_| Ok(1)).unwrap();
        assert!(!hit && Arc::ptr_eq(&held, &again));
        again.record(1, 1, 0);
        let row = |text: &str| cache.statements().into_iter().find(|s| s.text == text).unwrap();
        assert_eq!(row("held").totals.executions, 3);
        let (_, fresh, _) = cache.get_or_parse("dropped", |_| Ok(2)).unwrap();
        assert_eq!(fresh.totals().executions, 0);
        // Its activity since the last take: the two executions after it, once.
        let activity = cache.take_activity();
        let held_activity = activity.iter().find(|a| a.text == "held").unwrap();
        assert_eq!(held_activity.totals.executions, 2);
    }

    /// Activity given back (its snapshot was not written) is taken again by the next.
    #[test]
    fn activity_given_back_is_taken_again() {
        let cache = StatementCache::new(4);
        let (_, a, _) = cache.get_or_parse("a", |_| Ok(1)).unwrap();
        a.record(0, 2, 10);
        let taken = cache.take_activity();
        a.record(0, 1, 5);
        cache.restore_activity(&taken);
        let again = cache.take_activity();
        assert_eq!(again.len(), 1);
        assert_eq!(
            (again[0].parse_calls, again[0].totals),
            (1, StatementTotals { executions: 2, rows_processed: 3, elapsed_ns: 15 })
        );
    }

    #[test]
    fn parse_errors_are_not_cached() {
        let cache: StatementCache<u8> = StatementCache::new(4);
        let err = || DbError::Syntax { message: "bad".into(), position: 1 };
        assert!(cache.get_or_parse("x", |_| Err(err())).is_err());
        assert!(cache.get_or_parse("x", |_| Err(err())).is_err());
        assert_eq!(cache.stats().parse_count_hard, 2);
        assert_eq!(cache.stats().entries, 0);
    }
}
