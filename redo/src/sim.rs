//! A simulated disk for tests: it keeps what was written apart from what was synced, and
//! at a [`SimStorage::crash`] it keeps the synced bytes, applies a random prefix of the
//! unsynced writes, and tears the next one at a random byte. Faults can be injected: a
//! failing sync (after which, as on Linux, the unsynced writes are dropped even though
//! reads still show them), a failing write, a full disk (ENOSPC).
//!
//! `O_DIRECT` opens check alignment like the kernel does (EINVAL), so alignment bugs in
//! the log writer show up in simulation. `O_DSYNC` opens make each write durable.
//!
//! Every random choice comes from the seed given to `crash`, so a failing test can print
//! its seed and be replayed (thread interleavings aside).

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::config::SyncMethod;
use crate::format::BLOCK_BYTES;
use crate::storage::{FileMode, Storage, StorageFile};

/// Which operation a fault hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultOp {
    Write,
    Sync,
}

/// A fault: the `skip`+1-th matching operation, and every later one, fails with `errno`.
#[derive(Clone, Debug)]
pub struct Fault {
    pub op: FaultOp,
    /// Only files whose path contains this string; empty for all files.
    pub path_contains: String,
    pub skip: u64,
    pub errno: i32,
}

#[derive(Default)]
struct SimFile {
    /// What survives a crash.
    durable: Vec<u8>,
    /// What reads return.
    current: Vec<u8>,
    /// Writes since the last sync, in order.
    pending: Vec<(u64, Vec<u8>)>,
}

#[derive(Default)]
struct SimState {
    files: BTreeMap<PathBuf, SimFile>,
    dirs: BTreeSet<PathBuf>,
    faults: Vec<(Fault, u64)>,
    crashed: bool,
    /// Mutating operations left before the disk dies (`die_after`).
    ops_left: Option<u64>,
    writes: u64,
    syncs: u64,
}

impl SimState {
    /// Admits one mutating operation, or fails it: after a crash, and from the moment the
    /// disk dies (`SimStorage::die_after`), nothing more reaches it.
    fn admit(&mut self) -> io::Result<()> {
        if let Some(left) = self.ops_left.as_mut() {
            if *left == 0 {
                self.crashed = true;
            } else {
                *left -= 1;
            }
        }
        if self.crashed {
            return Err(crashed_error());
        }
        Ok(())
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
}

fn crashed_error() -> io::Error {
    io::Error::other("simulated disk has crashed")
}

impl SimStorage {
    pub fn new() -> SimStorage {
        SimStorage::default()
    }

    fn lock(&self) -> MutexGuard<'_, SimState> {
        self.state.lock().expect("sim state poisoned")
    }

    pub fn inject(&self, fault: Fault) {
        self.lock().faults.push((fault, 0));
    }

    pub fn clear_faults(&self) {
        self.lock().faults.clear();
    }

    /// Counts of write requests and syncs seen so far.
    pub fn op_counts(&self) -> (u64, u64) {
        let s = self.lock();
        (s.writes, s.syncs)
    }

    /// Lets `ops` more mutating operations (create, write, sync, rename, remove) through,
    /// then fails every later one, as if the process died there: nothing it would do next,
    /// not even cleaning up after the failure, reaches the disk. `crash` then gives what
    /// survived.
    pub fn die_after(&self, ops: u64) {
        self.lock().ops_left = Some(ops);
    }

    /// Simulates a power loss. This disk fails every later operation (the process that
    /// used it is "dead"); the returned disk holds what survived.
    pub fn crash(&self, seed: u64) -> SimStorage {
        let mut rng = SimRng::new(seed);
        let mut state = self.lock();
        state.crashed = true;
        let mut survivor = SimState { dirs: state.dirs.clone(), ..SimState::default() };
        for (path, file) in state.files.iter() {
            let mut image = file.durable.clone();
            let n = file.pending.len() as u64;
            let applied = rng.upto(n);
            for (i, (offset, data)) in file.pending.iter().enumerate() {
                let i = i as u64;
                if i < applied {
                    apply(&mut image, *offset, data);
                } else if i == applied {
                    let keep = rng.upto(data.len() as u64) as usize;
                    apply(&mut image, *offset, &data[..keep]);
                    break;
                }
            }
            survivor.files.insert(
                path.clone(),
                SimFile { durable: image.clone(), current: image, pending: Vec::new() },
            );
        }
        SimStorage { state: Arc::new(Mutex::new(survivor)) }
    }

    /// Flips one bit of the durable (and current) content of a file.
    pub fn flip_bit(&self, path: &Path, offset: u64, bit: u8) {
        let mut state = self.lock();
        let file = state.files.get_mut(path).expect("flip_bit: no such file");
        file.durable[offset as usize] ^= 1 << bit;
        file.current[offset as usize] ^= 1 << bit;
    }

    /// Reads the durable content of a file (what a crash now would keep, minus pending).
    pub fn durable_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        self.lock().files.get(path).map(|f| f.durable.clone())
    }

    pub fn paths(&self) -> Vec<PathBuf> {
        self.lock().files.keys().cloned().collect()
    }
}

fn apply(image: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let end = offset as usize + data.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[offset as usize..end].copy_from_slice(data);
}

fn check_fault(state: &mut SimState, op: FaultOp, path: &Path) -> io::Result<()> {
    let p = path.to_string_lossy();
    for (fault, seen) in state.faults.iter_mut() {
        if fault.op == op && p.contains(fault.path_contains.as_str()) {
            if *seen >= fault.skip {
                return Err(io::Error::from_raw_os_error(fault.errno));
            }
            *seen += 1;
        }
    }
    Ok(())
}

impl Storage for SimStorage {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.admit()?;
        state.dirs.insert(dir.to_path_buf());
        Ok(())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let state = self.lock();
        Ok(state.files.contains_key(path) || state.dirs.contains(path))
    }

    fn create_zeroed(&self, path: &Path, len: u64) -> io::Result<()> {
        let mut state = self.lock();
        state.admit()?;
        if state.files.contains_key(path) {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        check_fault(&mut state, FaultOp::Write, path)?;
        let zeros = vec![0u8; len as usize];
        state.files.insert(
            path.to_path_buf(),
            SimFile { durable: zeros.clone(), current: zeros, pending: Vec::new() },
        );
        Ok(())
    }

    fn open(&self, path: &Path, mode: FileMode) -> io::Result<Box<dyn StorageFile>> {
        let state = self.lock();
        if state.crashed {
            return Err(crashed_error());
        }
        if !state.files.contains_key(path) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        Ok(Box::new(SimFileHandle { disk: self.clone(), path: path.to_path_buf(), mode }))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.admit()?;
        state.files.remove(path).map(|_| ()).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.admit()?;
        if state.files.contains_key(to) {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        // The rename and its directory sync are one durable step here: a crash keeps the
        // file's durable content under its new name.
        let file = state.files.remove(from).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        state.files.insert(to.to_path_buf(), file);
        Ok(())
    }
}

struct SimFileHandle {
    disk: SimStorage,
    path: PathBuf,
    mode: FileMode,
}

impl SimFileHandle {
    fn direct(&self) -> bool {
        self.mode == FileMode::Log(SyncMethod::DirectDsync)
    }
    fn sync_on_write(&self) -> bool {
        matches!(self.mode, FileMode::Log(SyncMethod::Dsync) | FileMode::Log(SyncMethod::DirectDsync))
    }
}

impl StorageFile for SimFileHandle {
    fn size(&self) -> io::Result<u64> {
        let state = self.disk.lock();
        if state.crashed {
            return Err(crashed_error());
        }
        Ok(state.files.get(&self.path).map(|f| f.current.len() as u64).unwrap_or(0))
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let state = self.disk.lock();
        if state.crashed {
            return Err(crashed_error());
        }
        let file = state.files.get(&self.path).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        let end = offset as usize + buf.len();
        if end > file.current.len() {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        buf.copy_from_slice(&file.current[offset as usize..end]);
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
        state.admit()?;
        check_fault(&mut state, FaultOp::Write, &self.path)?;
        state.writes += 1;
        let durable_now = self.sync_on_write();
        let file = state.files.get_mut(&self.path).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        if offset as usize + data.len() > file.current.len() {
            // Log files are preallocated; growing one is a bug the sim reports as ENOSPC.
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        apply(&mut file.current, offset, &data);
        if durable_now {
            apply(&mut file.durable, offset, &data);
        } else {
            file.pending.push((offset, data));
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        let mut state = self.disk.lock();
        state.admit()?;
        if let Err(e) = check_fault(&mut state, FaultOp::Sync, &self.path) {
            // Linux marks the pages clean after a failed writeback: the data is lost for
            // a crash even though reads still return it.
            if let Some(file) = state.files.get_mut(&self.path) {
                file.pending.clear();
            }
            return Err(e);
        }
        state.syncs += 1;
        let file = state.files.get_mut(&self.path).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        for (offset, data) in std::mem::take(&mut file.pending) {
            apply(&mut file.durable, offset, &data);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_keeps_synced_bytes_and_drops_or_tears_the_rest() {
        let disk = SimStorage::new();
        let p = Path::new("/db/f");
        disk.create_zeroed(p, 100).unwrap();
        let f = disk.open(p, FileMode::Log(SyncMethod::Fdatasync)).unwrap();
        f.write_at(&[b"aaaa"], 0).unwrap();
        f.sync().unwrap();
        f.write_at(&[b"bbbb"], 10).unwrap();
        let mut saw_none = false;
        let mut saw_torn = false;
        for seed in 0..200 {
            let after = disk.crash(seed);
            let bytes = after.durable_bytes(p).unwrap();
            assert_eq!(&bytes[0..4], b"aaaa", "synced bytes survive (seed {seed})");
            let tail = &bytes[10..14];
            saw_none |= tail == [0, 0, 0, 0];
            saw_torn |= tail[0] == b'b' && tail[3] == 0;
            assert!(tail.iter().zip(b"bbbb").all(|(a, b)| *a == 0 || a == b));
        }
        assert!(saw_none && saw_torn);
        assert!(f.write_at(&[b"x"], 0).is_err(), "a crashed disk refuses further I/O");
    }

    #[test]
    fn failed_sync_loses_pending_writes_even_if_a_retry_succeeds() {
        let disk = SimStorage::new();
        let p = Path::new("/db/f");
        disk.create_zeroed(p, 16).unwrap();
        disk.inject(Fault { op: FaultOp::Sync, path_contains: String::new(), skip: 0, errno: libc::EIO });
        let f = disk.open(p, FileMode::Log(SyncMethod::Fdatasync)).unwrap();
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
        disk.create_zeroed(p, 8192).unwrap();
        let f = disk.open(p, FileMode::Log(SyncMethod::DirectDsync)).unwrap();
        assert_eq!(f.write_at(&[b"abc"], 0).unwrap_err().raw_os_error(), Some(libc::EINVAL));
    }
}
