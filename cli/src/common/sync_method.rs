//! The log sync methods of redodb and of PostgreSQL 15 side by side: what each does to its
//! log file ([`Durability`]: the flags the file is opened with and the call made after
//! each write), so that a benchmark compares a server with the raw disk, or two servers
//! with each other, under the same method, and says so when they differ.
//!
//! | redodb      | does                  | PostgreSQL 15 equivalent                              |
//! |-------------|-----------------------|-------------------------------------------------------|
//! | `fdatasync` | pwritev + fdatasync   | `fdatasync` (its default on Linux)                    |
//! | `o_dsync`   | O_DSYNC               | `open_datasync` (wal_level replica or logical)        |
//! | `o_direct`  | O_DIRECT + O_DSYNC    | `open_datasync` with `wal_level = minimal`            |
//!
//! PostgreSQL 15 has no setting for O_DIRECT: its `get_sync_bit` (xlog.c) adds O_DIRECT to
//! `open_datasync` and `open_sync` when WAL is not needed beyond crash recovery
//! (`wal_level = minimal`, which also needs `max_wal_senders = 0` and no archiving), and
//! never to `fdatasync` or `fsync` (PostgreSQL 16 replaced this with `debug_io_direct`).
//! PostgreSQL's `fsync` (file metadata synced too) and `open_sync` (O_SYNC) have no redodb
//! equivalent.

use redo::SyncMethod;
use serde::Serialize;

/// PostgreSQL's `wal_sync_method` values on Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WalSyncMethod {
    Fdatasync,
    Fsync,
    OpenDatasync,
    OpenSync,
}

impl WalSyncMethod {
    pub const ALL: [WalSyncMethod; 4] = [
        WalSyncMethod::Fdatasync,
        WalSyncMethod::Fsync,
        WalSyncMethod::OpenDatasync,
        WalSyncMethod::OpenSync,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WalSyncMethod::Fdatasync => "fdatasync",
            WalSyncMethod::Fsync => "fsync",
            WalSyncMethod::OpenDatasync => "open_datasync",
            WalSyncMethod::OpenSync => "open_sync",
        }
    }

    pub fn parse(text: &str) -> Option<WalSyncMethod> {
        WalSyncMethod::ALL.into_iter().find(|m| m.name() == text.trim())
    }

    /// What PostgreSQL 15 does with this method at `wal_level`.
    pub fn durability(self, wal_level: &str) -> Durability {
        // get_sync_bit: O_DIRECT with the open_* methods unless XLogIsNeeded(), that is
        // unless wal_level is replica or logical.
        let direct = wal_level == "minimal";
        match self {
            WalSyncMethod::Fdatasync => {
                Durability { direct: false, open_flag: None, call: Some("fdatasync") }
            }
            WalSyncMethod::Fsync => Durability { direct: false, open_flag: None, call: Some("fsync") },
            WalSyncMethod::OpenDatasync => Durability { direct, open_flag: Some("O_DSYNC"), call: None },
            WalSyncMethod::OpenSync => Durability { direct, open_flag: Some("O_SYNC"), call: None },
        }
    }
}

/// What a sync method does to the log file: the flags it is opened with and the call made
/// after each write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Durability {
    pub direct: bool,
    /// O_DSYNC or O_SYNC.
    pub open_flag: Option<&'static str>,
    /// fdatasync or fsync after each write.
    pub call: Option<&'static str>,
}

impl Durability {
    pub fn of_redodb(method: SyncMethod) -> Durability {
        match method {
            SyncMethod::Fdatasync => Durability { direct: false, open_flag: None, call: Some("fdatasync") },
            SyncMethod::Dsync => Durability { direct: false, open_flag: Some("O_DSYNC"), call: None },
            SyncMethod::DirectDsync => Durability { direct: true, open_flag: Some("O_DSYNC"), call: None },
        }
    }

    /// The open flags alone, as `/proc/PID/fdinfo` shows them: "O_DIRECT|O_DSYNC", or
    /// "none" for a plain open.
    pub fn flags_text(&self) -> String {
        let flags: Vec<&str> = self.direct.then_some("O_DIRECT").into_iter().chain(self.open_flag).collect();
        if flags.is_empty() {
            "none".into()
        } else {
            flags.join("|")
        }
    }

    /// "O_DIRECT|O_DSYNC writes", "write + fdatasync".
    pub fn describe(&self) -> String {
        match self.call {
            Some(call) if self.open_flag.is_none() && !self.direct => format!("write + {call}"),
            Some(call) => format!("{} writes + {call}", self.flags_text()),
            None => format!("{} writes", self.flags_text()),
        }
    }
}

/// Open flags as `/proc/PID/fdinfo` shows them, in the words of
/// [`Durability::flags_text`] (O_SYNC includes O_DSYNC's bit and is named alone).
pub fn proc_flags_text(flags: u64) -> String {
    let has = |f: libc::c_int| flags & f as u64 == f as u64;
    let mut names = Vec::new();
    if has(libc::O_DIRECT) {
        names.push("O_DIRECT");
    }
    if has(libc::O_SYNC) {
        names.push("O_SYNC");
    } else if has(libc::O_DSYNC) {
        names.push("O_DSYNC");
    }
    if names.is_empty() {
        "none".into()
    } else {
        names.join("|")
    }
}

/// PostgreSQL's method closest to redodb's `method`, and whether it needs
/// `wal_level = minimal` (for O_DIRECT).
pub fn closest(method: SyncMethod) -> (WalSyncMethod, bool) {
    match method {
        SyncMethod::Fdatasync => (WalSyncMethod::Fdatasync, false),
        SyncMethod::Dsync => (WalSyncMethod::OpenDatasync, false),
        SyncMethod::DirectDsync => (WalSyncMethod::OpenDatasync, true),
    }
}

/// The redodb method that does what PostgreSQL's `wal_sync_method` does at `wal_level`
/// (whose raw disk figure is the one to compare PostgreSQL's commits with), if any.
pub fn redodb_equivalent(wal_sync_method: &str, wal_level: &str) -> Option<SyncMethod> {
    let theirs = WalSyncMethod::parse(wal_sync_method)?.durability(wal_level);
    SyncMethod::ALL.into_iter().find(|m| Durability::of_redodb(*m) == theirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_flags_read_as_the_methods_name_them() {
        let o = |f: libc::c_int| f as u64;
        assert_eq!(proc_flags_text(o(libc::O_RDWR)), "none");
        assert_eq!(proc_flags_text(o(libc::O_RDWR | libc::O_DSYNC)), "O_DSYNC");
        assert_eq!(proc_flags_text(o(libc::O_RDWR | libc::O_DSYNC | libc::O_DIRECT)), "O_DIRECT|O_DSYNC");
        assert_eq!(proc_flags_text(o(libc::O_SYNC)), "O_SYNC");
        let direct = WalSyncMethod::OpenDatasync.durability("minimal");
        assert_eq!(direct.flags_text(), proc_flags_text(o(libc::O_DSYNC | libc::O_DIRECT)));
    }

    #[test]
    fn postgres_methods_map_to_redodb_methods_by_what_they_do() {
        assert_eq!(redodb_equivalent("fdatasync", "replica"), Some(SyncMethod::Fdatasync));
        assert_eq!(redodb_equivalent("open_datasync", "replica"), Some(SyncMethod::Dsync));
        assert_eq!(redodb_equivalent("open_datasync", "minimal"), Some(SyncMethod::DirectDsync));
        assert_eq!(redodb_equivalent("fsync", "replica"), None);
        assert_eq!(redodb_equivalent("open_sync", "minimal"), None);
        assert_eq!(redodb_equivalent("fsync_writethrough", "replica"), None);
        for m in SyncMethod::ALL {
            let (theirs, minimal) = closest(m);
            let level = if minimal { "minimal" } else { "replica" };
            assert_eq!(redodb_equivalent(theirs.name(), level), Some(m), "{m:?}");
        }
    }
}
