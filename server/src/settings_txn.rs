//! PostgreSQL's SET is transactional: a transaction that rolls back takes its SETs with
//! it, `SET LOCAL` lasts until its transaction ends either way, and `ROLLBACK TO
//! SAVEPOINT` undoes the SETs made after the savepoint. This module keeps what the open
//! transaction changed so that `protocol` can put it back when the transaction ends.
//!
//! The settings are the ones the server keeps for its client (`client_sql`:
//! application_name, DateStyle, ...) and the db session's own parameters (commit_wait,
//! commit_logging, call_commit_optimization, timed_statistics; `synchronous_commit` is
//! commit_wait). Oracle's `ALTER SESSION SET` is not transactional, as in Oracle: only
//! SET, RESET and set_config() are recorded here (a later rollback still puts back the
//! value a recorded SET found).
//!
//! The rule for each setting, PostgreSQL's: at ROLLBACK it gets back the value it had
//! when the transaction first changed it; at COMMIT it keeps the value of the last plain
//! SET in the transaction, or, if only SET LOCAL changed it, gets back that first value.
//! Outside a transaction block each statement is its own transaction (each Query message,
//! or each run of extended-protocol messages up to Sync), so a SET there lasts and a SET
//! LOCAL ends with it.

use std::collections::BTreeMap;

use db::params::{SessionParameter, SessionParameters};

/// A setting a transaction may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SettingKey {
    /// A setting the server keeps, by its key (lowercase name).
    Client(&'static str),
    /// One of the db session's parameters.
    Db(SessionParameter),
}

/// A value of a setting, to put back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SettingValue {
    Client(String),
    /// The db session's parameters: only the field of the key it goes with counts.
    Db(SessionParameters),
}

/// What the transaction did to one setting.
#[derive(Clone, Debug)]
struct Changed {
    /// Its value when the transaction first changed it.
    original: SettingValue,
    /// The value of the last plain (not LOCAL) SET, which a commit keeps.
    kept: Option<SettingValue>,
}

/// The settings the open transaction changed (cloned at each savepoint: a handful of
/// entries at most).
#[derive(Clone, Debug, Default)]
pub struct TransactionSettings {
    changed: BTreeMap<SettingKey, Changed>,
}

impl TransactionSettings {
    /// A SET (`local`: SET LOCAL) changed `key` from `before` to `after`.
    pub fn record(&mut self, key: SettingKey, before: SettingValue, after: SettingValue, local: bool) {
        let changed = self.changed.entry(key).or_insert(Changed { original: before, kept: None });
        if !local {
            changed.kept = Some(after);
        }
    }

    /// The settings changed so far.
    pub fn keys(&self) -> impl Iterator<Item = SettingKey> + '_ {
        self.changed.keys().copied()
    }

    /// The transaction ended (`committed` or rolled back): the value each setting it
    /// changed must have now, and the record is emptied for the next transaction.
    pub fn finish(&mut self, committed: bool) -> Vec<(SettingKey, SettingValue)> {
        std::mem::take(&mut self.changed)
            .into_iter()
            .map(|(key, changed)| {
                let value = match changed.kept {
                    Some(kept) if committed => kept,
                    _ => changed.original,
                };
                (key, value)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(v: &str) -> SettingValue {
        SettingValue::Client(v.to_string())
    }

    const APP: SettingKey = SettingKey::Client("application_name");

    fn after(changes: &[(&str, &str, bool)], committed: bool) -> Vec<(SettingKey, SettingValue)> {
        let mut settings = TransactionSettings::default();
        for (before, after, local) in changes {
            settings.record(APP, client(before), client(after), *local);
        }
        settings.finish(committed)
    }

    #[test]
    fn a_commit_keeps_the_last_plain_set_and_a_rollback_the_first_value() {
        assert_eq!(after(&[("a", "b", false), ("b", "c", false)], true), [(APP, client("c"))]);
        assert_eq!(after(&[("a", "b", false), ("b", "c", false)], false), [(APP, client("a"))]);
        // SET LOCAL alone ends with its transaction.
        assert_eq!(after(&[("a", "b", true)], true), [(APP, client("a"))]);
        // SET then SET LOCAL: the SET is kept; SET LOCAL then SET: so is the SET.
        assert_eq!(after(&[("a", "b", false), ("b", "c", true)], true), [(APP, client("b"))]);
        assert_eq!(after(&[("a", "b", true), ("b", "c", false)], true), [(APP, client("c"))]);
        assert_eq!(after(&[], true), []);
    }
}
