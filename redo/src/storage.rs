//! The I/O boundary of the database: a [`Storage`] that creates, opens, names and lists
//! files, and the [`StorageFile`] operations on them (positioned vectored write, data
//! sync, positioned read). Every durable file goes through it: the redo log and the
//! control file here, the checkpoint images and the workload repository's snapshots in the
//! database layer. [`FileStorage`] is the real implementation on the local file system;
//! [`crate::sim::SimStorage`] is the simulated faulty disk of the tests, and
//! [`FaultyStorage`] injects faults into the real one (for tests of whole processes).
//!
//! Contract, as real file systems behave:
//! - `write_at` is ONE write request (one `pwritev`) whatever the number of buffers, so
//!   the log writer can count requests per write truthfully.
//! - `sync` returns only once every byte written to the file before it is durable; under
//!   `O_DSYNC` that already holds after each write and `sync` does nothing. An error from
//!   `sync` means the data may be lost even if a later sync succeeds (the kernel may drop
//!   the dirty pages): callers must never retry and carry on.
//! - A name created, renamed or removed ([`Storage::create`], [`Storage::rename`],
//!   [`Storage::remove_file`]) is durable only once its directory has been synced
//!   ([`Storage::sync_dir`]); until then a power loss may keep the old name, the new one,
//!   or (for a rename) either. [`Storage::create_zeroed`] and [`Storage::create_dir_all`]
//!   are durable when they return.

use std::alloc::{self, Layout};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::time::SystemTime;

use crate::config::SyncMethod;
use crate::format::BLOCK_BYTES;

/// How a file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileMode {
    /// Reads only (recovery), through the page cache.
    Read,
    /// Log file writes with the given sync method. Log files are preallocated: a write
    /// never grows one.
    Log(SyncMethod),
    /// The control file: small writes followed by `sync`, never growing it.
    Control,
    /// A data file (checkpoint image, snapshot): written from the start, growing as it is
    /// written, then synced.
    Data,
}

/// Why the exclusive lock on a database directory was not taken.
#[derive(Debug)]
pub enum DirLockError {
    /// Another holder (process or, in this process, another open database) has it.
    Held {
        holder_pid: Option<u32>,
    },
    Io(io::Error),
}

/// A held directory lock: released when dropped.
pub type DirLock = Box<dyn Send + Sync>;

pub trait Storage: Send + Sync + 'static {
    /// Creates `dir` and its missing parents, durably.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Creates `path` (which must not exist) holding `len` zero bytes that are really
    /// written, not a sparse hole, so later syncs of data need no metadata update; syncs the
    /// file and its directory.
    fn create_zeroed(&self, path: &Path, len: u64) -> io::Result<()>;
    /// Creates an empty file at `path` (which must not exist), open as [`FileMode::Data`].
    /// Its name is durable once its directory is synced.
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>>;
    fn open(&self, path: &Path, mode: FileMode) -> io::Result<Box<dyn StorageFile>>;
    /// Removes a file's name (durable once its directory is synced).
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Renames `from` to `to` in the same directory, atomically and replacing nothing (`to`
    /// must not exist: AlreadyExists). Durable once the directory is synced.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes the names created, renamed and removed in `dir` so far durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// The names of the entries of `dir` (files and directories), in no particular order.
    /// NotFound if `dir` does not exist.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// When `path` was last modified.
    fn modified(&self, path: &Path) -> io::Result<SystemTime>;
    /// Takes the exclusive lock on the directory `dir` (which exists), held until the
    /// returned guard is dropped: one open database per directory.
    fn lock_dir(&self, dir: &Path) -> Result<DirLock, DirLockError>;
}

pub trait StorageFile: Send + Sync {
    /// Size of the file in bytes.
    fn size(&self) -> io::Result<u64>;
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of `bufs`, back to back, at `offset`, as one request.
    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()>;
    fn sync(&self) -> io::Result<()>;
}

/// Reads the whole of a file.
pub fn read_whole(storage: &dyn Storage, path: &Path) -> io::Result<Vec<u8>> {
    let file = storage.open(path, FileMode::Read)?;
    let len = usize::try_from(file.size()?).map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
    let mut bytes = vec![0u8; len];
    file.read_exact_at(&mut bytes, 0)?;
    Ok(bytes)
}

/// An [`io::Write`] appending to a [`StorageFile`] from offset 0, in requests of the
/// caller's buffer size (wrap it in a `BufWriter`).
pub struct FileWriter<'a> {
    file: &'a dyn StorageFile,
    offset: u64,
}

impl<'a> FileWriter<'a> {
    pub fn new(file: &'a dyn StorageFile) -> FileWriter<'a> {
        FileWriter { file, offset: 0 }
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.offset
    }
}

impl io::Write for FileWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write_at(&[buf], self.offset)?;
        self.offset += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The parent directory of a file path (`.` for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The local file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileStorage;

struct RealFile {
    file: File,
    sync_on_write: bool,
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The lock file in a database directory: `flock`ed while a database is open, holding the
/// holder's pid for people and error messages (the lock is what excludes).
pub const LOCK_FILE: &str = "redodb.lock";

impl Storage for FileStorage {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        // Each directory created is made durable in its parent, top down.
        let mut missing = Vec::new();
        let mut at = Some(dir);
        while let Some(d) = at {
            if d.as_os_str().is_empty() || d.try_exists()? {
                break;
            }
            missing.push(d);
            at = d.parent();
        }
        fs::create_dir_all(dir)?;
        for d in missing.iter().rev() {
            sync_dir(parent_dir(d))?;
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    fn create_zeroed(&self, path: &Path, len: u64) -> io::Result<()> {
        let file = OpenOptions::new().write(true).create_new(true).open(path)?;
        let result = (|| {
            let chunk = vec![0u8; 1 << 20];
            let mut offset = 0u64;
            while offset < len {
                let n = (len - offset).min(chunk.len() as u64) as usize;
                file.write_all_at(&chunk[..n], offset)?;
                offset += n as u64;
            }
            file.sync_all()
        })();
        if let Err(e) = result {
            // Leave no half-made file behind to be mistaken for a log file later.
            let _ = fs::remove_file(path);
            return Err(e);
        }
        sync_dir(parent_dir(path))
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(path)?;
        Ok(Box::new(RealFile { file, sync_on_write: false }))
    }

    fn open(&self, path: &Path, mode: FileMode) -> io::Result<Box<dyn StorageFile>> {
        let mut options = OpenOptions::new();
        options.read(true);
        let mut sync_on_write = false;
        match mode {
            FileMode::Read => {}
            FileMode::Control | FileMode::Data | FileMode::Log(SyncMethod::Fdatasync) => {
                options.write(true);
            }
            FileMode::Log(SyncMethod::Dsync) => {
                options.write(true).custom_flags(libc::O_DSYNC);
                sync_on_write = true;
            }
            FileMode::Log(SyncMethod::DirectDsync) => {
                options.write(true).custom_flags(libc::O_DSYNC | libc::O_DIRECT);
                sync_on_write = true;
            }
        }
        let file = options.open(path)?;
        Ok(Box::new(RealFile { file, sync_on_write }))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| {
            CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
        };
        let (cfrom, cto) = (c(from)?, c(to)?);
        // SAFETY: both are valid NUL-terminated paths for the duration of the call.
        let rc = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                cfrom.as_ptr(),
                libc::AT_FDCWD,
                cto.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINVAL) && err.raw_os_error() != Some(libc::ENOSYS) {
            return Err(err);
        }
        // A file system without RENAME_NOREPLACE: the directory lock keeps other
        // processes of this database out, so a check then a rename is enough.
        if to.try_exists()? {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        fs::rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        sync_dir(dir)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    }

    fn modified(&self, path: &Path) -> io::Result<SystemTime> {
        fs::metadata(path)?.modified()
    }

    fn lock_dir(&self, dir: &Path) -> Result<DirLock, DirLockError> {
        use std::io::{Read, Seek, Write};
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(DirLockError::Io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                // The holder writes its pid right after locking: it may not be there yet.
                let mut text = String::new();
                let holder_pid = file.read_to_string(&mut text).ok().and_then(|_| text.trim().parse().ok());
                return Err(DirLockError::Held { holder_pid });
            }
            Err(fs::TryLockError::Error(e)) => return Err(DirLockError::Io(e)),
        }
        file.set_len(0).map_err(DirLockError::Io)?;
        file.rewind().map_err(DirLockError::Io)?;
        writeln!(file, "{}", std::process::id()).map_err(DirLockError::Io)?;
        Ok(Box::new(file))
    }
}

impl StorageFile for RealFile {
    fn size(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
        let mut iov: Vec<libc::iovec> = bufs
            .iter()
            .filter(|b| !b.is_empty())
            .map(|b| libc::iovec { iov_base: b.as_ptr() as *mut libc::c_void, iov_len: b.len() })
            .collect();
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let mut done = 0usize;
        let mut first = 0usize;
        while done < total {
            // SAFETY: every iovec points into a live borrowed slice for the whole call.
            let n = unsafe {
                libc::pwritev(
                    self.file.as_raw_fd(),
                    iov[first..].as_ptr(),
                    (iov.len() - first) as libc::c_int,
                    (offset + done as u64) as libc::off_t,
                )
            };
            if n < 0 {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(err);
            }
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::WriteZero, "pwritev wrote nothing"));
            }
            // A short write continues where it stopped; it is still one logical request.
            let mut n = n as usize;
            done += n;
            while n > 0 {
                let cur = &mut iov[first];
                if n >= cur.iov_len {
                    n -= cur.iov_len;
                    first += 1;
                } else {
                    cur.iov_base = (cur.iov_base as usize + n) as *mut libc::c_void;
                    cur.iov_len -= n;
                    n = 0;
                }
            }
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        if self.sync_on_write {
            return Ok(());
        }
        self.file.sync_data()
    }
}

/// A heap buffer aligned to the block size, as `O_DIRECT` requires.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access hands out only shared slices (see `RingMemory` for the one
// deliberate exception, which documents its own rules).
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    pub fn zeroed(len: usize) -> AlignedBuf {
        assert!(len > 0 && len.is_multiple_of(BLOCK_BYTES as usize), "aligned buffer length {len}");
        let layout = Layout::from_size_align(len, BLOCK_BYTES as usize).expect("valid layout");
        // SAFETY: layout has non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes for the life of self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for len bytes and we hold &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.len, BLOCK_BYTES as usize).expect("valid layout");
        // SAFETY: allocated in `zeroed` with this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) }
    }
}

/// Where the files of a database live.
pub fn control_path(dir: &Path) -> PathBuf {
    dir.join("control.ctl")
}

/// The control file while its database is being created: it exists (durably) before any
/// log file does, and becomes `control.ctl` by a rename once everything is written, so a
/// creation cut short by a crash is recognised, and never mistaken for a database.
pub fn creating_control_path(dir: &Path) -> PathBuf {
    dir.join("control.ctl.creating")
}

/// Log file of member `member` of group `group` (both 0-based) in `dir`.
pub fn log_file_path(dir: &Path, group: u32, member: u32) -> PathBuf {
    dir.join(format!("redo{:02}_{}.log", group + 1, member + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectored_write_lands_contiguously_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        FileStorage.create_zeroed(&path, 3 * 4096).unwrap();
        let f = FileStorage.open(&path, FileMode::Log(SyncMethod::Fdatasync)).unwrap();
        f.write_at(&[b"abc", b"", b"defg"], 10).unwrap();
        f.sync().unwrap();
        let mut buf = [0u8; 9];
        f.read_exact_at(&mut buf, 9).unwrap();
        assert_eq!(&buf, b"\0abcdefg\0");
        assert_eq!(f.size().unwrap(), 3 * 4096);
    }

    #[test]
    fn create_zeroed_refuses_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        FileStorage.create_zeroed(&path, 4096).unwrap();
        assert_eq!(FileStorage.create_zeroed(&path, 4096).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
    }
}
