//! How each server makes its log durable, and what its asynchronous commit can lose: what
//! `versus-postgres` prints in its header so that a reader knows what each ratio compares.
//!
//! Sync methods: both servers' settings are read back from them and compared by what they
//! do to the log file (`common::sync_method`, where the table of equivalents is); the flags
//! PostgreSQL really opened its WAL with are read from `/proc/PID/fdinfo` of its
//! processes, so the header states what happened, not only what was asked for.
//!
//! Loss windows. redodb's NOWAIT BATCH and PostgreSQL's `synchronous_commit = off` both
//! acknowledge a commit before its log is durable and leave the write to a background
//! writer, but their writers keep different hours: redodb's LGWR writes BATCH redo when
//! the unwritten redo passes `log_buffer / batch_flush_buffer_divisor` or
//! `batch_flush_bytes`, or `batch_flush_timeout_ms` (3 s) after its last write, so at a low
//! commit rate a crash can take back up to that timeout (plus the write it then makes) of
//! acknowledged commits; PostgreSQL's WAL writer flushes every `wal_writer_delay` (200 ms)
//! and its documentation bounds the window at three times that (600 ms). NOWAIT IMMEDIATE
//! posts redodb's writer at every commit: its window is the write in flight.

use redo::SyncMethod;
use serde::Serialize;

pub use crate::common::sync_method::proc_flags_text;
use crate::common::sync_method::{closest, Durability, WalSyncMethod};

/// PostgreSQL's `wal_sync_method` as `--postgres-sync-method` asks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostgresSyncChoice {
    /// PostgreSQL's own default (fdatasync on Linux), nothing set.
    Default,
    /// The method closest to redodb's, with the wal_level it needs.
    Same,
    Method(WalSyncMethod),
}

impl PostgresSyncChoice {
    pub fn parse(text: &str) -> Result<PostgresSyncChoice, String> {
        match text.trim() {
            "default" => Ok(PostgresSyncChoice::Default),
            "same" => Ok(PostgresSyncChoice::Same),
            other => WalSyncMethod::parse(other).map(PostgresSyncChoice::Method).ok_or_else(|| {
                format!(
                    "unknown PostgreSQL sync method {other:?}: default, same, or one of fdatasync, fsync, \
                     open_datasync, open_sync"
                )
            }),
        }
    }

    pub fn name(self) -> String {
        match self {
            PostgresSyncChoice::Default => "default".into(),
            PostgresSyncChoice::Same => "same".into(),
            PostgresSyncChoice::Method(m) => m.name().into(),
        }
    }

    /// The `-c name=value` settings PostgreSQL is started with for this choice, when
    /// redodb runs `redodb_method`.
    pub fn settings(self, redodb_method: SyncMethod) -> Vec<(String, String)> {
        let method = match self {
            PostgresSyncChoice::Default => return Vec::new(),
            PostgresSyncChoice::Method(m) => m,
            PostgresSyncChoice::Same => closest(redodb_method).0,
        };
        let mut settings = vec![("wal_sync_method".to_string(), method.name().to_string())];
        if self == PostgresSyncChoice::Same && closest(redodb_method).1 {
            settings.push(("wal_level".into(), "minimal".into()));
            // PostgreSQL refuses wal_level = minimal while WAL senders are allowed.
            settings.push(("max_wal_senders".into(), "0".into()));
        }
        settings
    }
}

/// Both servers' sync settings as they run, read back from them.
#[derive(Clone, Debug, Serialize)]
pub struct SyncSettings {
    /// redodb's `log_sync_method` (v$parameter).
    pub redodb_sync_method: String,
    pub redodb_does: String,
    /// What `--postgres-sync-method` asked for.
    pub postgres_choice: String,
    /// PostgreSQL's `wal_sync_method` and `wal_level` (SHOW).
    pub postgres_wal_sync_method: String,
    pub postgres_wal_level: String,
    /// What PostgreSQL 15 does with them.
    pub postgres_does: String,
    /// The flags PostgreSQL's WAL file was open with in its processes (`/proc/PID/fdinfo`),
    /// None when no process of it had one open when looked at.
    pub postgres_wal_open_flags: Option<String>,
    /// Whether both do the same to their log file.
    pub same_method: bool,
    /// One sentence on how they compare, and how to make them the same.
    pub note: String,
}

impl SyncSettings {
    pub fn new(
        redodb_method: SyncMethod,
        choice: PostgresSyncChoice,
        wal_sync_method: &str,
        wal_level: &str,
        observed_flags: Option<String>,
    ) -> SyncSettings {
        let ours = Durability::of_redodb(redodb_method);
        let theirs = WalSyncMethod::parse(wal_sync_method).map(|m| m.durability(wal_level));
        let same_method = theirs == Some(ours);
        let (closest_method, needs_minimal) = closest(redodb_method);
        let how = if needs_minimal {
            format!(
                "{} with wal_level=minimal and max_wal_senders=0 (PostgreSQL 15 then opens WAL with O_DIRECT|O_DSYNC)",
                closest_method.name()
            )
        } else {
            closest_method.name().to_string()
        };
        let note = if same_method {
            format!("the same method: both make each log write durable with {}", ours.describe())
        } else {
            let other_side = match WalSyncMethod::parse(wal_sync_method) {
                Some(WalSyncMethod::Fsync) | Some(WalSyncMethod::OpenSync) => {
                    format!("; redodb has no equivalent of PostgreSQL's {wal_sync_method}")
                }
                _ => String::new(),
            };
            format!(
                "NOT the same method{other_side}; --postgres-sync-method same runs PostgreSQL with the closest \
                 to redodb's {}: {how}",
                redodb_method.name()
            )
        };
        SyncSettings {
            redodb_sync_method: redodb_method.name().into(),
            redodb_does: ours.describe(),
            postgres_choice: choice.name(),
            postgres_wal_sync_method: wal_sync_method.into(),
            postgres_wal_level: wal_level.into(),
            postgres_does: theirs
                .map_or_else(|| format!("unknown method {wal_sync_method}"), |d| d.describe()),
            postgres_wal_open_flags: observed_flags,
            same_method,
            note,
        }
    }

    /// The flags PostgreSQL's WAL should be open with, by its settings.
    pub fn postgres_expected_flags(&self) -> Option<String> {
        WalSyncMethod::parse(&self.postgres_wal_sync_method)
            .map(|m| m.durability(&self.postgres_wal_level).flags_text())
    }
}

/// What each server's asynchronous commit can lose in a crash, from both servers' live
/// settings.
#[derive(Clone, Debug, Serialize)]
pub struct LossWindows {
    /// redodb's BATCH triggers: bytes of unwritten redo (the smaller of log_buffer /
    /// batch_flush_buffer_divisor and batch_flush_bytes), and the time since the last write.
    pub redodb_batch_flush_trigger_bytes: u64,
    pub redodb_batch_flush_timeout_ms: u64,
    /// PostgreSQL's WAL writer: its delay between rounds, and the documented bound on the
    /// window of `synchronous_commit = off` (three times the delay).
    pub postgres_wal_writer_delay_ms: u64,
    pub postgres_wal_writer_flush_after: String,
    pub postgres_max_loss_ms: u64,
}

impl LossWindows {
    /// The lines the header prints.
    pub fn lines(&self) -> [String; 4] {
        [
            "NOWAIT BATCH vs sync_commit=off: both acknowledge a commit before its log is durable, \
             with different loss windows:"
                .to_string(),
            format!(
                "redodb writes BATCH redo once {} KiB is unwritten or {} ms after its last write: a crash \
                 can lose up to {} ms (plus one write) of acknowledged commits",
                self.redodb_batch_flush_trigger_bytes / 1024,
                self.redodb_batch_flush_timeout_ms,
                self.redodb_batch_flush_timeout_ms,
            ),
            format!(
                "PostgreSQL's WAL writer flushes every wal_writer_delay = {} ms (or after {}): at most {} ms \
                 (3 x wal_writer_delay); ALTER SYSTEM SET batch_flush_timeout_ms = {} gives redodb about that",
                self.postgres_wal_writer_delay_ms,
                self.postgres_wal_writer_flush_after,
                self.postgres_max_loss_ms,
                self.postgres_max_loss_ms
            ),
            "NOWAIT (IMMEDIATE) posts redodb's log writer at each commit: it risks only the write in flight"
                .to_string(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_redodb_method_has_its_postgres_twin() {
        for method in SyncMethod::ALL {
            let choice = PostgresSyncChoice::Same;
            let settings = choice.settings(method);
            let get = |name: &str| settings.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
            let wal_level = get("wal_level").unwrap_or("replica");
            let s = SyncSettings::new(method, choice, get("wal_sync_method").unwrap(), wal_level, None);
            assert!(s.same_method, "{method:?}: {s:?}");
            assert!(s.note.starts_with("the same method"), "{}", s.note);
        }
        // O_DIRECT needs wal_level = minimal and no WAL senders.
        let direct = PostgresSyncChoice::Same.settings(SyncMethod::DirectDsync);
        assert!(direct.contains(&("wal_level".into(), "minimal".into())), "{direct:?}");
        assert!(direct.contains(&("max_wal_senders".into(), "0".into())), "{direct:?}");
        assert_eq!(PostgresSyncChoice::Same.settings(SyncMethod::Dsync).len(), 1);
    }

    #[test]
    fn postgres_defaults_differ_from_o_direct_and_say_how_to_match() {
        let s = SyncSettings::new(
            SyncMethod::DirectDsync,
            PostgresSyncChoice::Default,
            "fdatasync",
            "replica",
            None,
        );
        assert!(!s.same_method);
        assert_eq!(s.redodb_does, "O_DIRECT|O_DSYNC writes");
        assert_eq!(s.postgres_does, "write + fdatasync");
        assert!(s.note.contains("open_datasync with wal_level=minimal"), "{}", s.note);
        // open_datasync without minimal is O_DSYNC alone: redodb's o_dsync, not o_direct.
        let s = SyncSettings::new(
            SyncMethod::DirectDsync,
            PostgresSyncChoice::Default,
            "open_datasync",
            "replica",
            None,
        );
        assert!(!s.same_method);
        assert_eq!(s.postgres_expected_flags().as_deref(), Some("O_DSYNC"));
        let s =
            SyncSettings::new(SyncMethod::Fdatasync, PostgresSyncChoice::Default, "fsync", "replica", None);
        assert!(!s.same_method && s.note.contains("no equivalent of PostgreSQL's fsync"), "{}", s.note);
    }

    #[test]
    fn choices_parse_and_refuse_unknown_methods() {
        assert_eq!(PostgresSyncChoice::parse("same"), Ok(PostgresSyncChoice::Same));
        assert_eq!(
            PostgresSyncChoice::parse("open_sync"),
            Ok(PostgresSyncChoice::Method(WalSyncMethod::OpenSync))
        );
        assert!(PostgresSyncChoice::parse("o_direct").unwrap_err().contains("open_datasync"));
        assert!(PostgresSyncChoice::Default.settings(SyncMethod::DirectDsync).is_empty());
    }
}
