//! Snapshots on disk: `<database dir>/awr/snap-<id>.json`, one file per snapshot.
//!
//! A file is `{"snap_id":N,"crc32c":C,"sample":{...}}`, the checksum over the sample's
//! bytes exactly as written, so a torn or bit-flipped file is told from a whole one. It is
//! written (through the database's [`Storage`], like every durable file) to a temporary
//! file, synced, then renamed to its final name without replacing (which fails if the name
//! exists, so two writers racing for an id never overwrite each other: the loser takes the
//! next id), and the directory is synced: a snapshot that was reported taken survives a
//! crash, and a crash never leaves a half-written `snap-<id>.json`. The functions taking a
//! directory path read and write the local file system; the database uses its own storage.
//!
//! Ids increase: the next is one past the highest id among the files, damaged ones
//! included; retention never removes the newest snapshot, so an id is never reused.
//! Listing skips damaged files with a warning; they are removed by retention like the
//! others (by their modification time).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use redo::storage::{read_whole, FileStorage, Storage};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::sample::{snapshot_sample, Sample, SAMPLE_FORMAT_VERSION};
use super::AwrError;
use crate::database::{Database, DbShared};
use crate::error::DbResult;

/// Automatic snapshots are taken this often by default (Oracle's default).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(15 * 60);
/// Snapshots are kept this long by default (Oracle's default).
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(8 * 24 * 3600);

/// Temporary files older than this are leftovers of a crash and removed by retention.
const STALE_TEMPORARY: Duration = Duration::from_secs(3600);

/// How often snapshots are taken and how long they are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AwrSettings {
    /// Between automatic snapshots; zero turns them off.
    pub interval: Duration,
    /// Snapshots older than this are removed; zero keeps them forever.
    pub retention: Duration,
}

impl Default for AwrSettings {
    fn default() -> AwrSettings {
        AwrSettings { interval: DEFAULT_INTERVAL, retention: DEFAULT_RETENTION }
    }
}

/// A stored snapshot, without its counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotInfo {
    pub id: u64,
    pub taken_at_unix_us: u64,
    pub db_id: String,
    pub process_id: u32,
    pub path: PathBuf,
}

/// A stored snapshot with its counters.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub id: u64,
    pub sample: Sample,
}

/// A snapshot file that could not be read, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamagedSnapshot {
    pub id: u64,
    pub path: PathBuf,
    pub reason: String,
}

/// The snapshots of a database, in id order, and the files skipped as damaged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SnapshotList {
    pub snapshots: Vec<SnapshotInfo>,
    pub damaged: Vec<DamagedSnapshot>,
}

impl SnapshotList {
    fn ids(&self) -> String {
        if self.snapshots.is_empty() {
            return "none".to_string();
        }
        self.snapshots.iter().map(|s| s.id.to_string()).collect::<Vec<_>>().join(", ")
    }
}

/// Where the snapshots of the database in `db_dir` live.
pub fn awr_dir(db_dir: &Path) -> PathBuf {
    db_dir.join("awr")
}

fn snapshot_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("snap-{id}.json"))
}

/// The id in a snapshot file's name, or None for any other file.
fn id_of(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("snap-")?.strip_suffix(".json")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Takes a snapshot of `db` and stores it in the database's directory.
pub fn take_snapshot(db: &Database) -> DbResult<SnapshotInfo> {
    take_db_snapshot(db.shared())
}

/// Samples `db` and stores the sample as its next snapshot, one snapshot at a time. The
/// statements' activity it took goes back if the snapshot is not written, so the next
/// snapshot reports it.
pub(crate) fn take_db_snapshot(db: &DbShared) -> DbResult<SnapshotInfo> {
    let _one_at_a_time = db.snapshot_lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (sample, activity) = snapshot_sample(db);
    let taken = store_snapshot(&*db.storage, &db.log().config().dir, sample);
    if taken.is_err() {
        db.statements.restore_activity(&activity);
    }
    taken
}

/// Stores `sample` as the next snapshot of the database in `db_dir` (on the local file
/// system).
pub fn take_snapshot_in(db_dir: &Path, sample: Sample) -> DbResult<SnapshotInfo> {
    store_snapshot(&FileStorage, db_dir, sample)
}

/// Stores `sample` as the next snapshot of the database in `db_dir`, on `storage`.
pub(crate) fn store_snapshot(storage: &dyn Storage, db_dir: &Path, sample: Sample) -> DbResult<SnapshotInfo> {
    let dir = awr_dir(db_dir);
    storage.create_dir_all(&dir).map_err(|e| AwrError::io("creating the snapshot directory", &dir, e))?;
    let sample_json =
        serde_json::to_string(&sample).map_err(|e| AwrError::Serialize { id: 0, message: e.to_string() })?;
    let crc = crc32c::crc32c(sample_json.as_bytes());
    let mut id = highest_id(storage, &dir)? + 1;
    loop {
        let body = format!("{{\"snap_id\":{id},\"crc32c\":{crc},\"sample\":{sample_json}}}\n");
        let temporary = write_temporary(storage, &dir, id, body.as_bytes())?;
        let path = snapshot_path(&dir, id);
        match storage.rename(&temporary, &path) {
            Ok(()) => {
                sync_dir(storage, &dir)?;
                return Ok(SnapshotInfo {
                    id,
                    taken_at_unix_us: sample.taken_at_unix_us,
                    db_id: sample.db_id,
                    process_id: sample.process_id,
                    path,
                });
            }
            Err(e) => {
                // The temporary name goes: another writer took this id (try the next), or
                // the rename failed.
                if let Err(re) = storage.remove_file(&temporary) {
                    log::warn!("could not remove temporary snapshot file {}: {re}", temporary.display());
                }
                if e.kind() != std::io::ErrorKind::AlreadyExists {
                    return Err(AwrError::io("naming the snapshot file", path, e).into());
                }
                id += 1;
            }
        }
    }
}

/// Highest id among the snapshot files in `dir`, readable or not (0 if none).
fn highest_id(storage: &dyn Storage, dir: &Path) -> DbResult<u64> {
    let names = storage.list_dir(dir).map_err(|e| AwrError::io("listing", dir, e))?;
    Ok(names.iter().filter_map(|n| id_of(n)).max().unwrap_or(0))
}

fn write_temporary(storage: &dyn Storage, dir: &Path, id: u64, bytes: &[u8]) -> DbResult<PathBuf> {
    // Unique per process and call, so concurrent writers never share a temporary file.
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = format!("snap-{id}.json.tmp.{}.{}", std::process::id(), COUNTER.fetch_add(1, Relaxed));
    let path = dir.join(name);
    let file = storage.create(&path).map_err(|e| AwrError::io("creating", &path, e))?;
    let written = file
        .write_at(&[bytes], 0)
        .map_err(|e| AwrError::io("writing", &path, e))
        .and_then(|()| file.sync().map_err(|e| AwrError::io("syncing", &path, e)));
    drop(file);
    if let Err(e) = written {
        if let Err(re) = storage.remove_file(&path) {
            log::warn!("could not remove temporary snapshot file {}: {re}", path.display());
        }
        return Err(e.into());
    }
    Ok(path)
}

fn sync_dir(storage: &dyn Storage, dir: &Path) -> DbResult<()> {
    storage.sync_dir(dir).map_err(|e| AwrError::io("syncing the directory", dir, e))?;
    Ok(())
}

#[derive(Deserialize)]
struct Envelope<'a> {
    snap_id: u64,
    crc32c: u32,
    #[serde(borrow)]
    sample: &'a RawValue,
}

/// Reads and checks the snapshot file `path`, which its name says holds snapshot `id`.
fn read_snapshot(storage: &dyn Storage, path: &Path, id: u64) -> Result<Snapshot, AwrError> {
    let damaged = |reason: String| AwrError::DamagedSnapshot { id, path: path.to_path_buf(), reason };
    let bytes = read_whole(storage, path).map_err(|e| AwrError::io("reading", path, e))?;
    let text = String::from_utf8(bytes).map_err(|_| damaged("it is not UTF-8 text".to_string()))?;
    let envelope: Envelope =
        serde_json::from_str(&text).map_err(|e| damaged(format!("it is not a whole snapshot ({e})")))?;
    if envelope.snap_id != id {
        return Err(damaged(format!("it holds snapshot {} under the name of {id}", envelope.snap_id)));
    }
    let raw = envelope.sample.get();
    let actual = crc32c::crc32c(raw.as_bytes());
    if actual != envelope.crc32c {
        return Err(damaged(format!(
            "its checksum is {actual:#010x} where {:#010x} was written",
            envelope.crc32c
        )));
    }
    let sample: Sample =
        serde_json::from_str(raw).map_err(|e| damaged(format!("its sample does not read ({e})")))?;
    if sample.format_version > SAMPLE_FORMAT_VERSION {
        return Err(damaged(format!(
            "it was written in sample format {} by a newer release ({}); this release reads up to {}",
            sample.format_version, sample.release, SAMPLE_FORMAT_VERSION
        )));
    }
    Ok(Snapshot { id, sample })
}

/// The snapshots of the database in `db_dir`, in id order. Damaged files are skipped
/// with a warning (in the log and in `damaged`); an I/O error other than reading one
/// file is an error.
pub fn list_snapshots(db_dir: &Path) -> DbResult<SnapshotList> {
    list_snapshots_on(&FileStorage, db_dir)
}

/// As [`list_snapshots`], on `storage`.
pub(crate) fn list_snapshots_on(storage: &dyn Storage, db_dir: &Path) -> DbResult<SnapshotList> {
    let dir = awr_dir(db_dir);
    let mut list = SnapshotList::default();
    let names = match storage.list_dir(&dir) {
        Ok(names) => names,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(list),
        Err(e) => return Err(AwrError::io("listing", &dir, e).into()),
    };
    for name in names {
        let Some(id) = id_of(&name) else { continue };
        let path = dir.join(&name);
        match read_snapshot(storage, &path, id) {
            Ok(snapshot) => list.snapshots.push(SnapshotInfo {
                id,
                taken_at_unix_us: snapshot.sample.taken_at_unix_us,
                db_id: snapshot.sample.db_id,
                process_id: snapshot.sample.process_id,
                path,
            }),
            Err(AwrError::DamagedSnapshot { id, path, reason }) => {
                log::warn!("skipping snapshot {id}: {} is damaged: {reason}", path.display());
                list.damaged.push(DamagedSnapshot { id, path, reason });
            }
            Err(e) => return Err(e.into()),
        }
    }
    list.snapshots.sort_by_key(|s| s.id);
    list.damaged.sort_by_key(|d| d.id);
    Ok(list)
}

/// Snapshot `id` of the database in `db_dir`.
pub fn load_snapshot(db_dir: &Path, id: u64) -> DbResult<Snapshot> {
    let path = snapshot_path(&awr_dir(db_dir), id);
    if !path.exists() {
        let list = list_snapshots(db_dir)?;
        return Err(AwrError::UnknownSnapshot { id, dir: awr_dir(db_dir), available: list.ids() }.into());
    }
    Ok(read_snapshot(&FileStorage, &path, id)?)
}

/// The snapshots from `begin` to `end` (both included; damaged ones between them are
/// skipped), in id order, for a report. Without `end`, the newest snapshot; without
/// `begin`, the one before `end`.
pub fn load_range(db_dir: &Path, begin: Option<u64>, end: Option<u64>) -> DbResult<Vec<Snapshot>> {
    load_range_on(&FileStorage, db_dir, begin, end)
}

/// As [`load_range`], on `storage`.
pub(crate) fn load_range_on(
    storage: &dyn Storage,
    db_dir: &Path,
    begin: Option<u64>,
    end: Option<u64>,
) -> DbResult<Vec<Snapshot>> {
    let list = list_snapshots_on(storage, db_dir)?;
    let unknown = |id: u64| AwrError::UnknownSnapshot { id, dir: awr_dir(db_dir), available: list.ids() };
    let known = |id: u64| list.snapshots.iter().any(|s| s.id == id);
    if list.snapshots.len() < 2 {
        let hint = match list.damaged.len() {
            0 => " (take one with `redodb snapshot` or EXEC DBMS_WORKLOAD_REPOSITORY.CREATE_SNAPSHOT)"
                .to_string(),
            n => format!(" readable ({n} damaged file(s) skipped)"),
        };
        return Err(
            AwrError::NotEnoughSnapshots { dir: awr_dir(db_dir), found: list.snapshots.len(), hint }.into()
        );
    }
    let end = match end {
        Some(id) if !known(id) => return Err(unknown(id).into()),
        Some(id) => id,
        None => list.snapshots.last().map(|s| s.id).unwrap_or_default(),
    };
    let begin = match begin {
        Some(id) if !known(id) => return Err(unknown(id).into()),
        Some(id) => id,
        None => match list.snapshots.iter().rev().find(|s| s.id < end) {
            Some(s) => s.id,
            None => return Err(AwrError::BadRange { begin: end, end }.into()),
        },
    };
    if begin >= end {
        return Err(AwrError::BadRange { begin, end }.into());
    }
    list.snapshots
        .iter()
        .filter(|s| (begin..=end).contains(&s.id))
        .map(|s| Ok(read_snapshot(storage, &s.path, s.id)?))
        .collect()
}

/// Removes the snapshots taken more than `retention` before `now_unix_us` (damaged ones by
/// their file's modification time), except the newest, and stale temporary files.
/// Returns the ids removed. A zero retention keeps everything.
pub fn purge_snapshots(db_dir: &Path, retention: Duration, now_unix_us: u64) -> DbResult<Vec<u64>> {
    purge_snapshots_on(&FileStorage, db_dir, retention, now_unix_us)
}

/// As [`purge_snapshots`], on `storage`.
pub(crate) fn purge_snapshots_on(
    storage: &dyn Storage,
    db_dir: &Path,
    retention: Duration,
    now_unix_us: u64,
) -> DbResult<Vec<u64>> {
    let mut removed = Vec::new();
    if retention.is_zero() {
        return Ok(removed);
    }
    let dir = awr_dir(db_dir);
    let list = list_snapshots_on(storage, db_dir)?;
    let newest = list.snapshots.iter().map(|s| s.id).chain(list.damaged.iter().map(|d| d.id)).max();
    let cutoff = now_unix_us.saturating_sub(retention.as_micros() as u64);
    let modified_us = |path: &Path| -> Option<u64> {
        let modified = storage.modified(path).ok()?;
        Some(modified.duration_since(std::time::UNIX_EPOCH).ok()?.as_micros() as u64)
    };
    let old = list
        .snapshots
        .iter()
        .map(|s| (s.id, s.path.clone(), Some(s.taken_at_unix_us)))
        .chain(list.damaged.iter().map(|d| (d.id, d.path.clone(), modified_us(&d.path))));
    for (id, path, taken) in old {
        if Some(id) == newest || taken.is_none_or(|t| t >= cutoff) {
            continue;
        }
        storage.remove_file(&path).map_err(|e| AwrError::io("removing the old snapshot", &path, e))?;
        removed.push(id);
    }
    // Temporary files are left only by a crash between their creation and their rename.
    if let Ok(names) = storage.list_dir(&dir) {
        let stale_before = now_unix_us.saturating_sub(STALE_TEMPORARY.as_micros() as u64);
        for name in names {
            let path = dir.join(&name);
            let is_temporary = name.starts_with("snap-") && name.contains(".json.tmp.");
            if is_temporary && modified_us(&path).is_some_and(|m| m < stale_before) {
                if let Err(e) = storage.remove_file(&path) {
                    log::warn!("could not remove stale temporary snapshot file {}: {e}", path.display());
                }
            }
        }
    }
    if !removed.is_empty() {
        sync_dir(storage, &dir)?;
    }
    removed.sort_unstable();
    Ok(removed)
}

/// The automatic snapshotter; dropping it stops the thread (and waits for it, so a
/// snapshot being written is finished).
pub struct SnapshotterHandle {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SnapshotterHandle {
    /// Whether a thread is taking snapshots (false when the interval is zero).
    pub fn is_running(&self) -> bool {
        self.thread.is_some()
    }
}

impl Drop for SnapshotterHandle {
    fn drop(&mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One automatic snapshot of `db`, then the retention. Failures are logged: the next
/// snapshot is tried at the next interval.
fn auto_snapshot(db: &DbShared, retention: Duration) {
    let db_dir = &db.log().config().dir;
    match take_db_snapshot(db) {
        Ok(info) => log::debug!("automatic snapshot {} taken", info.id),
        Err(e) => log::error!("automatic snapshot failed: {e}"),
    }
    if let Err(e) = purge_snapshots_on(&*db.storage, db_dir, retention, super::clock::now_unix_us()) {
        log::error!("removing old snapshots failed: {e}");
    }
}

/// Takes a snapshot of `db` now (so a report is possible one interval after the open, and
/// the first snapshot is there when `Database::open` returns), then starts a thread that
/// takes one every `settings.interval`, applying the retention after each. A zero
/// interval takes none and starts no thread. `Database::open` calls it with its
/// `DbConfig`'s settings; the database stops it when dropped.
pub(crate) fn start_auto_snapshots(db: Arc<DbShared>, settings: AwrSettings) -> DbResult<SnapshotterHandle> {
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    if settings.interval.is_zero() {
        return Ok(SnapshotterHandle { stop, thread: None });
    }
    auto_snapshot(&db, settings.retention);
    let signal = stop.clone();
    let dir = awr_dir(&db.log().config().dir);
    let thread = std::thread::Builder::new()
        .name("db-awr-snapshot".into())
        .spawn(move || {
            let (stopped, wake) = &*signal;
            loop {
                let guard = stopped.lock().unwrap_or_else(|p| p.into_inner());
                let (guard, _) = wake
                    .wait_timeout_while(guard, settings.interval, |stopped| !*stopped)
                    .unwrap_or_else(|p| p.into_inner());
                if *guard {
                    return;
                }
                drop(guard);
                auto_snapshot(&db, settings.retention);
            }
        })
        .map_err(|e| AwrError::io("starting the snapshot thread for", dir, e))?;
    Ok(SnapshotterHandle { stop, thread: Some(thread) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::awr::open_test_database;
    use crate::error::DbError;

    fn commit_rows(db: &Database, from: i64, n: i64) {
        let mut s = db.session();
        for i in from..from + n {
            s.execute("INSERT INTO t VALUES ($1)", &[crate::Value::Int(i)]).expect("insert");
            s.execute("COMMIT", &[]).expect("commit");
        }
    }

    #[test]
    fn snapshots_persist_across_reopen_with_increasing_ids() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let db = open_test_database(dir.path());
            db.session().execute("CREATE TABLE t (id INT PRIMARY KEY)", &[]).expect("create");
            let first = take_snapshot(&db).expect("snapshot 1");
            commit_rows(&db, 0, 3);
            let second = take_snapshot(&db).expect("snapshot 2");
            assert_eq!((first.id, second.id), (1, 2));
            assert!(second.path.ends_with("awr/snap-2.json"));
        }
        let db = open_test_database(dir.path());
        let third = take_snapshot(&db).expect("snapshot 3");
        assert_eq!(third.id, 3);
        let list = list_snapshots(dir.path()).expect("list");
        assert_eq!(list.snapshots.iter().map(|s| s.id).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(list.damaged.is_empty());
        let (one, two) = (load_snapshot(dir.path(), 1).expect("1"), load_snapshot(dir.path(), 2).expect("2"));
        assert_eq!(two.sample.statistic("user commits") - one.sample.statistic("user commits"), 3);
        // The third was taken by another instance: its counters started again.
        assert!(load_snapshot(dir.path(), 3).expect("3").sample.statistic("user commits") < 3);
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(awr_dir(dir.path()))
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| id_of(n).is_some()), "{names:?}");
    }

    #[test]
    fn damaged_files_are_skipped_when_listing_and_refused_when_loaded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open_test_database(dir.path());
        for _ in 0..4 {
            take_snapshot(&db).expect("snapshot");
        }
        let awr = awr_dir(dir.path());
        // 2: truncated (a partial write); 3: one digit of a counter changed.
        let two = std::fs::read(snapshot_path(&awr, 2)).expect("read 2");
        std::fs::write(snapshot_path(&awr, 2), &two[..two.len() / 2]).expect("truncate 2");
        let three = std::fs::read_to_string(snapshot_path(&awr, 3)).expect("read 3");
        let at = three.find("\"redo size\":").expect("redo size") + "\"redo size\":".len();
        let digit = three.as_bytes()[at];
        let flipped = if digit == b'9' { '8' } else { (digit + 1) as char };
        std::fs::write(snapshot_path(&awr, 3), format!("{}{flipped}{}", &three[..at], &three[at + 1..]))
            .expect("damage 3");
        // A file of another name is not a snapshot.
        std::fs::write(awr.join("notes.txt"), "not a snapshot").expect("write notes");

        let list = list_snapshots(dir.path()).expect("list");
        assert_eq!(list.snapshots.iter().map(|s| s.id).collect::<Vec<_>>(), [1, 4]);
        assert_eq!(list.damaged.iter().map(|d| d.id).collect::<Vec<_>>(), [2, 3]);
        assert!(list.damaged[0].reason.contains("not a whole snapshot"), "{}", list.damaged[0].reason);
        assert!(list.damaged[1].reason.contains("checksum"), "{}", list.damaged[1].reason);
        match load_snapshot(dir.path(), 3) {
            Err(DbError::Awr(AwrError::DamagedSnapshot { id: 3, .. })) => {}
            other => panic!("expected snapshot 3 to be refused as damaged, got {other:?}"),
        }
        // The next id is past the damaged ones, and a range skips them.
        assert_eq!(take_snapshot(&db).expect("snapshot 5").id, 5);
        let range = load_range(dir.path(), Some(1), Some(5)).expect("range");
        assert_eq!(range.iter().map(|s| s.id).collect::<Vec<_>>(), [1, 4, 5]);
    }

    #[test]
    fn ranges_default_to_the_last_two_and_reject_bad_ids() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open_test_database(dir.path());
        let not_enough = load_range(dir.path(), None, None).unwrap_err();
        assert!(matches!(not_enough, DbError::Awr(AwrError::NotEnoughSnapshots { found: 0, .. })));
        for _ in 0..3 {
            take_snapshot(&db).expect("snapshot");
        }
        let ids = |r: Vec<Snapshot>| r.iter().map(|s| s.id).collect::<Vec<_>>();
        assert_eq!(ids(load_range(dir.path(), None, None).expect("default")), [2, 3]);
        assert_eq!(ids(load_range(dir.path(), Some(1), None).expect("from 1")), [1, 2, 3]);
        assert_eq!(ids(load_range(dir.path(), None, Some(2)).expect("to 2")), [1, 2]);
        let unknown = load_range(dir.path(), Some(1), Some(9)).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            format!(
                "snapshot 9 does not exist in {} (snapshots available: 1, 2, 3)",
                awr_dir(dir.path()).display()
            )
        );
        assert_eq!(unknown.sqlstate(), "22023");
        let backwards = load_range(dir.path(), Some(3), Some(2)).unwrap_err();
        assert!(matches!(backwards, DbError::Awr(AwrError::BadRange { begin: 3, end: 2 })));
    }

    #[test]
    fn retention_removes_old_snapshots_but_never_the_newest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open_test_database(dir.path());
        let day_us = 24 * 3600 * 1_000_000u64;
        let now = crate::awr::clock::now_unix_us();
        for age_days in [10, 9, 1] {
            let mut s = super::super::sample(&db);
            s.taken_at_unix_us = now - age_days * day_us;
            take_snapshot_in(dir.path(), s).expect("store");
        }
        assert_eq!(purge_snapshots(dir.path(), Duration::ZERO, now).expect("keep all"), Vec::<u64>::new());
        assert_eq!(purge_snapshots(dir.path(), DEFAULT_RETENTION, now).expect("purge"), [1, 2]);
        let left: Vec<u64> =
            list_snapshots(dir.path()).expect("list").snapshots.iter().map(|s| s.id).collect();
        assert_eq!(left, [3]);
        // Even past its retention, the newest stays: it carries the id sequence.
        assert_eq!(
            purge_snapshots(dir.path(), Duration::from_secs(3600), now).expect("purge"),
            Vec::<u64>::new()
        );
        assert_eq!(take_snapshot(&db).expect("next").id, 4);
    }

    #[test]
    fn the_automatic_snapshotter_takes_snapshots_until_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = |interval: Duration| {
            let mut log = redo::LogConfig::new(".");
            log.log_file_size = 1 << 20;
            log.log_buffer = 256 << 10;
            log.sync_method = redo::SyncMethod::Fdatasync;
            crate::DbConfig {
                log,
                checkpoint_interval_ms: 0,
                snapshot_interval_override: Some(interval),
                ..Default::default()
            }
        };
        let off = Database::open(dir.path(), config(Duration::ZERO)).expect("open without snapshots");
        assert!(!off.auto_snapshots_running());
        drop(off);
        assert!(list_snapshots(dir.path()).expect("list").snapshots.is_empty());

        let db = Database::open(dir.path(), config(Duration::from_millis(100))).expect("open");
        assert!(db.auto_snapshots_running());
        // The first is taken by `open` itself.
        assert_eq!(list_snapshots(dir.path()).expect("list").snapshots.len(), 1);
        std::thread::sleep(Duration::from_millis(450));
        db.stop_auto_snapshots();
        assert!(!db.auto_snapshots_running());
        let taken = list_snapshots(dir.path()).expect("list").snapshots.len();
        assert!((3..=6).contains(&taken), "{taken} snapshots in 450 ms at a 100 ms interval");
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(list_snapshots(dir.path()).expect("list").snapshots.len(), taken, "stopped");
    }
}
