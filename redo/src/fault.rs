//! Injected I/O faults: which operation on which files fails, with which errno. The
//! simulated disk ([`crate::sim::SimStorage`]) checks them on every operation;
//! [`FaultyStorage`] checks them in front of the real file system, so a whole process (a
//! `redodb serve` under test) can meet a failing sync or a full disk. A fault spec reads
//! `op:path_contains:skip:errno` (for example `sync:redo01:3:EIO`: the fourth sync of a
//! file whose path contains `redo01`, and every later one, fails with EIO); several are
//! separated by commas ([`parse_faults`]).
//!
//! A fault that ends: [`FaultyStorage::armed_while`] makes the faults apply only while a
//! given file exists (`redodb serve` takes it from `REDODB_FAULTS_WHILE`), so a test of a
//! whole process can fill the disk for a while and then give the space back by removing
//! one file, without reaching into the process.
//!
//! A slow disk: the errno `STALL` ([`STALL`]) makes the operation wait, instead of
//! failing, for as long as the fault is armed (`sync:.log:0:STALL` with a trigger file:
//! every log write's sync hangs until the test removes the file), so a test can hold a
//! commit in `log file sync` for exactly as long as it needs.

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::storage::{DirLock, DirLockError, FileMode, FileStorage, Storage, StorageFile};

/// Which operation a fault hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultOp {
    /// `write_at` (and the zeros of `create_zeroed`).
    Write,
    /// A file's `sync`.
    Sync,
    /// `create` and `create_zeroed`.
    Create,
    Rename,
    Remove,
    SyncDir,
}

impl FaultOp {
    pub const ALL: [FaultOp; 6] =
        [FaultOp::Write, FaultOp::Sync, FaultOp::Create, FaultOp::Rename, FaultOp::Remove, FaultOp::SyncDir];

    pub fn name(self) -> &'static str {
        match self {
            FaultOp::Write => "write",
            FaultOp::Sync => "sync",
            FaultOp::Create => "create",
            FaultOp::Rename => "rename",
            FaultOp::Remove => "remove",
            FaultOp::SyncDir => "syncdir",
        }
    }
}

/// The `errno` of a fault that stalls the operation while armed instead of failing it
/// (spec `STALL`). Only [`FaultyStorage`] waits; the simulated disk fails such an
/// operation with `WouldBlock`.
pub const STALL: i32 = -1;

/// A fault: the `skip`+1-th matching operation, and every later one, fails with `errno`
/// (or waits: [`STALL`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub op: FaultOp,
    /// Only files whose path contains this string; empty for all files.
    pub path_contains: String,
    pub skip: u64,
    pub errno: i32,
}

/// The errno names a fault spec may use.
const ERRNOS: [(&str, i32); 6] = [
    ("EIO", libc::EIO),
    ("ENOSPC", libc::ENOSPC),
    ("EROFS", libc::EROFS),
    ("EDQUOT", libc::EDQUOT),
    ("EACCES", libc::EACCES),
    ("EFBIG", libc::EFBIG),
];

/// A fault spec that does not read.
#[derive(Debug, thiserror::Error)]
#[error("fault spec {spec:?}: {problem} (expected op:path_contains:skip:errno, op one of write, sync, create, rename, remove, syncdir; errno a number or one of EIO, ENOSPC, EROFS, EDQUOT, EACCES, EFBIG, or STALL)")]
pub struct FaultSpecError {
    pub spec: String,
    pub problem: String,
}

/// Parses comma-separated fault specs (see the module docs). An empty text is no fault.
pub fn parse_faults(text: &str) -> Result<Vec<Fault>, FaultSpecError> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(parse_fault).collect()
}

fn parse_fault(spec: &str) -> Result<Fault, FaultSpecError> {
    let bad = |problem: &str| FaultSpecError { spec: spec.to_string(), problem: problem.to_string() };
    let parts: Vec<&str> = spec.split(':').collect();
    let [op, path_contains, skip, errno] = parts[..] else { return Err(bad("it needs four fields")) };
    let op = FaultOp::ALL
        .into_iter()
        .find(|o| o.name().eq_ignore_ascii_case(op))
        .ok_or_else(|| bad(&format!("unknown operation {op:?}")))?;
    let skip = skip.parse().map_err(|_| bad(&format!("skip {skip:?} is not a count")))?;
    let errno =
        match ERRNOS.iter().find(|(name, _)| name.eq_ignore_ascii_case(errno)) {
            Some(&(_, n)) => n,
            None if errno.eq_ignore_ascii_case("STALL") => STALL,
            None => errno.parse::<i32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                bad(&format!("errno {errno:?} is neither a known name nor a positive number"))
            })?,
        };
    Ok(Fault { op, path_contains: path_contains.to_string(), skip, errno })
}

/// Faults with how many matching operations each has let through.
#[derive(Debug, Default)]
pub struct FaultSet {
    faults: Vec<(Fault, u64)>,
}

impl FaultSet {
    pub fn inject(&mut self, fault: Fault) {
        self.faults.push((fault, 0));
    }

    pub fn clear(&mut self) {
        self.faults.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }

    /// Counts one `op` on `path` against the faults, failing it if one says so.
    pub fn check(&mut self, op: FaultOp, path: &Path) -> io::Result<()> {
        let p = path.to_string_lossy();
        for (fault, seen) in self.faults.iter_mut() {
            if fault.op == op && p.contains(fault.path_contains.as_str()) {
                if *seen >= fault.skip {
                    if fault.errno == STALL {
                        return Err(io::Error::new(io::ErrorKind::WouldBlock, "a stalled operation (fault)"));
                    }
                    return Err(io::Error::from_raw_os_error(fault.errno));
                }
                *seen += 1;
            }
        }
        Ok(())
    }
}

/// The real file system with injected faults in front of it. Clones share the faults, so
/// a test keeps a handle to add or clear them while the database runs.
#[derive(Clone, Default)]
pub struct FaultyStorage {
    faults: Arc<Mutex<FaultSet>>,
    /// When set, the faults apply only while this file exists (see the module docs).
    armed_while: Option<Arc<std::path::PathBuf>>,
}

impl FaultyStorage {
    pub fn new(faults: Vec<Fault>) -> FaultyStorage {
        let storage = FaultyStorage::default();
        for f in faults {
            storage.inject(f);
        }
        storage
    }

    /// The faults apply only while `trigger` exists; while it does not, operations pass
    /// and are not counted against the faults' `skip`. The file's presence is looked at on
    /// every operation a fault could hit (a `stat`: these are tests, not production).
    pub fn armed_while(mut self, trigger: impl Into<std::path::PathBuf>) -> FaultyStorage {
        self.armed_while = Some(Arc::new(trigger.into()));
        self
    }

    pub fn inject(&self, fault: Fault) {
        self.faults.lock().expect("faults poisoned").inject(fault);
    }

    pub fn clear_faults(&self) {
        self.faults.lock().expect("faults poisoned").clear();
    }

    fn check(&self, op: FaultOp, path: &Path) -> io::Result<()> {
        loop {
            if let Some(trigger) = &self.armed_while {
                // The trigger is a file of the test's, on the real file system; an error
                // other than "not found" (a permission) keeps the faults armed.
                if matches!(std::fs::symlink_metadata(trigger.as_path()), Err(e) if e.kind() == io::ErrorKind::NotFound)
                {
                    return Ok(());
                }
            }
            match self.faults.lock().expect("faults poisoned").check(op, path) {
                // A stall: look again until the fault is disarmed (without a trigger,
                // for good: the operation hangs, as on a disk that stopped answering).
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                other => return other,
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

impl Storage for FaultyStorage {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        FileStorage.create_dir_all(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        FileStorage.exists(path)
    }
    fn create_zeroed(&self, path: &Path, len: u64) -> io::Result<()> {
        self.check(FaultOp::Create, path)?;
        self.check(FaultOp::Write, path)?;
        FileStorage.create_zeroed(path, len)
    }
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.check(FaultOp::Create, path)?;
        let inner = FileStorage.create(path)?;
        Ok(Box::new(FaultyFile { inner, faults: self.clone(), path: path.to_path_buf() }))
    }
    fn open(&self, path: &Path, mode: FileMode) -> io::Result<Box<dyn StorageFile>> {
        let inner = FileStorage.open(path, mode)?;
        Ok(Box::new(FaultyFile { inner, faults: self.clone(), path: path.to_path_buf() }))
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.check(FaultOp::Remove, path)?;
        FileStorage.remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.check(FaultOp::Rename, to)?;
        FileStorage.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.check(FaultOp::SyncDir, dir)?;
        FileStorage.sync_dir(dir)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        FileStorage.list_dir(dir)
    }
    fn modified(&self, path: &Path) -> io::Result<SystemTime> {
        FileStorage.modified(path)
    }
    fn lock_dir(&self, dir: &Path) -> Result<DirLock, DirLockError> {
        FileStorage.lock_dir(dir)
    }
}

struct FaultyFile {
    inner: Box<dyn StorageFile>,
    faults: FaultyStorage,
    path: std::path::PathBuf,
}

impl StorageFile for FaultyFile {
    fn size(&self) -> io::Result<u64> {
        self.inner.size()
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
        self.faults.check(FaultOp::Write, &self.path)?;
        self.inner.write_at(bufs, offset)
    }
    fn sync(&self) -> io::Result<()> {
        self.faults.check(FaultOp::Sync, &self.path)?;
        self.inner.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_specs_read_names_and_numbers() {
        let faults = parse_faults("sync:redo01:3:EIO, write::0:28").unwrap();
        assert_eq!(
            faults,
            vec![
                Fault { op: FaultOp::Sync, path_contains: "redo01".into(), skip: 3, errno: libc::EIO },
                Fault { op: FaultOp::Write, path_contains: String::new(), skip: 0, errno: libc::ENOSPC },
            ]
        );
        assert!(parse_faults("").unwrap().is_empty());
    }

    #[test]
    fn bad_fault_specs_say_what_is_wrong() {
        for (spec, problem) in [
            ("sync:redo", "four fields"),
            ("fsync:x:0:EIO", "unknown operation"),
            ("sync:x:many:EIO", "not a count"),
            ("sync:x:0:EWHAT", "neither a known name"),
        ] {
            let e = parse_faults(spec).unwrap_err().to_string();
            assert!(e.contains(problem), "{spec}: {e}");
        }
    }

    #[test]
    fn a_fault_lets_skip_operations_through_then_fails_every_later_one() {
        let dir = tempfile::tempdir().unwrap();
        let storage = FaultyStorage::new(parse_faults("sync:data:1:ENOSPC").unwrap());
        let f = storage.create(&dir.path().join("data")).unwrap();
        f.write_at(&[b"x"], 0).unwrap();
        f.sync().unwrap();
        assert_eq!(f.sync().unwrap_err().raw_os_error(), Some(libc::ENOSPC));
        assert_eq!(f.sync().unwrap_err().raw_os_error(), Some(libc::ENOSPC));
        storage.clear_faults();
        f.sync().unwrap();
    }

    #[test]
    fn faults_armed_while_a_file_exists_apply_only_then_and_count_only_then() {
        let dir = tempfile::tempdir().unwrap();
        let trigger = dir.path().join("disk-full");
        let storage =
            FaultyStorage::new(parse_faults("create:image-:1:ENOSPC").unwrap()).armed_while(&trigger);
        let image = |n: u32| dir.path().join(format!("image-{n}"));
        // Unarmed: every create passes, and none counts against the skip.
        storage.create(&image(1)).unwrap();
        storage.create(&image(2)).unwrap();
        std::fs::write(&trigger, b"").unwrap();
        storage.create(&image(3)).unwrap();
        assert_eq!(storage.create(&image(4)).err().and_then(|e| e.raw_os_error()), Some(libc::ENOSPC));
        assert_eq!(storage.create(&image(5)).err().and_then(|e| e.raw_os_error()), Some(libc::ENOSPC));
        // Other files are not hit.
        storage.create(&dir.path().join("redo01.log")).unwrap();
        std::fs::remove_file(&trigger).unwrap();
        storage.create(&image(6)).unwrap();
    }

    #[test]
    fn a_stall_holds_the_operation_until_its_trigger_is_gone_then_lets_it_succeed() {
        let dir = tempfile::tempdir().unwrap();
        let trigger = dir.path().join("slow-disk");
        let faults = parse_faults("sync:redo:0:STALL").unwrap();
        assert_eq!(faults[0].errno, STALL);
        let storage = FaultyStorage::new(faults).armed_while(&trigger);
        let f = storage.create(&dir.path().join("redo01.log")).unwrap();
        f.write_at(&[b"x"], 0).unwrap();
        f.sync().unwrap();
        std::fs::write(&trigger, b"").unwrap();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let syncing = std::thread::spawn(move || {
            let result = f.sync();
            done_tx.send(()).unwrap();
            result
        });
        // Held while the trigger exists: no answer within a generous wait.
        assert!(
            done_rx.recv_timeout(std::time::Duration::from_millis(200)).is_err(),
            "the stalled sync returned"
        );
        std::fs::remove_file(&trigger).unwrap();
        done_rx.recv_timeout(std::time::Duration::from_secs(10)).expect("the sync goes on once disarmed");
        syncing.join().unwrap().expect("and succeeds");
    }
}
