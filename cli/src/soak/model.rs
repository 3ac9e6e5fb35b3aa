//! What one soak client knows about its own rows: the state the server must show it, and
//! the journal of its commits since the last verified state, each marked with what its
//! acknowledgement promised (durable, only acknowledged, or in doubt because the
//! connection died before the answer came).
//!
//! Each client writes only its own keys (`client = c` in `soak_rows`), so the model is
//! exact: no other session can change what it sees. After a kill and a restart the rows
//! the server recovered for the client must be, exactly, the state after some prefix of
//! its commits, in commit order, and that prefix must reach at least its last commit
//! acknowledged as durable (a WAIT commit, or a call that waited at its end). A NOWAIT
//! commit may be lost only with everything after it; an in-doubt commit may be there or
//! not. [`Model::verify`] finds that prefix, or says what is wrong.
//!
//! Invariants: the journal's in-doubt commits are only at its end (the client stops
//! working once a call is cut off); `view` is `base` with every journal commit applied,
//! plus the open transaction's changes (whose undo is kept to roll them back).

use std::collections::{BTreeMap, BTreeSet};

pub type Key = i64;

/// One row of a client: `v` and `note` of `soak_rows`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub v: i64,
    pub note: Option<String>,
}

pub type Rows = BTreeMap<Key, Row>;

/// What the acknowledgement of a commit promised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ack {
    /// The request went out and no answer came back (the server died): it may or may not
    /// have committed.
    InDoubt,
    /// Acknowledged as committed, not necessarily durable (NOWAIT).
    Committed,
    /// Acknowledged after the log was durable up to it (WAIT, or a call that waited at its
    /// end for the commits in it).
    Durable,
}

/// One commit of the client, numbered from 1 over the whole run.
#[derive(Clone, Debug)]
struct Commit {
    seq: u64,
    /// The final value of every key it changed (None: deleted).
    changes: Vec<(Key, Option<Row>)>,
    ack: Ack,
}

#[derive(Debug, Default)]
struct Txn {
    /// The previous value of each change, in order.
    undo: Vec<(Key, Option<Row>)>,
    /// Rows changed (as the server counts rows affected), so a transaction that changed
    /// nothing is known to commit nothing.
    changed_rows: u64,
    /// Savepoints: name, undo length and changed rows when set.
    savepoints: Vec<(String, usize, u64)>,
}

/// The journal folds into the base once it is this long and a durable commit lets it.
const FOLD_AT: usize = 4096;

#[derive(Debug, Default)]
pub struct Model {
    /// The state after commit `base_seq` (a verified or durably acknowledged state).
    base: Rows,
    base_seq: u64,
    /// Commits `base_seq + 1 ..`, in commit order.
    journal: Vec<Commit>,
    /// Commits folded into the base since the last verification: a recovered state the
    /// check accepts holds them too.
    folded: u64,
    view: Rows,
    txn: Option<Txn>,
    next_seq: u64,
}

/// What a verification found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// Rows recovered.
    pub rows: usize,
    /// Commits since the last verification the recovered state holds.
    pub commits_recovered: u64,
    /// Acknowledged NOWAIT commits that were not recovered (allowed: a suffix).
    pub nowait_lost: u64,
    /// In-doubt commits that turned out committed, and that did not.
    pub in_doubt_committed: u64,
    pub in_doubt_lost: u64,
}

/// A recovered state that no allowed prefix explains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub message: String,
}

impl Model {
    pub fn new() -> Model {
        Model { next_seq: 1, ..Model::default() }
    }

    /// What the client's session sees now.
    pub fn view(&self) -> &Rows {
        &self.view
    }

    pub fn get(&self, key: Key) -> Option<&Row> {
        self.view.get(&key)
    }

    pub fn len(&self) -> usize {
        self.view.len()
    }

    /// Starts a transaction (a block, or the implicit one of an autocommit statement).
    pub fn begin(&mut self) {
        assert!(self.txn.is_none(), "begin inside an open transaction");
        self.txn = Some(Txn::default());
    }

    /// Sets `key` to `row` (None deletes it) in the open transaction.
    pub fn set(&mut self, key: Key, row: Option<Row>) {
        let txn = self.txn.as_mut().expect("a change needs an open transaction");
        let old = match &row {
            Some(r) => self.view.insert(key, r.clone()),
            None => self.view.remove(&key),
        };
        txn.undo.push((key, old));
        txn.changed_rows += 1;
    }

    pub fn savepoint(&mut self, name: &str) {
        let txn = self.txn.as_mut().expect("a savepoint needs an open transaction");
        txn.savepoints.push((name.to_string(), txn.undo.len(), txn.changed_rows));
    }

    /// Undoes the changes since savepoint `name` (which stays, as in SQL).
    pub fn rollback_to(&mut self, name: &str) {
        let txn = self.txn.as_mut().expect("a savepoint needs an open transaction");
        let at =
            txn.savepoints.iter().rposition(|(n, ..)| n == name).expect("a savepoint of this transaction");
        let (_, undo_len, changed_rows) = txn.savepoints[at].clone();
        txn.savepoints.truncate(at + 1);
        let undo: Vec<_> = txn.undo.drain(undo_len..).rev().collect();
        txn.changed_rows = changed_rows;
        restore(&mut self.view, undo);
    }

    /// Ends the open transaction without committing.
    pub fn rollback(&mut self) {
        if let Some(txn) = self.txn.take() {
            restore(&mut self.view, txn.undo.into_iter().rev().collect());
        }
    }

    /// The open transaction's commit is about to be requested: it enters the journal in
    /// doubt. Returns its number, or None when it changed nothing (the server then
    /// commits nothing and counts no commit).
    pub fn commit_requested(&mut self) -> Option<u64> {
        let txn = self.txn.take().expect("a commit needs an open transaction");
        if txn.changed_rows == 0 {
            return None;
        }
        let mut changes: BTreeMap<Key, Option<Row>> = BTreeMap::new();
        for (key, _) in &txn.undo {
            changes.entry(*key).or_insert_with(|| self.view.get(key).cloned());
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.journal.push(Commit { seq, changes: changes.into_iter().collect(), ack: Ack::InDoubt });
        Some(seq)
    }

    /// The server acknowledged commit `seq`.
    pub fn acknowledge(&mut self, seq: u64, durable: bool) {
        let commit = self.journal.iter_mut().rev().find(|c| c.seq == seq).expect("a journal commit");
        assert_eq!(commit.ack, Ack::InDoubt, "commit {seq} acknowledged twice");
        commit.ack = if durable { Ack::Durable } else { Ack::Committed };
        if self.journal.len() >= FOLD_AT {
            self.fold();
        }
    }

    /// Folds the journal up to its last durable commit into the base: a state recovery
    /// can never go back behind.
    fn fold(&mut self) {
        let Some(last) = self.journal.iter().rposition(|c| c.ack == Ack::Durable) else { return };
        for commit in self.journal.drain(..=last) {
            apply(&mut self.base, &commit.changes);
            self.base_seq = commit.seq;
            self.folded += 1;
        }
    }

    /// Checks `recovered` (the client's rows as the restarted server has them) against
    /// the journal, and makes it the new base whatever the outcome, so the run can go on
    /// checking from there. `exact` (after a clean shutdown): every acknowledged commit
    /// must be there, NOWAIT ones too.
    pub fn verify(&mut self, recovered: Rows, exact: bool) -> Result<Verified, Mismatch> {
        self.rollback();
        let outcome = self.check(&recovered, exact);
        self.base_seq = match &outcome {
            Ok((_, prefix)) => self.seq_after(*prefix),
            // The newest number handed out: the next commit gets a fresh one either way.
            Err(_) => self.next_seq - 1,
        };
        self.folded = 0;
        self.base = recovered.clone();
        self.journal.clear();
        self.view = recovered;
        outcome.map(|(verified, _)| verified)
    }

    /// The number of the last commit of the journal's first `j`.
    fn seq_after(&self, j: usize) -> u64 {
        if j == 0 {
            self.base_seq
        } else {
            self.journal[j - 1].seq
        }
    }

    /// What `recovered` holds, and the length of the journal's prefix it is the state after.
    fn check(&self, recovered: &Rows, exact: bool) -> Result<(Verified, usize), Mismatch> {
        let acknowledged = |c: &Commit| c.ack != Ack::InDoubt;
        // The prefix must reach the last commit whose acknowledgement promised
        // durability (after a clean shutdown: the last acknowledged one).
        let floor = self
            .journal
            .iter()
            .rposition(|c| c.ack == Ack::Durable || (exact && acknowledged(c)))
            .map_or(0, |i| i + 1);
        let mut state = self.base.clone();
        for commit in &self.journal[..floor] {
            apply(&mut state, &commit.changes);
        }
        let mut diff = differing_keys(&state, recovered);
        // The longest prefix that fits: prefixes that fit equally leave the same rows.
        let mut fits = diff.is_empty().then_some(floor);
        let mut nearest = (diff.len(), floor);
        for (i, commit) in self.journal.iter().enumerate().skip(floor) {
            apply(&mut state, &commit.changes);
            for (key, _) in &commit.changes {
                if state.get(key) == recovered.get(key) {
                    diff.remove(key);
                } else {
                    diff.insert(*key);
                }
            }
            if diff.is_empty() {
                fits = Some(i + 1);
            }
            if diff.len() < nearest.0 {
                nearest = (diff.len(), i + 1);
            }
        }
        if let Some(j) = fits {
            let after = &self.journal[j..];
            let verified = Verified {
                rows: recovered.len(),
                commits_recovered: self.folded + j as u64,
                nowait_lost: after.iter().filter(|c| c.ack == Ack::Committed).count() as u64,
                in_doubt_committed: self.journal[..j].iter().filter(|c| c.ack == Ack::InDoubt).count() as u64,
                in_doubt_lost: after.iter().filter(|c| c.ack == Ack::InDoubt).count() as u64,
            };
            return Ok((verified, j));
        }
        Err(self.explain(recovered, floor, nearest.1))
    }

    /// Why no allowed prefix fits: whether an earlier one does (durable commits lost),
    /// else how the recovered rows differ from the nearest allowed state.
    fn explain(&self, recovered: &Rows, floor: usize, nearest: usize) -> Mismatch {
        let seq_after = |j: usize| self.seq_after(j);
        let sent = seq_after(self.journal.len());
        let needed = seq_after(floor);
        let mut state = self.base.clone();
        for j in 0..floor {
            if differing_keys(&state, recovered).is_empty() {
                return Mismatch {
                    message: format!(
                        "lost acknowledged durable commits: the recovered rows ({}) are the state after commit \
                         #{}, but commit #{needed} was acknowledged as durable ({} commits lost)",
                        recovered.len(),
                        seq_after(j),
                        floor - j
                    ),
                };
            }
            apply(&mut state, &self.journal[j].changes);
        }
        let mut state = self.base.clone();
        for commit in &self.journal[..nearest] {
            apply(&mut state, &commit.changes);
        }
        let keys = differing_keys(&state, recovered);
        let examples: Vec<String> = keys
            .iter()
            .take(5)
            .map(|k| format!("key {k}: expected {:?}, recovered {:?}", state.get(k), recovered.get(k)))
            .collect();
        Mismatch {
            message: format!(
                "the recovered rows ({}) are no state between commit #{needed} (the last acknowledged as {}) \
                 and #{sent} (the last sent), after commit #{} still {} keys differ: {}",
                recovered.len(),
                if floor > 0 && self.journal[floor - 1].ack == Ack::Durable { "durable" } else { "committed" },
                seq_after(nearest),
                keys.len(),
                examples.join("; ")
            ),
        }
    }
}

fn apply(state: &mut Rows, changes: &[(Key, Option<Row>)]) {
    for (key, row) in changes {
        match row {
            Some(r) => state.insert(*key, r.clone()),
            None => state.remove(key),
        };
    }
}

/// Puts back the previous values, `undo` given newest first.
fn restore(view: &mut Rows, undo: Vec<(Key, Option<Row>)>) {
    for (key, old) in undo {
        match old {
            Some(r) => view.insert(key, r),
            None => view.remove(&key),
        };
    }
}

/// Keys whose rows differ between `a` and `b` (present in one only, or different).
fn differing_keys(a: &Rows, b: &Rows) -> BTreeSet<Key> {
    let mut keys = BTreeSet::new();
    for (k, row) in a {
        if b.get(k) != Some(row) {
            keys.insert(*k);
        }
    }
    for k in b.keys() {
        if !a.contains_key(k) {
            keys.insert(*k);
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(v: i64) -> Option<Row> {
        Some(Row { v, note: None })
    }

    /// Commits `key = v` in one transaction; returns its number.
    fn commit(m: &mut Model, key: Key, v: Option<i64>, ack: Ack) -> u64 {
        m.begin();
        m.set(key, v.and_then(row));
        let seq = m.commit_requested().expect("a change");
        match ack {
            Ack::Durable => m.acknowledge(seq, true),
            Ack::Committed => m.acknowledge(seq, false),
            Ack::InDoubt => {}
        }
        seq
    }

    fn rows(pairs: &[(Key, i64)]) -> Rows {
        pairs.iter().map(|&(k, v)| (k, Row { v, note: None })).collect()
    }

    #[test]
    fn a_recovered_state_after_the_last_durable_commit_verifies() {
        let mut m = Model::new();
        commit(&mut m, 1, Some(10), Ack::Durable);
        commit(&mut m, 2, Some(20), Ack::Committed);
        commit(&mut m, 1, None, Ack::Committed);
        // Only the durable commit survived: the two NOWAIT ones are a lost suffix.
        let v = m.verify(rows(&[(1, 10)]), false).unwrap();
        assert_eq!((v.commits_recovered, v.nowait_lost, v.rows), (1, 2, 1));
        // The model continues from the recovered state.
        assert_eq!(m.view(), &rows(&[(1, 10)]));
        commit(&mut m, 3, Some(30), Ack::Durable);
        let v = m.verify(rows(&[(1, 10), (3, 30)]), false).unwrap();
        assert_eq!(v.commits_recovered, 1);
    }

    #[test]
    fn losing_a_durable_commit_is_reported() {
        let mut m = Model::new();
        commit(&mut m, 1, Some(10), Ack::Committed);
        commit(&mut m, 2, Some(20), Ack::Durable);
        let err = m.verify(rows(&[(1, 10)]), false).unwrap_err();
        assert!(err.message.contains("lost acknowledged durable commits"), "{}", err.message);
        assert!(err.message.contains("commit #1") && err.message.contains("#2"), "{}", err.message);
    }

    #[test]
    fn a_hole_in_the_commit_order_is_reported() {
        let mut m = Model::new();
        commit(&mut m, 1, Some(10), Ack::Durable);
        commit(&mut m, 2, Some(20), Ack::Committed);
        commit(&mut m, 3, Some(30), Ack::Committed);
        // Commit 3 without commit 2: not a prefix.
        let err = m.verify(rows(&[(1, 10), (3, 30)]), false).unwrap_err();
        assert!(err.message.contains("no state between"), "{}", err.message);
        assert!(err.message.contains("key 2") || err.message.contains("key 3"), "{}", err.message);
    }

    #[test]
    fn a_row_never_sent_is_reported() {
        let mut m = Model::new();
        commit(&mut m, 1, Some(10), Ack::Durable);
        let err = m.verify(rows(&[(1, 10), (9, 90)]), false).unwrap_err();
        assert!(err.message.contains("key 9"), "{}", err.message);
    }

    #[test]
    fn an_in_doubt_commit_may_be_there_or_not() {
        for present in [false, true] {
            let mut m = Model::new();
            commit(&mut m, 1, Some(10), Ack::Durable);
            commit(&mut m, 1, Some(11), Ack::InDoubt);
            let recovered = if present { rows(&[(1, 11)]) } else { rows(&[(1, 10)]) };
            let v = m.verify(recovered, false).unwrap();
            assert_eq!((v.in_doubt_committed, v.in_doubt_lost), (u64::from(present), u64::from(!present)));
        }
    }

    #[test]
    fn after_a_clean_shutdown_nowait_commits_must_be_there_too() {
        let mut m = Model::new();
        commit(&mut m, 1, Some(10), Ack::Durable);
        commit(&mut m, 2, Some(20), Ack::Committed);
        assert!(m.verify(rows(&[(1, 10)]), true).is_err());
        let mut m = Model::new();
        commit(&mut m, 1, Some(10), Ack::Durable);
        commit(&mut m, 2, Some(20), Ack::Committed);
        assert_eq!(m.verify(rows(&[(1, 10), (2, 20)]), true).unwrap().nowait_lost, 0);
    }

    #[test]
    fn rollbacks_and_savepoints_leave_the_view_as_it_was() {
        let mut m = Model::new();
        commit(&mut m, 1, Some(10), Ack::Durable);
        m.begin();
        m.set(1, row(11));
        m.savepoint("a");
        m.set(2, row(20));
        m.set(1, None);
        m.rollback_to("a");
        assert_eq!(m.view(), &rows(&[(1, 11)]));
        m.rollback();
        assert_eq!(m.view(), &rows(&[(1, 10)]));
        m.begin();
        m.savepoint("a");
        m.set(3, row(30));
        m.rollback_to("a");
        assert_eq!(m.commit_requested(), None, "a transaction that changed nothing commits nothing");
    }

    #[test]
    fn the_journal_folds_behind_durable_commits_and_still_verifies() {
        let mut m = Model::new();
        for i in 0..(FOLD_AT as i64 + 10) {
            commit(&mut m, i % 7, Some(i), if i % 3 == 0 { Ack::Durable } else { Ack::Committed });
        }
        assert!(m.journal.len() < FOLD_AT, "folded: {}", m.journal.len());
        let expected = m.view().clone();
        let v = m.verify(expected, true).unwrap();
        assert_eq!(v.nowait_lost, 0);
        assert_eq!(v.commits_recovered, FOLD_AT as u64 + 10, "folded commits count as recovered");
    }
}
