//! The I/O boundary of the redo log: a [`Storage`] that creates and opens files, and the
//! [`StorageFile`] operations the log needs (positioned vectored write, data sync,
//! positioned read). [`FileStorage`] is the real implementation on the local file system;
//! [`crate::sim::SimStorage`] is the simulated faulty disk used by tests.
//!
//! Contract: `write_at` is ONE write request (one `pwritev`) whatever the number of
//! buffers, so the log writer can count requests per write truthfully. `sync` returns only
//! once every byte written before it is durable; under `O_DSYNC` that already holds after
//! each write and `sync` does nothing. An error from `sync` means the data may be lost
//! even if a later sync succeeds (the kernel may drop the dirty pages): callers must never
//! retry and carry on.

use std::alloc::{self, Layout};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use crate::config::SyncMethod;
use crate::format::BLOCK_BYTES;

/// How a file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileMode {
    /// Reads only (recovery), through the page cache.
    Read,
    /// Log file writes with the given sync method.
    Log(SyncMethod),
    /// The control file: small writes followed by `sync`.
    Control,
}

pub trait Storage: Send + Sync + 'static {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Creates `path` (which must not exist) holding `len` zero bytes that are really
    /// written, not a sparse hole, so later syncs of data need no metadata update; syncs the
    /// file and its directory.
    fn create_zeroed(&self, path: &Path, len: u64) -> io::Result<()>;
    fn open(&self, path: &Path, mode: FileMode) -> io::Result<Box<dyn StorageFile>>;
    /// Removes a file (used only to undo a database creation that failed half way).
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Renames `from` to `to` (replacing nothing: `to` must not exist) atomically, and
    /// makes the rename durable (syncs the directory).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
}

pub trait StorageFile: Send + Sync {
    /// Size of the file in bytes.
    fn size(&self) -> io::Result<u64>;
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of `bufs`, back to back, at `offset`, as one request.
    fn write_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()>;
    fn sync(&self) -> io::Result<()>;
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

impl Storage for FileStorage {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
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
        sync_dir(path.parent().unwrap_or(Path::new(".")))
    }

    fn open(&self, path: &Path, mode: FileMode) -> io::Result<Box<dyn StorageFile>> {
        let mut options = OpenOptions::new();
        options.read(true);
        let mut sync_on_write = false;
        match mode {
            FileMode::Read => {}
            FileMode::Control | FileMode::Log(SyncMethod::Fdatasync) => {
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
        fs::remove_file(path)?;
        sync_dir(path.parent().unwrap_or(Path::new(".")))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        if to.try_exists()? {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        fs::rename(from, to)?;
        sync_dir(to.parent().unwrap_or(Path::new(".")))
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
