//! The committed state of the database: every table's rows in an ordered map keyed by
//! primary key. Persistent maps (`imbl`) make a snapshot an O(1) clone, so readers and
//! checkpoints never hold up commits, and a commit changes only the paths it touches.
//!
//! Commits are applied as their commit records reach the log buffer, which is not always
//! in SCN order: a session descheduled between copying its commit record and applying
//! it must not hold up everyone behind it. That is safe because the commits not yet
//! applied never conflict: each one still holds the locks on every row and table it
//! changed (they are released only after its apply), so they touch disjoint rows and
//! applying them in any order gives the same state as SCN order.
//!
//! Invariant: every commit up to `scn` is reflected, plus exactly those in `ahead`
//! (all above `scn + 1`); no other. A checkpoint image records both, and recovery replays
//! the redo after `scn` except the commits in `ahead`.

use std::sync::Arc;

use imbl::OrdMap;
use redo::{Lsn, Scn};

use crate::change::Change;
use crate::error::{DbError, DbResult};
use crate::schema::{Key, Row, TableSchema};

#[derive(Clone, Debug)]
pub struct Table {
    pub schema: Arc<TableSchema>,
    pub rows: OrdMap<Key, Row>,
}

#[derive(Clone, Debug, Default)]
pub struct DbState {
    pub tables: OrdMap<String, Table>,
    /// Every commit up to this one is applied (the contiguous watermark).
    pub scn: Scn,
    /// End of the unit of commit `scn` in the redo stream (what a checkpoint records).
    pub lsn: Lsn,
    /// Commits applied beyond `scn + 1`, in SCN order, with the end of each in the redo
    /// stream: usually empty, and short (at most one per session in flight).
    pub ahead: Vec<(Scn, Lsn)>,
}

impl DbState {
    /// Records that commit `scn`, ending at `lsn` in the redo stream, has been applied,
    /// advancing the watermark over every commit applied ahead of it that now follows.
    pub fn mark_applied(&mut self, scn: Scn, lsn: Lsn) {
        assert!(scn > self.scn, "commit {scn} applied twice (applied through {})", self.scn);
        if scn != self.scn.next() {
            let at = self.ahead.partition_point(|&(s, _)| s < scn);
            assert!(self.ahead.get(at).is_none_or(|&(s, _)| s != scn), "commit {scn} applied twice");
            self.ahead.insert(at, (scn, lsn));
            return;
        }
        self.scn = scn;
        self.lsn = lsn;
        let contiguous = self.ahead.iter().zip(1u64..).take_while(|((s, _), i)| s.0 == scn.0 + i).count();
        if contiguous > 0 {
            (self.scn, self.lsn) = self.ahead[contiguous - 1];
            self.ahead.drain(..contiguous);
        }
    }

    /// Whether commit `scn` is reflected in this state.
    pub fn has_applied(&self, scn: Scn) -> bool {
        scn <= self.scn || self.ahead.binary_search_by_key(&scn, |&(s, _)| s).is_ok()
    }

    /// The end in the redo stream of the newest commit reflected (what must be durable
    /// before this state may be written to an image).
    pub fn newest_lsn(&self) -> Lsn {
        self.ahead.last().map_or(self.lsn, |&(_, lsn)| lsn)
    }

    pub fn table(&self, name: &str) -> DbResult<&Table> {
        self.tables.get(name).ok_or_else(|| DbError::UnknownTable(name.to_string()))
    }

    fn table_mut(&mut self, name: &str) -> DbResult<&mut Table> {
        self.tables.get_mut(name).ok_or_else(|| DbError::UnknownTable(name.to_string()))
    }

    /// Applies one change. A change that does not fit the state (a duplicate key, a
    /// missing row or table) is an error: on the commit path that is a bug (changes are
    /// validated under row locks), in recovery it means the redo is corrupt.
    pub fn apply(&mut self, change: &Change) -> DbResult<()> {
        match change {
            Change::CreateTable(schema) => {
                if self.tables.contains_key(&schema.name) {
                    return Err(DbError::TableExists(schema.name.clone()));
                }
                self.tables.insert(
                    schema.name.clone(),
                    Table { schema: Arc::new(schema.clone()), rows: OrdMap::new() },
                );
            }
            Change::DropTable { table } => {
                self.tables.remove(table).ok_or_else(|| DbError::UnknownTable(table.clone()))?;
            }
            Change::Truncate { table } => self.table_mut(table)?.rows = OrdMap::new(),
            Change::Insert { table, row } => {
                let t = self.table_mut(table)?;
                let key = t.schema.key_of(row);
                // One walk down the tree; a duplicate (never on the commit path, where
                // the row lock and the read under it exclude one) is put back.
                if let Some(existing) = t.rows.insert(key.clone(), row.clone()) {
                    t.rows.insert(key.clone(), existing);
                    return Err(DbError::DuplicateKey { table: table.clone(), key: format!("{key:?}") });
                }
            }
            Change::Update { table, key, row } => {
                let t = self.table_mut(table)?;
                if let Some(current) = t.rows.get_mut(key) {
                    // The common case: the key is unchanged, one walk down the tree.
                    if t.schema.primary_key.iter().zip(key.iter()).all(|(&i, k)| row[i] == *k) {
                        *current = row.clone();
                        return Ok(());
                    }
                }
                if t.rows.remove(key).is_none() {
                    return Err(DbError::CorruptChange(format!(
                        "update of a missing row {key:?} in \"{table}\""
                    )));
                }
                let new_key = t.schema.key_of(row);
                if t.rows.contains_key(&new_key) {
                    return Err(DbError::DuplicateKey { table: table.clone(), key: format!("{new_key:?}") });
                }
                t.rows.insert(new_key, row.clone());
            }
            Change::Delete { table, key } => {
                if self.table_mut(table)?.rows.remove(key).is_none() {
                    return Err(DbError::CorruptChange(format!(
                        "delete of a missing row {key:?} in \"{table}\""
                    )));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(order: &[u64]) -> DbState {
        let mut st = DbState::default();
        for &scn in order {
            st.mark_applied(Scn(scn), Lsn(scn * 100));
        }
        st
    }

    #[test]
    fn the_watermark_advances_over_commits_applied_ahead_of_it() {
        let st = applied(&[1, 3, 4, 6]);
        assert_eq!((st.scn, st.lsn), (Scn(1), Lsn(100)));
        assert_eq!(st.ahead, vec![(Scn(3), Lsn(300)), (Scn(4), Lsn(400)), (Scn(6), Lsn(600))]);
        assert!(st.has_applied(Scn(1)) && st.has_applied(Scn(4)) && st.has_applied(Scn(6)));
        assert!(!st.has_applied(Scn(2)) && !st.has_applied(Scn(5)) && !st.has_applied(Scn(7)));
        assert_eq!(st.newest_lsn(), Lsn(600));

        let mut st = st;
        st.mark_applied(Scn(2), Lsn(200));
        assert_eq!((st.scn, st.lsn), (Scn(4), Lsn(400)), "2 closes the gap up to 4");
        assert_eq!(st.ahead, vec![(Scn(6), Lsn(600))]);
        st.mark_applied(Scn(5), Lsn(500));
        assert_eq!((st.scn, st.lsn, st.ahead.len()), (Scn(6), Lsn(600), 0));
    }

    #[test]
    fn any_order_of_applies_ends_at_the_same_watermark() {
        // Every permutation of 1..=5: the watermark ends at 5 with nothing ahead.
        fn permutations(items: Vec<u64>) -> Vec<Vec<u64>> {
            if items.len() <= 1 {
                return vec![items];
            }
            let mut out = Vec::new();
            for i in 0..items.len() {
                let mut rest = items.clone();
                let first = rest.remove(i);
                for mut p in permutations(rest) {
                    p.insert(0, first);
                    out.push(p);
                }
            }
            out
        }
        for order in permutations((1..=5).collect()) {
            let st = applied(&order);
            assert_eq!((st.scn, st.lsn, st.ahead.len()), (Scn(5), Lsn(500), 0), "{order:?}");
        }
    }

    #[test]
    #[should_panic(expected = "applied twice")]
    fn a_commit_applied_twice_is_a_bug() {
        applied(&[1, 3, 3]);
    }
}
