//! A simulated disk for tests, modelling what real file systems do on power loss:
//!
//! - **Data.** Each file keeps what was written apart from what was synced. At a
//!   [`SimStorage::crash`], the synced bytes survive, and each write since the file's last
//!   sync independently survives whole, is lost, or is torn: any subset of its
//!   [`SECTOR_BYTES`] sectors reaches the disk (so not only a suffix of the writes may be
//!   lost, and a torn write need not be a prefix). A failing sync drops the unsynced writes
//!   for a crash even though reads still show them, as Linux does after a failed
//!   writeback. `O_DSYNC` opens make each write durable when it returns.
//! - **Names.** A name created, renamed or removed is durable only once its directory was
//!   synced ([`Storage::sync_dir`]): at a crash, each such change since the directory's
//!   last sync independently survives or not (applied in order, a rename atomically).
//!   `create_zeroed` and `create_dir_all` are durable when they return, as the
//!   [`Storage`] contract says.
//! - **Death.** [`SimStorage::die_after`] lets a number of mutating operations through and
//!   fails the rest, as if the process died there; the write it dies in may still be
//!   partly on the disk.
//!
//! Faults ([`Fault`]) make chosen operations fail with an errno: a failing sync or write,
//! a full disk (ENOSPC), a failing rename or directory sync. `O_DIRECT` opens check
//! alignment like the kernel does (EINVAL), so alignment bugs in the log writer show up in
//! simulation. Log and control files are preallocated: a write past their end is a bug,
//! reported as ENOSPC.
//!
//! Everything is in ordered maps and every random choice comes from the seed given to
//! `crash`, so one seed and one sequence of operations give one outcome.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use crate::config::SyncMethod;
use crate::fault::FaultSet;
pub use crate::fault::{Fault, FaultOp};
use crate::format::BLOCK_BYTES;
use crate::storage::{parent_dir, DirLock, DirLockError, FileMode, Storage, StorageFile};

/// The unit a torn write is made of: the disk's logical sector (this VM's virtual disk
/// reports 512 logical and 4096 physical bytes; the simulation takes the smaller).
pub const SECTOR_BYTES: u64 = 512;

/// A file's contents, whatever names it has.
#[derive(Default, Clone)]
struct Inode {
    /// What survives a crash for sure.
    durable: Vec<u8>,
    /// What reads return.
    current: Vec<u8>,
    /// Writes since the last sync, in order.
    pending: Vec<(u64, Vec<u8>)>,
    /// The logical time of the last change.
    modified: u64,
}

/// A change of a directory's names not yet made durable.
#[derive(Clone, Debug)]
enum NameOp {
    Link { name: PathBuf, inode: u64 },
    Unlink { name: PathBuf, inode: u64 },
    Rename { from: PathBuf, to: PathBuf, inode: u64 },
}

impl NameOp {
    /// Applies the change to `names` if it still makes sense there (a subset of changes
    /// survives a crash, so an earlier one it builds on may be missing).
    fn apply(&self, names: &mut BTreeMap<PathBuf, u64>) {
        match self {
            NameOp::Link { name, inode } => {
                names.entry(name.clone()).or_insert(*inode);
            }
            NameOp::Unlink { name, inode } => {
                if names.get(name) == Some(inode) {
                    names.remove(name);
                }
            }
            NameOp::Rename { from, to, inode } => {
                if names.get(from) == Some(inode) && !names.contains_key(to) {
                    names.remove(from);
                    names.insert(to.clone(), *inode);
                }
            }
        }
    }
}

#[derive(Default)]
struct SimState {
    inodes: BTreeMap<u64, Inode>,
    next_inode: u64,
    /// The names reads see.
    names: BTreeMap<PathBuf, u64>,
    /// The names a crash keeps for sure.
    durable_names: BTreeMap<PathBuf, u64>,
    /// Per directory, its name changes since its last sync.
    pending_names: BTreeMap<PathBuf, Vec<NameOp>>,
    dirs: BTreeSet<PathBuf>,
    locked: BTreeSet<PathBuf>,
    faults: FaultSet,
    crashed: bool,
    /// Mutating operations left before the disk dies (`die_after`).
    ops_left: Option<u64>,
    writes: u64,
    syncs: u64,
    /// Logical time: one tick per mutating operation.
    clock: u64,
    /// The mutating operations and their outcomes, when recording (`SimStorage::record`).
    recorded: Option<Vec<String>>,
}

impl SimState {
    /// Admits one mutating operation, or fails it: after a crash, and from the moment the
    /// disk dies (`SimStorage::die_after`), nothing more reaches it.
    fn admit(&mut self) -> io::Result<()> {
        if self.dies_now() {
            self.crashed = true;
        }
        if let Some(left) = self.ops_left.as_mut() {
            *left = left.saturating_sub(1);
        }
        if self.crashed {
            return Err(crashed_error());
        }
        self.clock += 1;
        Ok(())
    }

    /// Whether the next mutating operation is the one the disk dies in.
    fn dies_now(&self) -> bool {
        !self.crashed && self.ops_left == Some(0)
    }

    fn new_inode(&mut self, inode: Inode) -> u64 {
        self.next_inode += 1;
        self.inodes.insert(self.next_inode, inode);
        self.next_inode
    }

    fn inode_of(&self, path: &Path) -> io::Result<u64> {
        self.names.get(path).copied().ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    fn check_dir_of(&self, path: &Path) -> io::Result<()> {
        if self.dirs.contains(parent_dir(path)) {
            Ok(())
        } else {
            Err(io::Error::from(io::ErrorKind::NotFound))
        }
    }

    fn note(&mut self, what: impl FnOnce() -> String) {
        if let Some(recorded) = self.recorded.as_mut() {
            recorded.push(what());
        }
    }

    fn pend_name(&mut self, path: &Path, op: NameOp) {
        self.pending_names.entry(parent_dir(path).to_path_buf()).or_default().push(op);
    }
}

/// The simulated disk. Clones share the same disk.
#[derive(Clone, Default)]
pub struct SimStorage {
    state: Arc<Mutex<SimState>>,
}

/// Small deterministic generator (splitmix64) so the crash model needs no dependency.
pub struct SimRng(u64);

impl SimRng {
    pub fn new(seed: u64) -> SimRng {
        SimRng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..=max.
    pub fn upto(&mut self, max: u64) -> u64 {
        if max == u64::MAX {
            return self.next_u64();
        }
        self.next_u64() % (max + 1)
    }
    /// True with probability `numerator / denominator`.
    pub fn chance(&mut self, numerator: u64, denominator: u64) -> bool {
        self.next_u64() % denominator < numerator
    }
}

fn crashed_error() -> io::Error {
    io::Error::other("simulated disk has crashed")
}

/// What of one unsynced write a crash keeps.
fn surviving_parts(rng: &mut SimRng, offset: u64, data: &[u8]) -> Vec<(u64, std::ops::Range<usize>)> {
    match rng.upto(2) {
        0 => vec![(offset, 0..data.len())],
        1 => Vec::new(),
        _ => {
            // Torn: each sector the write touches independently made it or not.
            let mut parts = Vec::new();
            let mut at = 0usize;
            while at < data.len() {
                let pos = offset + at as u64;
                let sector_end = (pos / SECTOR_BYTES + 1) * SECTOR_BYTES;
                let len = ((sector_end - pos) as usize).min(data.len() - at);
                if rng.chance(1, 2) {
                    parts.push((pos, at..at + len));
                }
                at += len;
            }
            parts
        }
    }
}

impl SimStorage {
    pub fn new() -> SimStorage {
        SimStorage::default()
    }

    fn lock(&self) -> MutexGuard<'_, SimState> {
        self.state.lock().expect("sim state poisoned")
    }

    pub fn inject(&self, fault: Fault) {
        self.lock().faults.inject(fault);
    }

    pub fn clear_faults(&self) {
        self.lock().faults.clear();
    }

    /// Counts of write requests and syncs seen so far.
    pub fn op_counts(&self) -> (u64, u64) {
        let s = self.lock();
        (s.writes, s.syncs)
    }

    /// Lets `ops` more mutating operations (create, write, sync, rename, remove, directory
    /// sync) through, then fails every later one, as if the process died there: nothing it
    /// would do next, not even cleaning up after the failure, reaches the disk. A write the
    /// disk dies in may be partly on it. `crash` then gives what survived.
    pub fn die_after(&self, ops: u64) {
        self.lock().ops_left = Some(ops);
    }

    /// Starts recording every mutating operation and its outcome (for a failing test's
    /// trace; see `take_recorded`).
    pub fn record(&self) {
        self.lock().recorded.get_or_insert_with(Vec::new);
    }

    /// The operations recorded since the last call.
    pub fn take_recorded(&self) -> Vec<String> {
        self.lock().recorded.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Whether the disk has died or crashed (nothing more reaches it).
    pub fn is_dead(&self) -> bool {
        self.lock().crashed
    }

    /// Simulates a power loss. This disk fails every later operation (the process that
    /// used it is "dead"); the returned disk holds what survived (see the module docs).
    pub fn crash(&self, seed: u64) -> SimStorage {
        let mut rng = SimRng::new(seed);
        let mut state = self.lock();
        state.crashed = true;
        let mut names = state.durable_names.clone();
        for ops in state.pending_names.values() {
            for op in ops {
                if rng.chance(1, 2) {
                    op.apply(&mut names);
                }
            }
        }
        let mut survivor = SimState {
            dirs: state.dirs.clone(),
            next_inode: state.next_inode,
            clock: state.clock,
            ..SimState::default()
        };
        let live: BTreeSet<u64> = names.values().copied().collect();
        for id in live {
            let inode = &state.inodes[&id];
            let mut image = inode.durable.clone();
            for (offset, data) in &inode.pending {
                for (at, range) in surviving_parts(&mut rng, *offset, data) {
                    apply(&mut image, at, &data[range]);
                }
            }
            survivor.inodes.insert(
                id,
                Inode {
                    durable: image.clone(),
                    current: image,
                    pending: Vec::new(),
                    modified: inode.modified,
                },
            );
        }
        survivor.durable_names = names.clone();
        survivor.names = names;
        SimStorage { state: Arc::new(Mutex::new(survivor)) }
    }

    /// Flips one bit of the durable (and current) content of a file.
    pub fn flip_bit(&self, path: &Path, offset: u64, bit: u8) {
        let mut state = self.lock();
        let id = state.inode_of(path).expect("flip_bit: no such file");
        let inode = state.inodes.get_mut(&id).expect("a named inode exists");
        inode.durable[offset as usize] ^= 1 << bit;
        inode.current[offset as usize] ^= 1 << bit;
    }

    /// Reads the durable content of a file (what a crash now would keep, minus pending).
    pub fn durable_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.lock();
        let id = state.names.get(path)?;
        Some(state.inodes[id].durable.clone())
    }

    /// The files' paths, as reads see them.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.lock().names.keys().cloned().collect()
    }
}

fn apply(image: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let end = offset as usize + data.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[offset as usize..end].copy_from_slice(data);
}

impl Storage for SimStorage {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.admit()?;
        let mut at = Some(dir);
        while let Some(d) = at.filter(|d| !d.as_os_str().is_empty()) {
            if state.names.contains_key(d) {
                return Err(io::Error::from(io::ErrorKind::AlreadyExists));
            }
            state.dirs.insert(d.to_path_buf());
            at = d.parent();
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let state = self.lock();
        Ok(state.names.contains_key(path) || state.dirs.contains(path))
    }

    fn create_zeroed(&self, path: &Path, len: u64) -> io::Result<()> {
        let mut state = self.lock();
        state.admit()?;
        state.check_dir_of(path)?;
        if state.names.contains_key(path) {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        state.faults.check(FaultOp::Create, path)?;
        state.faults.check(FaultOp::Write, path)?;
        let zeros = vec![0u8; len as usize];
        let modified = state.clock;
        let id =
            state.new_inode(Inode { durable: zeros.clone(), current: zeros, pending: Vec::new(), modified });
        // Durable when it returns: the file and its directory were synced.
        state.names.insert(path.to_path_buf(), id);
        state.durable_names.insert(path.to_path_buf(), id);
        Ok(())
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let mut state = self.lock();
        state.admit()?;
        state.check_dir_of(path)?;
        if state.names.contains_key(path) || state.dirs.contains(path) {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        state.faults.check(FaultOp::Create, path)?;
        let modified = state.clock;
        let id = state.new_inode(Inode { modified, ..Inode::default() });
        state.names.insert(path.to_path_buf(), id);
        state.pend_name(path, NameOp::Link { name: path.to_path_buf(), inode: id });
        Ok(Box::new(SimFileHandle {
            disk: self.clone(),
            path: path.to_path_buf(),
            inode: id,
            mode: FileMode::Data,
        }))
    }

    fn open(&self, path: &Path, mode: FileMode) -> io::Result<Box<dyn StorageFile>> {
        let state = self.lock();
        if state.crashed {
            return Err(crashed_error());
        }
        let inode = state.inode_of(path)?;
        Ok(Box::new(SimFileHandle { disk: self.clone(), path: path.to_path_buf(), inode, mode }))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.admit()?;
        let inode = state.inode_of(path)?;
        state.faults.check(FaultOp::Remove, path)?;
        state.names.remove(path);
        state.pend_name(path, NameOp::Unlink { name: path.to_path_buf(), inode });
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.admit()?;
        assert_eq!(parent_dir(from), parent_dir(to), "the simulated disk renames within one directory");
        let inode = state.inode_of(from)?;
        if state.names.contains_key(to) || state.dirs.contains(to) {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        state.faults.check(FaultOp::Rename, to)?;
        state.names.remove(from);
        state.names.insert(to.to_path_buf(), inode);
        state.pend_name(to, NameOp::Rename { from: from.to_path_buf(), to: to.to_path_buf(), inode });
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.admit()?;
        if !state.dirs.contains(dir) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        state.faults.check(FaultOp::SyncDir, dir)?;
        let ops = state.pending_names.remove(dir).unwrap_or_default();
        for op in &ops {
            op.apply(&mut state.durable_names);
        }
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let state = self.lock();
        if state.crashed {
            return Err(crashed_error());
        }
        if !state.dirs.contains(dir) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        let in_dir = |p: &&PathBuf| p.parent() == Some(dir);
        let name = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned());
        Ok(state
            .names
            .keys()
            .filter(in_dir)
            .chain(state.dirs.iter().filter(in_dir))
            .filter_map(name)
            .collect())
    }

    fn modified(&self, path: &Path) -> io::Result<SystemTime> {
        let state = self.lock();
        let id = state.inode_of(path)?;
        Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(state.inodes[&id].modified))
    }

    fn lock_dir(&self, dir: &Path) -> Result<DirLock, DirLockError> {
        let mut state = self.lock();
        if !state.dirs.contains(dir) {
            return Err(DirLockError::Io(io::Error::from(io::ErrorKind::NotFound)));
        }
        if !state.locked.insert(dir.to_path_buf()) {
            return Err(DirLockError::Held { holder_pid: Some(std::process::id()) });
        }
        Ok(Box::new(SimDirLock { disk: self.clone(), dir: dir.to_path_buf() }))
    }
}

/// A held directory lock of the simulated disk.
struct SimDirLock {
    disk: SimStorage,
    dir: PathBuf,
}

impl Drop for SimDirLock {
    fn drop(&mut self) {
        self.disk.lock().locked.remove(&self.dir);
    }
}

struct SimFileHandle {
    disk: SimStorage,
    path: PathBuf,
    inode: u64,
    mode: FileMode,
}

impl SimFileHandle {
    fn direct(&self) -> bool {
        self.mode == FileMode::Log(SyncMethod::DirectDsync)
    }
    fn sync_on_write(&self) -> bool {
        matches!(self.mode, FileMode::Log(SyncMethod::Dsync) | FileMode::Log(SyncMethod::DirectDsync))
    }
    fn inode<'a>(&self, state: &'a mut SimState) -> io::Result<&'a mut Inode> {
        if state.crashed {
            return Err(crashed_error());
        }
        state.inodes.get_mut(&self.inode).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }
}

impl StorageFile for SimFileHandle {
    fn size(&self) -> io::Result<u64> {
        let mut state = self.disk.lock();
        Ok(self.inode(&mut state)?.current.len() as u64)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut state = self.disk.lock();
        let inode = self.inode(&mut state)?;
        let end = offset as usize + buf.len();
        if end > inode.current.len() {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        buf.copy_from_slice(&inode.current[offset as usize..end]);
        Ok(())
    }

    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
        if self.mode == FileMode::Read {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        if self.direct() {
            let aligned = |v: u64| v.is_multiple_of(BLOCK_BYTES);
            // Linux ignores empty iovecs, whatever their (possibly dangling) pointer.
            let bad = !aligned(offset)
                || bufs
                    .iter()
                    .filter(|b| !b.is_empty())
                    .any(|b| !aligned(b.as_ptr() as u64) || !aligned(b.len() as u64));
            if bad {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
        }
        let data: Vec<u8> = bufs.concat();
        let mut state = self.disk.lock();
        let dying = state.dies_now();
        state.admit().inspect_err(|_| {
            if dying {
                // The process dies inside this write: any part of it may reach the disk.
                if let Some(inode) = state.inodes.get_mut(&self.inode) {
                    inode.pending.push((offset, data.clone()));
                }
            }
        })?;
        if let Err(e) = state.faults.check(FaultOp::Write, &self.path) {
            state.note(|| format!("write {} @{offset} +{}: {e}", self.path.display(), data.len()));
            return Err(e);
        }
        state.note(|| format!("write {} @{offset} +{}", self.path.display(), data.len()));
        state.writes += 1;
        let durable_now = self.sync_on_write();
        let growable = self.mode == FileMode::Data;
        let clock = state.clock;
        let inode = self.inode(&mut state)?;
        if !growable && offset as usize + data.len() > inode.current.len() {
            // Log and control files are preallocated; growing one is a bug the sim reports
            // as ENOSPC.
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        apply(&mut inode.current, offset, &data);
        inode.modified = clock;
        if durable_now {
            apply(&mut inode.durable, offset, &data);
        } else {
            inode.pending.push((offset, data));
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        let mut state = self.disk.lock();
        state.admit()?;
        if let Err(e) = state.faults.check(FaultOp::Sync, &self.path) {
            state.note(|| format!("sync {}: {e}", self.path.display()));
            // Linux marks the pages clean after a failed writeback: the data is lost for
            // a crash even though reads still show it.
            if let Some(inode) = state.inodes.get_mut(&self.inode) {
                inode.pending.clear();
            }
            return Err(e);
        }
        state.syncs += 1;
        state.note(|| format!("sync {}", self.path.display()));
        let inode = self.inode(&mut state)?;
        for (offset, data) in std::mem::take(&mut inode.pending) {
            apply(&mut inode.durable, offset, &data);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fdatasync_file(disk: &SimStorage, p: &Path, len: u64) -> Box<dyn StorageFile> {
        disk.create_dir_all(parent_dir(p)).unwrap();
        disk.create_zeroed(p, len).unwrap();
        disk.open(p, FileMode::Log(SyncMethod::Fdatasync)).unwrap()
    }

    #[test]
    fn crash_keeps_synced_bytes_and_keeps_drops_or_tears_each_unsynced_write() {
        let disk = SimStorage::new();
        let p = Path::new("/db/f");
        let f = fdatasync_file(&disk, p, 8192);
        f.write_at(&[b"aaaa"], 0).unwrap();
        f.sync().unwrap();
        // Two unsynced writes: the first spans sectors 1 and 2, the second sector 4.
        f.write_at(&[&[b'b'; 1024]], 512).unwrap();
        f.write_at(&[b"cccc"], 2048).unwrap();
        let (mut saw_second_without_first, mut saw_torn) = (false, false);
        for seed in 0..400 {
            let bytes = disk.crash(seed).durable_bytes(p).unwrap();
            assert_eq!(&bytes[0..4], b"aaaa", "synced bytes survive (seed {seed})");
            let (s1, s2) = (&bytes[512..1024], &bytes[1024..1536]);
            for sector in [s1, s2] {
                assert!(
                    sector.iter().all(|&b| b == 0) || sector.iter().all(|&b| b == b'b'),
                    "sectors are atomic"
                );
            }
            let first_none = s1[0] == 0 && s2[0] == 0;
            saw_second_without_first |= first_none && &bytes[2048..2052] == b"cccc";
            saw_torn |= s1[0] != s2[0];
        }
        assert!(saw_second_without_first, "a later write can survive an earlier one");
        assert!(saw_torn, "a write can be torn at a sector boundary");
        assert!(f.write_at(&[b"x"], 0).is_err(), "a crashed disk refuses further I/O");
    }

    #[test]
    fn failed_sync_loses_pending_writes_even_if_a_retry_succeeds() {
        let disk = SimStorage::new();
        let p = Path::new("/db/f");
        disk.inject(Fault { op: FaultOp::Sync, path_contains: String::new(), skip: 0, errno: libc::EIO });
        let f = fdatasync_file(&disk, p, 16);
        f.write_at(&[b"data"], 0).unwrap();
        assert_eq!(f.sync().unwrap_err().raw_os_error(), Some(libc::EIO));
        disk.clear_faults();
        f.sync().unwrap();
        assert_eq!(&disk.crash(1).durable_bytes(p).unwrap()[0..4], &[0, 0, 0, 0]);
    }

    #[test]
    fn direct_io_checks_alignment() {
        let disk = SimStorage::new();
        let p = Path::new("/db/f");
        disk.create_dir_all(Path::new("/db")).unwrap();
        disk.create_zeroed(p, 8192).unwrap();
        let f = disk.open(p, FileMode::Log(SyncMethod::DirectDsync)).unwrap();
        assert_eq!(f.write_at(&[b"abc"], 0).unwrap_err().raw_os_error(), Some(libc::EINVAL));
    }

    #[test]
    fn a_name_is_durable_only_once_its_directory_is_synced() {
        let disk = SimStorage::new();
        let dir = Path::new("/db");
        disk.create_dir_all(dir).unwrap();
        let (tmp, fin) = (dir.join("x.tmp"), dir.join("x"));
        let f = disk.create(&tmp).unwrap();
        f.write_at(&[b"whole"], 0).unwrap();
        f.sync().unwrap();
        disk.rename(&tmp, &fin).unwrap();
        let mut outcomes = BTreeSet::new();
        for seed in 0..200 {
            let after = disk.crash(seed);
            let names = after.paths();
            assert!(names.len() <= 1, "a rename is atomic: {names:?}");
            if let Some(name) = names.first() {
                assert_eq!(after.durable_bytes(name).unwrap(), b"whole", "the data was synced");
            }
            outcomes.insert(names);
        }
        assert_eq!(outcomes.len(), 3, "nothing, the old name or the new one: {outcomes:?}");
        disk.sync_dir(dir).unwrap_err(); // the disk crashed above: no more operations
        let disk = SimStorage::new();
        disk.create_dir_all(dir).unwrap();
        let f = disk.create(&tmp).unwrap();
        f.write_at(&[b"whole"], 0).unwrap();
        f.sync().unwrap();
        disk.rename(&tmp, &fin).unwrap();
        disk.sync_dir(dir).unwrap();
        disk.remove_file(&fin).unwrap();
        for seed in 0..50 {
            let names = disk.crash(seed).paths();
            assert!(names.is_empty() || names == [fin.clone()], "{names:?}");
        }
    }

    #[test]
    fn the_write_a_disk_dies_in_may_be_partly_on_it() {
        let mut saw_part = false;
        for seed in 0..100 {
            let disk = SimStorage::new();
            let p = Path::new("/db/f");
            let f = fdatasync_file(&disk, p, 4096);
            disk.die_after(0);
            assert!(f.write_at(&[&[7u8; 4096]], 0).is_err());
            assert!(disk.is_dead());
            let bytes = disk.crash(seed).durable_bytes(p).unwrap();
            saw_part |= bytes.contains(&7) && bytes.contains(&0);
        }
        assert!(saw_part);
    }

    #[test]
    fn one_seed_gives_one_outcome() {
        let build = || {
            let disk = SimStorage::new();
            let p = Path::new("/db/f");
            let f = fdatasync_file(&disk, p, 8192);
            for i in 0..8u8 {
                f.write_at(&[&[i + 1; 700]], u64::from(i) * 700).unwrap();
            }
            (disk, p)
        };
        for seed in 0..20 {
            let (a, p) = build();
            let (b, _) = build();
            assert_eq!(a.crash(seed).durable_bytes(p), b.crash(seed).durable_bytes(p), "seed {seed}");
        }
    }
}
