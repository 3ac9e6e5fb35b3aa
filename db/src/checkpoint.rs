//! Checkpoint images: the whole committed state at one SCN, in one file, so the redo
//! before it is no longer needed and log groups can be reused.
//!
//! ```text
//! data/image-<scn, 20 digits>.img
//!   magic "REDOIMG\0" | version u32 | db_id u64 | scn u64 | lsn u64
//!   | ahead u32, per commit applied ahead of scn: scn u64 + lsn u64   (version 2)
//!   | schemas u32, per schema: u32 length + a create-schema change record
//!                                                 (version 3; before it, `public` alone)
//!   | tables u32
//!   per table: u32 length + a create-table change record, u64 rows,
//!              per row: u32 length + an insert change record
//!   crc32c u32 over everything before it
//! ```
//!
//! Writing (through the database's [`Storage`], like every durable file): to
//! `image-...img.tmp`, fsync, rename, fsync the directory; only then is the image used. A
//! write that fails (a full disk) removes its temporary file and is tried again later
//! (with a growing delay: see `checkpointer`). The image is built from an immutable
//! snapshot (persistent maps), so commits go on while it is written.
//!
//! The two-image rule: after writing image N, the log is told its checkpoint is image
//! N-1, not N. If image N turns out damaged (checksum), image N-1 plus the redo after it
//! still recover everything; the log never lets go of redo the older image needs.
//!
//! Recovery: the newest image that reads back whole (magic, version, database id,
//! checksum) plus the redo after its SCN, except the commits the image lists as applied
//! ahead of its SCN (commits are applied as they reach the log buffer, not always in SCN
//! order; see `state`). A damaged image is skipped with a warning. Version 1 images (no
//! ahead list) and 2 (no schema list: `public` only) are still read.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use redo::storage::{read_whole, FileWriter, Storage};
use redo::{Lsn, Scn};

use crate::change::Change;
use crate::error::{DbError, DbResult};
use crate::state::DbState;

const MAGIC: [u8; 8] = *b"REDOIMG\0";
const VERSION: u32 = 3;
/// The oldest image version this build reads (version 1 had no ahead list).
const OLDEST_VERSION: u32 = 1;

/// The unit of `physical writes`: Oracle's usual block size (`db_block_size`, 8 KiB).
/// redodb writes an image as one stream of bytes, not in blocks, so an image of `n` bytes
/// counts as `n / 8 KiB` blocks rounded up (`physical write bytes` has the exact bytes).
pub const DATA_BLOCK_BYTES: u64 = 8 << 10;

/// `physical writes` for an image of `bytes` bytes: blocks of [`DATA_BLOCK_BYTES`],
/// rounded up.
pub fn data_blocks(bytes: u64) -> u64 {
    bytes.div_ceil(DATA_BLOCK_BYTES)
}

/// An image on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageInfo {
    pub scn: Scn,
    /// End of the unit of commit `scn` in the redo stream.
    pub lsn: Lsn,
    pub path: PathBuf,
    pub bytes: u64,
}

pub fn data_dir(db_dir: &Path) -> PathBuf {
    db_dir.join("data")
}

fn image_path(db_dir: &Path, scn: Scn) -> PathBuf {
    data_dir(db_dir).join(format!("image-{:020}.img", scn.0))
}

/// A writer that checksums what passes through it.
struct Checksummed<W: Write> {
    inner: W,
    crc: u32,
    bytes: u64,
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes one record, length first: the bytes `encode` leaves in `scratch`.
fn put_record(
    out: &mut impl Write,
    scratch: &mut Vec<u8>,
    encode: impl FnOnce(&mut Vec<u8>),
) -> io::Result<()> {
    scratch.clear();
    encode(scratch);
    out.write_all(&(scratch.len() as u32).to_le_bytes())?;
    out.write_all(scratch)
}

/// Writes the image of `state` durably and returns where it is. On failure nothing is
/// left behind: the temporary file is removed (a crash may leave one, which the next open
/// removes).
pub fn write_image(storage: &dyn Storage, db_dir: &Path, db_id: u64, state: &DbState) -> DbResult<ImageInfo> {
    let dir = data_dir(db_dir);
    let path = image_path(db_dir, state.scn);
    let tmp = path.with_extension("img.tmp");
    let io = |op: &'static str, at: &Path| {
        let at = at.to_path_buf();
        move |e: io::Error| DbError::storage(op, at, e)
    };
    storage.create_dir_all(&dir).map_err(io("creating the directory", &dir))?;
    if storage.exists(&tmp).map_err(io("looking for", &tmp))? {
        // Left by a write that failed and could not clean up.
        storage.remove_file(&tmp).map_err(io("removing", &tmp))?;
    }
    let file = storage.create(&tmp).map_err(io("creating", &tmp))?;
    let written = write_image_to(&*file, db_id, state).map_err(io("writing", &tmp)).and_then(|bytes| {
        file.sync().map_err(io("syncing", &tmp))?;
        Ok(bytes)
    });
    drop(file);
    let bytes = match written {
        Ok(bytes) => bytes,
        Err(e) => {
            if let Err(re) = storage.remove_file(&tmp) {
                log::warn!("could not remove the unfinished image {}: {re}", tmp.display());
            }
            return Err(e);
        }
    };
    if storage.exists(&path).map_err(io("looking for", &path))? {
        // An image of this SCN that did not read back at open (a valid one would have
        // kept this checkpoint from being written).
        storage.remove_file(&path).map_err(io("removing the damaged image", &path))?;
    }
    storage.rename(&tmp, &path).map_err(io("renaming", &tmp))?;
    storage.sync_dir(&dir).map_err(io("syncing the directory", &dir))?;
    Ok(ImageInfo { scn: state.scn, lsn: state.lsn, path, bytes })
}

/// Writes the image's bytes to `file`; returns how many.
fn write_image_to(file: &dyn redo::storage::StorageFile, db_id: u64, state: &DbState) -> io::Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 20, FileWriter::new(file));
    let bytes = encode_image(&mut out, db_id, state)?;
    let inner = out.into_inner().map_err(|e| e.into_error())?;
    debug_assert_eq!(inner.position(), bytes);
    Ok(bytes)
}

/// Writes the image of `state` (the format above, checksum included) to `out` and returns
/// its length in bytes. [`decode_image`] reads it back.
pub fn encode_image(out: &mut impl Write, db_id: u64, state: &DbState) -> io::Result<u64> {
    let mut w = Checksummed { inner: out, crc: 0, bytes: 0 };
    w.write_all(&MAGIC)?;
    w.write_all(&VERSION.to_le_bytes())?;
    w.write_all(&db_id.to_le_bytes())?;
    w.write_all(&state.scn.0.to_le_bytes())?;
    w.write_all(&state.lsn.0.to_le_bytes())?;
    w.write_all(&(state.ahead.len() as u32).to_le_bytes())?;
    for (scn, lsn) in &state.ahead {
        w.write_all(&scn.0.to_le_bytes())?;
        w.write_all(&lsn.0.to_le_bytes())?;
    }
    let schemas: Vec<_> = state.namespaces().collect();
    w.write_all(&(schemas.len() as u32).to_le_bytes())?;
    let mut scratch = Vec::new();
    for namespace in schemas {
        put_record(&mut w, &mut scratch, |out| Change::CreateSchema((**namespace).clone()).encode(out))?;
    }
    // Temporary tables are their sessions' alone and never survive a restart: never in
    // an image (see `temp_tables`).
    let permanent = || state.schemas().filter(|s| !crate::temp_tables::is_temporary(&s.name));
    w.write_all(&(permanent().count() as u32).to_le_bytes())?;
    for schema in permanent() {
        let table = state.table(&schema.name).expect("a table of the state");
        put_record(&mut w, &mut scratch, |out| Change::CreateTable((**schema).clone()).encode(out))?;
        w.write_all(&(table.rows.len() as u64).to_le_bytes())?;
        // In key order, as one map: the image does not depend on the shards.
        for row in table.rows.values() {
            put_record(&mut w, &mut scratch, |out| Change::encode_insert(&schema.name, row, out))?;
        }
    }
    let crc = w.crc;
    let bytes = w.bytes + 4;
    w.inner.write_all(&crc.to_le_bytes())?;
    Ok(bytes)
}

struct Bytes<'a> {
    b: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    fn take(&mut self, n: usize) -> DbResult<&[u8]> {
        if self.b.len() - self.at < n {
            return Err(DbError::CorruptChange("image truncated".into()));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u32(&mut self) -> DbResult<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> DbResult<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn record(&mut self) -> DbResult<Change> {
        let n = self.u32()? as usize;
        Change::decode(self.take(n)?)
    }
}

/// Reads an image back whole, checking everything.
pub fn read_image(storage: &dyn Storage, path: &Path, db_id: u64) -> DbResult<(DbState, ImageInfo)> {
    let bad = |what: String| DbError::CorruptChange(format!("checkpoint image {}: {what}", path.display()));
    let all = read_whole(storage, path).map_err(|e| bad(e.to_string()))?;
    decode_image(&all, path, db_id)
}

/// Decodes an image's bytes (read from `path`), checking everything: the checksum, the
/// magic, the version, the database, every record (each row against its table, no key
/// twice), and that nothing follows the last table. Never trusts a count or a length
/// before checking it; bad bytes are a [`DbError::CorruptChange`] naming the file, never a
/// panic.
pub fn decode_image(all: &[u8], path: &Path, db_id: u64) -> DbResult<(DbState, ImageInfo)> {
    let bad = |what: String| DbError::CorruptChange(format!("checkpoint image {}: {what}", path.display()));
    if all.len() < 8 + 4 + 8 + 8 + 8 + 4 + 4 {
        return Err(bad("too short".into()));
    }
    let (body, trailer) = all.split_at(all.len() - 4);
    let stored = u32::from_le_bytes(trailer.try_into().expect("4 bytes"));
    if crc32c::crc32c(body) != stored {
        return Err(bad("checksum mismatch (damaged or partly written)".into()));
    }
    let mut r = Bytes { b: body, at: 0 };
    if r.take(8)? != MAGIC {
        return Err(bad("not a redodb checkpoint image".into()));
    }
    let version = r.u32()?;
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
        return Err(bad(format!("format version {version}, this build reads {OLDEST_VERSION} to {VERSION}")));
    }
    if r.u64()? != db_id {
        return Err(bad("belongs to another database".into()));
    }
    let scn = Scn(r.u64()?);
    let lsn = Lsn(r.u64()?);
    let mut ahead = Vec::new();
    if version >= 2 {
        let n = r.u32()?;
        // Strictly increasing, all beyond scn + 1 (which would be part of the watermark).
        let mut floor = match scn.0.checked_add(1) {
            Some(next) => Scn(next),
            None => return Err(bad(format!("commit number {scn} is out of range"))),
        };
        for _ in 0..n {
            let (ahead_scn, ahead_lsn) = (Scn(r.u64()?), Lsn(r.u64()?));
            if ahead_scn <= floor {
                return Err(bad(format!("commit {ahead_scn} listed as applied ahead of {scn} out of order")));
            }
            floor = ahead_scn;
            ahead.push((ahead_scn, ahead_lsn));
        }
    }
    let mut state = DbState::default();
    if version >= 3 {
        // The image lists every schema, public only if it still exists.
        state.clear_namespaces();
        let n = r.u32()?;
        for _ in 0..n {
            let change @ Change::CreateSchema(_) = r.record()? else {
                return Err(bad("expected a schema".into()));
            };
            state.apply(&change).map_err(|e| bad(e.to_string()))?;
        }
    }
    let ntables = r.u32()?;
    for _ in 0..ntables {
        let Change::CreateTable(schema) = r.record()? else { return Err(bad("expected a table".into())) };
        let name = schema.name.clone();
        state.apply(&Change::CreateTable(schema)).map_err(|e| bad(e.to_string()))?;
        let nrows = r.u64()?;
        for _ in 0..nrows {
            let Change::Insert { row, .. } = r.record()? else { return Err(bad("expected a row".into())) };
            state.load_row(&name, row).map_err(|e| match e {
                DbError::CorruptChange(what) => bad(what),
                other => other,
            })?;
        }
    }
    if r.at != body.len() {
        return Err(bad("bytes after the last table".into()));
    }
    let info = ImageInfo { scn, lsn, path: path.to_path_buf(), bytes: all.len() as u64 };
    (state.scn, state.lsn, state.ahead) = (scn, lsn, ahead);
    Ok((state, info))
}

/// The images in the data directory, newest first (by SCN in the file name). Removes the
/// temporary files of images whose writing a crash interrupted.
pub fn list_images(storage: &dyn Storage, db_dir: &Path) -> io::Result<Vec<(Scn, PathBuf)>> {
    let dir = data_dir(db_dir);
    let mut out = Vec::new();
    let names = match storage.list_dir(&dir) {
        Ok(names) => names,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    let mut removed = false;
    for name in names {
        let path = dir.join(&name);
        if name.ends_with(".img.tmp") {
            // An image whose writing a crash interrupted: never renamed, never used.
            if let Err(e) = storage.remove_file(&path) {
                log::warn!("could not remove the unfinished image {}: {e}", path.display());
            }
            removed = true;
            continue;
        }
        if let Some(scn) = name.strip_prefix("image-").and_then(|s| s.strip_suffix(".img")) {
            if let Ok(scn) = scn.parse::<u64>() {
                out.push((Scn(scn), path));
            }
        }
    }
    if removed {
        storage.sync_dir(&dir)?;
    }
    out.sort_by_key(|(scn, _)| std::cmp::Reverse(*scn));
    Ok(out)
}

/// An image read back: the state it holds and where it is.
pub type LoadedImage = (DbState, ImageInfo);

/// The newest image that reads back whole, and notes on the ones skipped.
pub fn newest_valid_image(
    storage: &dyn Storage,
    db_dir: &Path,
    db_id: u64,
) -> DbResult<(Option<LoadedImage>, Vec<String>)> {
    let mut notes = Vec::new();
    let images = list_images(storage, db_dir)
        .map_err(|e| DbError::storage("listing the images in", data_dir(db_dir), e))?;
    for (_, path) in images {
        match read_image(storage, &path, db_id) {
            Ok(found) => return Ok((Some(found), notes)),
            Err(e) => {
                log::warn!("{e}; trying an older image");
                notes.push(e.to_string());
            }
        }
    }
    Ok((None, notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Column, Row, TableSchema};
    use crate::value::{DataType, Value};

    fn prices() -> TableSchema {
        let columns = vec![
            Column { name: "id".into(), ty: DataType::Int, nullable: false },
            Column { name: "price".into(), ty: DataType::Float, nullable: true },
        ];
        TableSchema::new("prices", columns, vec![0]).unwrap()
    }

    fn image_of(rows: &[Vec<Value>]) -> Vec<u8> {
        let mut state = DbState::default();
        state.apply(&Change::CreateTable(prices())).unwrap();
        for row in rows {
            // `apply` trusts its rows (the commit path checked them): a wrong one gets in.
            state.apply(&Change::Insert { table: "prices".into(), row: Row::from(row.clone()) }).unwrap();
        }
        let mut out = Vec::new();
        encode_image(&mut out, 7, &state).unwrap();
        out
    }

    /// Found by the `checkpoint_image` fuzz target: an image at the largest commit
    /// number overflowed computing the next one (a panic in a debug build).
    #[test]
    fn an_image_at_the_largest_commit_number_is_refused() {
        let mut state = DbState::default();
        state.scn = Scn(u64::MAX);
        let mut bytes = Vec::new();
        encode_image(&mut bytes, 7, &state).unwrap();
        let e = decode_image(&bytes, Path::new("image"), 7).unwrap_err();
        assert!(e.to_string().contains("commit number scn:18446744073709551615 is out of range"), "{e}");
    }

    #[test]
    fn an_image_reads_back_as_it_was_written() {
        let bytes = image_of(&[vec![Value::Int(1), Value::Float(2.5)], vec![Value::Int(2), Value::Null]]);
        let (state, info) = decode_image(&bytes, Path::new("image"), 7).unwrap();
        assert_eq!(info.bytes, bytes.len() as u64);
        let mut again = Vec::new();
        encode_image(&mut again, 7, &state).unwrap();
        assert_eq!(again, bytes);
        assert!(
            matches!(decode_image(&bytes, Path::new("image"), 8), Err(DbError::CorruptChange(e)) if e.contains("another database"))
        );
    }

    /// Found by the `checkpoint_image` fuzz target: an image whose row holds a BIGINT in
    /// a DOUBLE PRECISION column was loaded as it was.
    #[test]
    fn an_image_whose_row_does_not_fit_its_table_is_refused_not_loaded() {
        let bytes = image_of(&[vec![Value::Int(1), Value::Int(16187391)]]);
        let e = decode_image(&bytes, Path::new("image"), 7).unwrap_err();
        assert!(e.to_string().contains("Int(16187391) in column \"price\" of type DOUBLE PRECISION"), "{e}");
        let bytes = image_of(&[vec![Value::Int(1)]]);
        let e = decode_image(&bytes, Path::new("image"), 7).unwrap_err();
        assert!(e.to_string().contains("has 1 values for its 2 columns"), "{e}");
    }

    #[test]
    fn an_image_keeps_its_schemas_and_one_of_version_2_has_public_alone() {
        let mut state = DbState::default();
        let app = crate::namespaces::Namespace { name: "app".into(), owner: "alice".into() };
        state.apply(&Change::CreateSchema(app.clone())).unwrap();
        state.apply(&Change::DropSchema { name: "public".into() }).unwrap();
        let mut bytes = Vec::new();
        encode_image(&mut bytes, 7, &state).unwrap();
        let (read, _) = decode_image(&bytes, Path::new("image"), 7).unwrap();
        let names: Vec<_> = read.namespaces().map(|n| (**n).clone()).collect();
        assert_eq!(names, vec![app]);

        // Version 2: the same header without the schema list.
        let mut bytes = Vec::new();
        encode_image(&mut bytes, 7, &DbState::default()).unwrap();
        let header = 8 + 4 + 8 + 8 + 8 + 4;
        let list_len = {
            let record = u32::from_le_bytes(bytes[header + 4..header + 8].try_into().unwrap()) as usize;
            4 + 4 + record
        };
        let mut old: Vec<u8> = bytes[..header].to_vec();
        old[8..12].copy_from_slice(&2u32.to_le_bytes());
        old.extend_from_slice(&bytes[header + list_len..bytes.len() - 4]);
        old.extend_from_slice(&crc32c::crc32c(&old).to_le_bytes());
        let (read, _) = decode_image(&old, Path::new("image"), 7).unwrap();
        let names: Vec<_> = read.namespaces().map(|n| n.name.clone()).collect();
        assert_eq!(names, ["public"]);
    }
}
