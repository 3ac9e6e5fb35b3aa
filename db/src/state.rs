//! The committed state of the database: every table's rows in ordered maps keyed by
//! primary key. Persistent maps (`imbl`) make a snapshot an O(1) clone, so readers and
//! checkpoints never hold up commits, and a commit changes only the paths it touches.
//!
//! The rows are partitioned into `SHARDS` shards by a hash of their key, each shard under
//! its own lock (`LiveState`): a point read or a commit's apply locks only the shards of
//! its keys, so sessions working on different rows seldom meet on a lock. With one lock
//! for the whole state, a commit's apply (a writer) made every point read arriving
//! meanwhile sleep, and with 32 sessions on 2 CPUs those sleeps were 43% of all context
//! switches of the commit_loop example's NOWAIT updates. Every shard holds every table's
//! schema (DDL changes all shards at once), so a schema is read from any one shard.
//!
//! Commits are applied as their commit records reach the log buffer, which is not always
//! in SCN order: a session descheduled between copying its commit record and applying
//! it must not hold up everyone behind it. That is safe because the commits not yet
//! applied never conflict: each one still holds the locks on every row and table it
//! changed (they are released only after its apply), so they touch disjoint rows and
//! applying them in any order gives the same state as SCN order.
//!
//! Invariant: every commit up to `scn` is reflected, plus exactly those in `ahead`
//! (all above `scn + 1`); no other. A checkpoint image records both, and recovery replays
//! the redo after `scn` except the commits in `ahead`. A snapshot holds every shard's
//! read lock while it reads the watermark, and an apply holds its shards' write locks
//! while it marks the watermark, so a snapshot's rows and watermark always agree.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use imbl::OrdMap;
use redo::{Lsn, Scn};
use smallvec::SmallVec;

use crate::change::Change;
use crate::error::{DbError, DbResult};
use crate::namespaces::Namespace;
use crate::schema::{Key, Row, TableSchema};
use crate::value::Value;

/// How many shards the rows are partitioned into. Sixteen: with 2 CPUs at most two
/// sessions run at once, and two random keys then meet on a shard one time in sixteen.
pub const SHARDS: usize = 16;

/// The multiplier of the shard hash.
const SHARD_MIX: u64 = 0x9e37_79b9_7f4a_7c15;

/// The shard of a key: a multiplicative hash of its values (consistent with `Value`'s
/// equality, which never equates values of different variants).
///
/// A row change asks for its key's shard about six times (lock, read, log, apply,
/// release), so the commonest key, one integer, is hashed inline here: a call into the
/// general walk below cost ~46 instructions each time (measured with callgrind on
/// `commit_loop update`), the inline form a handful. Both give the same shard.
#[inline]
pub fn shard_of(key: &[Value]) -> usize {
    if let [Value::Int(i)] = key {
        return shard_of_hash((0u64.rotate_left(5) ^ *i as u64).wrapping_mul(SHARD_MIX));
    }
    shard_of_any(key)
}

/// The shard a finished hash falls in.
#[inline]
fn shard_of_hash(h: u64) -> usize {
    // The high bits are the best mixed.
    (h >> 58) as usize % SHARDS
}

/// `shard_of` for any key.
#[inline(never)]
fn shard_of_any(key: &[Value]) -> usize {
    let mut h: u64 = 0;
    let mut add = |word: u64| h = (h.rotate_left(5) ^ word).wrapping_mul(SHARD_MIX);
    for value in key {
        match value {
            Value::Null => add(0),
            Value::Int(i) => add(*i as u64),
            Value::Float(f) => add(f.to_bits() ^ 1),
            Value::Float4(f) => add(u64::from(f.to_bits()) ^ 7),
            Value::Bool(b) => add(2 + *b as u64),
            // Consistent with `Value`'s order: timestamps of either kind with equal
            // microseconds are equal, a date equals no timestamp, intervals compare by
            // their span.
            Value::Date(d) => add(*d as u64 ^ 3),
            Value::Timestamp(t) | Value::TimestampTz(t) => add(*t as u64 ^ 4),
            Value::Time(t) => add(*t as u64 ^ 5),
            Value::Interval(iv) => {
                let span = iv.comparable();
                add(span as u64);
                add((span >> 64) as u64 ^ 6);
            }
            // Equal numerics of different scales (1.5, 1.50) are one key.
            Value::Numeric(n) => {
                let (int, scale) = crate::numeric::hash_parts(n);
                add(scale as u64 ^ 7);
                for digit in int.iter_u64_digits() {
                    add(digit);
                }
                add(int.sign() as u64);
            }
            Value::Bytea(b) => {
                add(b.len() as u64 ^ 8);
                for chunk in b.chunks(8) {
                    let mut word = [0u8; 8];
                    word[..chunk.len()].copy_from_slice(chunk);
                    add(u64::from_le_bytes(word));
                }
            }
            Value::Array(a) => {
                add(a.items.len() as u64 ^ 10);
                add(shard_of(&a.items) as u64);
            }
            Value::Record(r) => add(shard_of(&r.fields) as u64 ^ 11),
            Value::Uuid(u) => {
                add(u64::from_le_bytes(u[..8].try_into().expect("8 bytes")) ^ 9);
                add(u64::from_le_bytes(u[8..].try_into().expect("8 bytes")));
            }
            Value::Text(_) | Value::Json(_) | Value::Jsonb(_) => {
                let t: &str = match value {
                    Value::Text(t) => t,
                    Value::Json(t) | Value::Jsonb(t) => t,
                    _ => unreachable!("a text"),
                };
                add(t.len() as u64);
                let mut chunks = t.as_bytes().chunks_exact(8);
                for chunk in &mut chunks {
                    add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
                }
                let mut tail = [0u8; 8];
                tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
                add(u64::from_le_bytes(tail));
            }
        }
    }
    shard_of_hash(h)
}

/// A set of shards, as a bit mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShardSet(u32);

impl ShardSet {
    pub const ALL: ShardSet = ShardSet((1 << SHARDS) - 1);

    pub fn add(&mut self, shard: usize) {
        self.0 |= 1 << shard;
    }

    pub fn add_key(&mut self, key: &[Value]) {
        self.add(shard_of(key));
    }

    pub fn contains(self, shard: usize) -> bool {
        self.0 & (1 << shard) != 0
    }

    /// The shards in ascending order (the order their locks are taken in).
    pub fn iter(self) -> impl Iterator<Item = usize> {
        (0..SHARDS).filter(move |&i| self.contains(i))
    }
}

/// One table's rows in one shard, with the table's schema, and the entries of its
/// secondary indexes for those rows (one tree per index of the schema, in its order;
/// each entry the indexed values then the primary key: `TableSchema::index_key`). An
/// index entry lives in its row's shard, so a commit's apply changes both under the one
/// shard lock it holds.
#[derive(Clone, Debug)]
pub struct Table {
    pub schema: Arc<TableSchema>,
    pub rows: OrdMap<Key, Row>,
    pub indexes: Vec<OrdMap<Key, ()>>,
}

impl Table {
    fn new(schema: Arc<TableSchema>) -> Table {
        let indexes = vec![OrdMap::new(); schema.indexes.len()];
        Table { schema, rows: OrdMap::new(), indexes }
    }

    /// Adds (`add`) or removes the index entries of `row`.
    fn index_row(&mut self, row: &[Value], add: bool) {
        for (i, index) in self.schema.indexes.iter().enumerate() {
            let key = self.schema.index_key(index, row);
            if add {
                self.indexes[i].insert(key, ());
            } else {
                self.indexes[i].remove(&key);
            }
        }
    }
}

/// Every table, with the rows whose keys hash to this shard.
#[derive(Clone, Debug, Default)]
pub struct Shard {
    tables: OrdMap<String, Table>,
    /// The schemas, by name (`namespaces`): every shard holds them all, as it holds
    /// every table's schema.
    namespaces: OrdMap<String, Arc<Namespace>>,
}

impl Shard {
    pub fn table(&self, name: &str) -> DbResult<&Table> {
        self.tables.get(name).ok_or_else(|| DbError::UnknownTable(name.to_string()))
    }

    pub fn has_table(&self, name: &str) -> bool {
        self.tables.contains_key(name)
    }

    /// Every table's schema, by name.
    pub fn schemas(&self) -> impl Iterator<Item = &Arc<TableSchema>> {
        self.tables.values().map(|t| &t.schema)
    }

    /// Whether schema `name` exists.
    pub fn has_namespace(&self, name: &str) -> bool {
        self.namespaces.contains_key(name)
    }

    /// The schemas, by name.
    pub fn namespaces(&self) -> impl Iterator<Item = &Arc<Namespace>> {
        self.namespaces.values()
    }

    fn table_mut(&mut self, name: &str) -> DbResult<&mut Table> {
        self.tables.get_mut(name).ok_or_else(|| DbError::UnknownTable(name.to_string()))
    }
}

/// Mutable access to the shards a change is applied to.
trait ShardsMut {
    /// Shard `index`; a change routed to a shard its apply did not lock is a bug.
    fn shard(&mut self, index: usize) -> &mut Shard;
    /// A shard the apply holds, for the schemas (every shard has every table).
    fn any(&mut self) -> &mut Shard;
}

impl ShardsMut for [Shard] {
    fn shard(&mut self, index: usize) -> &mut Shard {
        &mut self[index]
    }
    fn any(&mut self) -> &mut Shard {
        &mut self[0]
    }
}

/// A row of a rewritten table, made from its old row (`Change::RewriteTable`).
fn rebuild_row(
    schema: &TableSchema,
    sources: &[crate::change::ColumnSource],
    old: &[Value],
) -> DbResult<Row> {
    use crate::change::ColumnSource;
    let old_value = |i: usize| {
        old.get(i).cloned().ok_or_else(|| {
            DbError::CorruptChange(format!("a rewrite reads column {i} of a row of {}", old.len()))
        })
    };
    let mut row = Vec::with_capacity(sources.len());
    for (column, source) in schema.columns.iter().zip(sources) {
        row.push(match source {
            ColumnSource::Old(i) => old_value(*i)?,
            ColumnSource::Constant(v) => v.clone(),
            ColumnSource::Converted(i) => crate::schema::coerce(old_value(*i)?, column.ty)?,
        });
    }
    Ok(Row::from(row))
}

/// Applies one change. A change that does not fit the state (a duplicate key, a missing
/// row or table) is an error: on the commit path that is a bug (changes are validated
/// under row locks), in recovery it means the redo is corrupt.
fn apply_change(shards: &mut (impl ShardsMut + ?Sized), change: &Change) -> DbResult<()> {
    match change {
        Change::CreateTable(schema) => {
            if shards.any().has_table(&schema.name) {
                return Err(DbError::TableExists(schema.name.clone()));
            }
            let schema = Arc::new(schema.clone());
            for i in 0..SHARDS {
                shards.shard(i).tables.insert(schema.name.clone(), Table::new(schema.clone()));
            }
        }
        Change::AlterTable(schema) => {
            shards.any().table(&schema.name)?;
            let schema = Arc::new(schema.clone());
            for i in 0..SHARDS {
                let t = shards.shard(i).table_mut(&schema.name)?;
                // The indexes built again from the shard's rows.
                let mut table = Table::new(schema.clone());
                table.rows = t.rows.clone();
                for row in t.rows.values() {
                    table.index_row(row, true);
                }
                *t = table;
            }
        }
        Change::RewriteTable { schema, sources, zone } => {
            shards.any().table(&schema.name)?;
            let schema = Arc::new(schema.clone());
            let mut fresh: Vec<Table> = (0..SHARDS).map(|_| Table::new(schema.clone())).collect();
            // Conversions read the time zone of the thread: the statement's, as logged.
            let saved_zone = crate::datetime::ZoneId::current();
            crate::datetime::ZoneId::named(zone).unwrap_or_default().make_current();
            let rebuilt = (|| -> DbResult<()> {
                for i in 0..SHARDS {
                    for old in shards.shard(i).table(&schema.name)?.rows.values() {
                        let row = rebuild_row(&schema, sources, old)?;
                        let key = schema.key_of(&row);
                        let shard = &mut fresh[shard_of(&key)];
                        if shard.rows.insert(key.clone(), row).is_some() {
                            return Err(DbError::DuplicateKey {
                                constraint: schema.primary_key_name(),
                                key: format!("{key:?}"),
                            });
                        }
                    }
                }
                Ok(())
            })();
            saved_zone.make_current();
            rebuilt?;
            for (i, mut table) in fresh.into_iter().enumerate() {
                let rows: Vec<Row> = table.rows.values().cloned().collect();
                for row in &rows {
                    table.index_row(row, true);
                }
                *shards.shard(i).table_mut(&schema.name)? = table;
            }
        }
        Change::RenameTable { from, to } => {
            shards.any().table(from)?;
            if shards.any().has_table(to) {
                return Err(DbError::TableExists(to.clone()));
            }
            // One schema shared by every shard: a statement compiled against it finds the
            // same one (`Arc::ptr_eq`) in whichever shard its row falls.
            let mut schema = TableSchema::clone(&shards.any().table(from)?.schema);
            schema.name = to.clone();
            let schema = Arc::new(schema);
            for i in 0..SHARDS {
                let shard = shards.shard(i);
                let mut table = shard.tables.remove(from).expect("every shard has every table");
                table.schema = schema.clone();
                shard.tables.insert(to.clone(), table);
            }
        }
        Change::CreateSchema(namespace) => {
            if shards.any().namespaces.contains_key(&namespace.name) {
                return Err(DbError::DuplicateSchema(namespace.name.clone()));
            }
            let namespace = Arc::new(namespace.clone());
            for i in 0..SHARDS {
                shards.shard(i).namespaces.insert(namespace.name.clone(), namespace.clone());
            }
        }
        Change::DropSchema { name } => {
            if !shards.any().namespaces.contains_key(name) {
                return Err(DbError::UndefinedSchema(name.clone()));
            }
            // Its relations went first, in the same transaction (`DROP SCHEMA ... CASCADE`).
            if let Some(left) = shards.any().tables.keys().find(|t| crate::namespaces::split(t).0 == name) {
                return Err(DbError::CorruptChange(format!(
                    "schema \"{name}\" dropped while \"{left}\" is in it"
                )));
            }
            for i in 0..SHARDS {
                shards.shard(i).namespaces.remove(name);
            }
        }
        Change::DropTable { table } => {
            shards.any().table(table)?;
            for i in 0..SHARDS {
                shards.shard(i).tables.remove(table);
            }
        }
        Change::Truncate { table } => {
            shards.any().table(table)?;
            for i in 0..SHARDS {
                let t = shards.shard(i).table_mut(table)?;
                t.rows = OrdMap::new();
                t.indexes.iter_mut().for_each(|index| *index = OrdMap::new());
            }
        }
        Change::Insert { table, row } => {
            let key = shards.any().table(table)?.schema.key_of(row);
            let t = shards.shard(shard_of(&key)).table_mut(table)?;
            // One walk down the tree; a duplicate (never on the commit path, where the
            // row lock and the read under it exclude one) is put back.
            if let Some(existing) = t.rows.insert(key.clone(), row.clone()) {
                t.rows.insert(key.clone(), existing);
                return Err(DbError::DuplicateKey {
                    constraint: t.schema.primary_key_name(),
                    key: format!("{key:?}"),
                });
            }
            if !t.indexes.is_empty() {
                t.index_row(row, true);
            }
        }
        Change::Update { table, key, row } => {
            let t = shards.shard(shard_of(key)).table_mut(table)?;
            let indexed = !t.indexes.is_empty();
            if let Some(current) = t.rows.get_mut(key) {
                // The common case: the key is unchanged, one walk down the tree.
                if t.schema.primary_key.iter().zip(key.iter()).all(|(&i, k)| row[i] == *k) {
                    let old = std::mem::replace(current, row.clone());
                    if indexed {
                        t.index_row(&old, false);
                        t.index_row(row, true);
                    }
                    return Ok(());
                }
            }
            let Some(old) = t.rows.remove(key) else {
                return Err(DbError::CorruptChange(format!(
                    "update of a missing row {key:?} in \"{table}\""
                )));
            };
            if indexed {
                t.index_row(&old, false);
            }
            let new_key = t.schema.key_of(row);
            let t = shards.shard(shard_of(&new_key)).table_mut(table)?;
            if t.rows.contains_key(&new_key) {
                return Err(DbError::DuplicateKey {
                    constraint: t.schema.primary_key_name(),
                    key: format!("{new_key:?}"),
                });
            }
            t.rows.insert(new_key, row.clone());
            if indexed {
                t.index_row(row, true);
            }
        }
        Change::Delete { table, key } => {
            let t = shards.shard(shard_of(key)).table_mut(table)?;
            let Some(old) = t.rows.remove(key) else {
                return Err(DbError::CorruptChange(format!(
                    "delete of a missing row {key:?} in \"{table}\""
                )));
            };
            if !t.indexes.is_empty() {
                t.index_row(&old, false);
            }
        }
    }
    Ok(())
}

/// Which commits a state reflects: all up to `scn`, plus those in `ahead`.
#[derive(Clone, Debug, Default)]
struct Watermark {
    scn: Scn,
    lsn: Lsn,
    ahead: Vec<(Scn, Lsn)>,
}

impl Watermark {
    fn mark_applied(&mut self, scn: Scn, lsn: Lsn) {
        assert!(scn > self.scn, "commit {scn} applied twice (applied through {})", self.scn);
        if scn != self.scn.next() {
            let at = self.ahead.partition_point(|&(s, _)| s < scn);
            assert!(self.ahead.get(at).is_none_or(|&(s, _)| s != scn), "commit {scn} applied twice");
            self.ahead.insert(at, (scn, lsn));
            return;
        }
        self.scn = scn;
        self.lsn = lsn;
        let contiguous = self.ahead.iter().zip(1u64..).take_while(|((s, _), i)| s.0 == scn.0 + i).count();
        if contiguous > 0 {
            (self.scn, self.lsn) = self.ahead[contiguous - 1];
            self.ahead.drain(..contiguous);
        }
    }
}

/// A consistent state: a snapshot of the live state, an image read back, or recovery's
/// working copy.
#[derive(Clone, Debug)]
pub struct DbState {
    shards: Vec<Shard>,
    /// Every commit up to this one is applied (the contiguous watermark).
    pub scn: Scn,
    /// End of the unit of commit `scn` in the redo stream (what a checkpoint records).
    pub lsn: Lsn,
    /// Commits applied beyond `scn + 1`, in SCN order, with the end of each in the redo
    /// stream: usually empty, and short (at most one per session in flight).
    pub ahead: Vec<(Scn, Lsn)>,
}

impl Default for DbState {
    /// A new database's state: no table, schema `public`.
    fn default() -> DbState {
        let public = Arc::new(Namespace::public());
        let mut shard = Shard::default();
        shard.namespaces.insert(public.name.clone(), public);
        DbState { shards: vec![shard; SHARDS], scn: Scn::default(), lsn: Lsn::default(), ahead: Vec::new() }
    }
}

/// A table of a `DbState`: its schema and its rows across the shards.
pub struct TableView<'a> {
    pub schema: &'a Arc<TableSchema>,
    pub rows: ShardedRows<'a>,
}

impl DbState {
    /// Checks that every secondary index holds exactly the entries of its table's rows
    /// (what a rebuild from the rows would make): the invariant the commit path, the
    /// image load and recovery keep. Names the first index that differs.
    pub fn verify_indexes(&self) -> Result<(), String> {
        for shard in &self.shards {
            for (name, table) in &shard.tables {
                for (i, index) in table.schema.indexes.iter().enumerate() {
                    let rebuilt: OrdMap<Key, ()> =
                        table.rows.values().map(|row| (table.schema.index_key(index, row), ())).collect();
                    if rebuilt != table.indexes[i] {
                        return Err(format!(
                            "index \"{}\" of \"{name}\" has {} entries where its rows make {}",
                            index.name,
                            table.indexes[i].len(),
                            rebuilt.len()
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Records that commit `scn`, ending at `lsn` in the redo stream, has been applied,
    /// advancing the watermark over every commit applied ahead of it that now follows.
    pub fn mark_applied(&mut self, scn: Scn, lsn: Lsn) {
        let mut mark = Watermark { scn: self.scn, lsn: self.lsn, ahead: std::mem::take(&mut self.ahead) };
        mark.mark_applied(scn, lsn);
        (self.scn, self.lsn, self.ahead) = (mark.scn, mark.lsn, mark.ahead);
    }

    /// Whether commit `scn` is reflected in this state.
    pub fn has_applied(&self, scn: Scn) -> bool {
        scn <= self.scn || self.ahead.binary_search_by_key(&scn, |&(s, _)| s).is_ok()
    }

    /// The end in the redo stream of the newest commit reflected (what must be durable
    /// before this state may be written to an image).
    pub fn newest_lsn(&self) -> Lsn {
        self.ahead.last().map_or(self.lsn, |&(_, lsn)| lsn)
    }

    pub fn table(&self, name: &str) -> DbResult<TableView<'_>> {
        let schema = &self.shards[0].table(name)?.schema;
        let parts =
            std::array::from_fn(|i| &self.shards[i].table(name).expect("every shard has every table").rows);
        Ok(TableView { schema, rows: ShardedRows { parts } })
    }

    pub fn has_table(&self, name: &str) -> bool {
        self.shards[0].has_table(name)
    }

    /// The rows of `table` whose entries in its `index`-th index start with `prefix`,
    /// in the index's order.
    pub fn index_rows(&self, table: &str, index: usize, prefix: &[Value]) -> DbResult<Vec<Row>> {
        self.index_scan(table, index, &Key::from(prefix.to_vec()), &mut |k| k.starts_with(prefix))
    }

    /// The rows of `table` whose entries in its `index`-th index run from `start` while
    /// `within` holds, in the index's order.
    pub fn index_scan(
        &self,
        table: &str,
        index: usize,
        start: &Key,
        within: &mut dyn FnMut(&Key) -> bool,
    ) -> DbResult<Vec<Row>> {
        let schema = &self.shards[0].table(table)?.schema;
        let width =
            schema.indexes.get(index).map(|i| i.columns.len()).ok_or_else(|| {
                DbError::CorruptChange(format!("index {index} of \"{table}\" does not exist"))
            })?;
        let mut found: Vec<(Key, Row)> = Vec::new();
        for shard in &self.shards {
            let t = shard.table(table)?;
            for (entry, ()) in t.indexes[index].range((Bound::Included(start.clone()), Bound::Unbounded)) {
                if !within(entry) {
                    break;
                }
                let key: Key = entry[width..].iter().cloned().collect();
                if let Some(row) = t.rows.get(&key) {
                    found.push((entry.clone(), row.clone()));
                }
            }
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(found.into_iter().map(|(_, row)| row).collect())
    }

    /// Every table's schema, by name.
    pub fn schemas(&self) -> impl Iterator<Item = &Arc<TableSchema>> {
        self.shards[0].schemas()
    }

    /// Whether schema `name` exists.
    pub fn has_namespace(&self, name: &str) -> bool {
        self.shards[0].has_namespace(name)
    }

    /// The schemas, by name.
    pub fn namespaces(&self) -> impl Iterator<Item = &Arc<Namespace>> {
        self.shards[0].namespaces()
    }

    /// Removes every schema, `public` too (a checkpoint image that lists its schemas
    /// starts from none).
    pub(crate) fn clear_namespaces(&mut self) {
        for shard in &mut self.shards {
            shard.namespaces = OrdMap::new();
        }
    }

    /// The entries of `table`'s primary key (`index` None: each row's key) or of its
    /// `index`-th secondary index (the indexed values, then the key), each with its row,
    /// in the order of the entries (descending when `backward`): a merge of the shards'
    /// ordered maps, read lazily (an ORDER BY ... LIMIT stops after a few).
    pub fn ordered_entries<'a>(
        &'a self,
        table: &str,
        index: Option<usize>,
        backward: bool,
    ) -> DbResult<impl Iterator<Item = (Key, &'a Row)> + 'a> {
        type Source<'a> = Box<dyn Iterator<Item = (Key, &'a Row)> + 'a>;
        let mut sources: Vec<Source<'a>> = Vec::with_capacity(self.shards.len());
        for shard in &self.shards {
            let t = shard.table(table)?;
            let entries: Source<'a> = match index {
                None => {
                    let rows = t.rows.iter().map(|(k, r)| (k.clone(), r));
                    if backward {
                        Box::new(rows.rev())
                    } else {
                        Box::new(rows)
                    }
                }
                Some(i) => {
                    let width = t.schema.indexes.get(i).map(|ix| ix.columns.len()).ok_or_else(|| {
                        DbError::CorruptChange(format!("index {i} of \"{table}\" does not exist"))
                    })?;
                    let with_row = move |(entry, ()): (&Key, &())| {
                        let key: Key = entry[width..].iter().cloned().collect();
                        t.rows.get(&key).map(|row| (entry.clone(), row))
                    };
                    if backward {
                        Box::new(t.indexes[i].iter().rev().filter_map(with_row))
                    } else {
                        Box::new(t.indexes[i].iter().filter_map(with_row))
                    }
                }
            };
            sources.push(entries);
        }
        let mut heads: Vec<Option<(Key, &'a Row)>> = sources.iter_mut().map(Iterator::next).collect();
        Ok(std::iter::from_fn(move || {
            // The source whose next entry comes first (16 shards: a scan of the heads).
            let mut best: Option<usize> = None;
            for (i, head) in heads.iter().enumerate() {
                let Some((key, _)) = head else { continue };
                let better = best.is_none_or(|b| {
                    let best_key = &heads[b].as_ref().expect("a head").0;
                    if backward {
                        key > best_key
                    } else {
                        key < best_key
                    }
                });
                if better {
                    best = Some(i);
                }
            }
            let best = best?;
            let next = sources[best].next();
            std::mem::replace(&mut heads[best], next)
        }))
    }

    /// Applies one change (see `apply_change`).
    pub fn apply(&mut self, change: &Change) -> DbResult<()> {
        apply_change(&mut self.shards[..], change)
    }

    /// Applies a change read back from the redo log: as [`DbState::apply`], once its row
    /// is known to fit its table (`TableSchema::check_stored_row`). On the commit path rows
    /// were checked when the statement made them; bytes from disk are checked here.
    pub fn apply_recovered(&mut self, change: &Change) -> DbResult<()> {
        if let Change::Insert { table, row } | Change::Update { table, row, .. } = change {
            self.shards[0].table(table)?.schema.check_stored_row(row)?;
        }
        self.apply(change)
    }

    /// Puts a row read from a checkpoint image into its shard, once it is known to fit
    /// its table and to be the only one with its key.
    pub(crate) fn load_row(&mut self, table: &str, row: Row) -> DbResult<()> {
        let schema = &self.shards[0].table(table)?.schema;
        schema.check_stored_row(&row)?;
        let key = schema.key_of(&row);
        let shard = shard_of(&key);
        let t = self.shards[shard].table_mut(table)?;
        if let Some(earlier) = t.rows.insert(key, row.clone()) {
            let key = t.schema.key_of(&earlier);
            return Err(DbError::CorruptChange(format!(
                "two rows of table \"{table}\" have the key {key:?}"
            )));
        }
        // The image holds the rows only: their index entries are made as they load.
        if !t.indexes.is_empty() {
            t.index_row(&row, true);
        }
        Ok(())
    }
}

/// One table's rows across the shards, read as one ordered map.
pub struct ShardedRows<'a> {
    parts: [&'a OrdMap<Key, Row>; SHARDS],
}

impl<'a> ShardedRows<'a> {
    pub fn get(&self, key: &Key) -> Option<&'a Row> {
        self.parts[shard_of(key)].get(key)
    }

    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| p.len()).sum()
    }

    /// The highest key.
    pub fn max_key(&self) -> Option<&'a Key> {
        self.parts.iter().filter_map(|p| p.get_max().map(|(k, _)| k)).max()
    }

    pub fn is_empty(&self) -> bool {
        self.parts.iter().all(|p| p.is_empty())
    }

    /// The rows whose keys are in `range`, in key order (a merge of the shards' ranges).
    pub fn range<R: RangeBounds<Key> + Clone>(
        &self,
        range: R,
    ) -> impl Iterator<Item = (&'a Key, &'a Row)> + use<'a, R> {
        merge(self.parts.iter().map(|p| p.range(range.clone())).collect())
    }

    /// Every row, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a Key, &'a Row)> + use<'a> {
        merge(
            self.parts
                .iter()
                .map(|p| p.range::<(Bound<&Key>, Bound<&Key>), Key>((Bound::Unbounded, Bound::Unbounded)))
                .collect(),
        )
    }

    pub fn keys(&self) -> impl Iterator<Item = &'a Key> + use<'a> {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &'a Row> + use<'a> {
        self.iter().map(|(_, r)| r)
    }
}

/// Merges iterators each in ascending key order (keys unique across them) into one.
fn merge<'a, I: Iterator<Item = (&'a Key, &'a Row)>>(
    mut sources: Vec<I>,
) -> impl Iterator<Item = (&'a Key, &'a Row)> {
    let mut heads: BinaryHeap<Reverse<(&'a Key, usize)>> = BinaryHeap::with_capacity(sources.len());
    let mut rows: Vec<Option<&'a Row>> = vec![None; sources.len()];
    for (i, source) in sources.iter_mut().enumerate() {
        if let Some((key, row)) = source.next() {
            heads.push(Reverse((key, i)));
            rows[i] = Some(row);
        }
    }
    std::iter::from_fn(move || {
        let Reverse((key, i)) = heads.pop()?;
        let row = rows[i].take().expect("a head has its row");
        if let Some((next_key, next_row)) = sources[i].next() {
            heads.push(Reverse((next_key, i)));
            rows[i] = Some(next_row);
        }
        Some((key, row))
    })
}

/// A shard's lock on a cache line of its own: with the locks side by side, two sessions
/// on different shards would still move one line between their CPUs. Beside it, the
/// count of applies to the shard (written under the write lock, on the line the applier
/// already holds).
#[repr(align(128))]
struct PaddedShard(RwLock<Shard>, AtomicU64);

/// The committed state the sessions share: the shards, each under its own lock, and the
/// watermark of applied commits.
pub struct LiveState {
    shards: Box<[PaddedShard]>,
    watermark: Mutex<Watermark>,
    /// An apply failed half way: the rows may hold part of a commit the watermark does not
    /// count, so the state must never be written as an image (see `apply`).
    broken: AtomicBool,
    /// Makes the next apply fail half way (tests of fail-stop).
    #[cfg(test)]
    pub(crate) fail_next_apply: AtomicBool,
}

/// Read locks on the shards of some keys (`LiveState::read_keys`).
pub struct KeyShards<'a>(SmallVec<[(usize, RwLockReadGuard<'a, Shard>); 4]>);

impl KeyShards<'_> {
    /// The shard of `key`, which must be one of the keys the shards were locked for.
    pub fn of(&self, key: &[Value]) -> &Shard {
        let index = shard_of(key);
        &self.0.iter().find(|(i, _)| *i == index).expect("the key's shard is locked").1
    }
}

/// Write locks on the shards of one apply, in ascending shard order.
struct LockedShards<'a>(SmallVec<[(usize, RwLockWriteGuard<'a, Shard>); 4]>);

impl ShardsMut for LockedShards<'_> {
    fn shard(&mut self, index: usize) -> &mut Shard {
        match self.0.iter_mut().find(|(i, _)| *i == index) {
            Some((_, guard)) => guard,
            None => panic!("a change routed to shard {index}, which its apply did not lock"),
        }
    }
    fn any(&mut self) -> &mut Shard {
        &mut self.0.first_mut().expect("an apply locks at least one shard").1
    }
}

impl LiveState {
    pub fn new(state: DbState) -> LiveState {
        let DbState { shards, scn, lsn, ahead } = state;
        assert_eq!(shards.len(), SHARDS);
        LiveState {
            shards: shards.into_iter().map(|s| PaddedShard(RwLock::new(s), AtomicU64::new(0))).collect(),
            watermark: Mutex::new(Watermark { scn, lsn, ahead }),
            broken: AtomicBool::new(false),
            #[cfg(test)]
            fail_next_apply: AtomicBool::new(false),
        }
    }

    /// Whether an apply failed half way (see `apply`). Read after `snapshot`, it says
    /// whether that snapshot may hold part of a commit.
    pub fn is_broken(&self) -> bool {
        self.broken.load(SeqCst)
    }

    fn read(&self, index: usize) -> RwLockReadGuard<'_, Shard> {
        self.shards[index].0.read().expect("shard poisoned")
    }

    /// A consistent snapshot: every shard's rows and the watermark, at one instant.
    pub fn snapshot(&self) -> DbState {
        let guards: Vec<_> = (0..SHARDS).map(|i| self.read(i)).collect();
        let mark = self.watermark.lock().expect("watermark poisoned").clone();
        DbState {
            shards: guards.iter().map(|g| (**g).clone()).collect(),
            scn: mark.scn,
            lsn: mark.lsn,
            ahead: mark.ahead,
        }
    }

    /// The applies so far, summed over the shards: unchanged between two reads, it says
    /// that no apply completed in between (each shard's count only grows, and an apply
    /// counts before it releases its row locks). Costs the commit path nothing shared:
    /// each count sits on its shard lock's line.
    pub fn applies(&self) -> u64 {
        self.shards.iter().map(|s| s.1.load(SeqCst)).sum()
    }

    /// The newest commit applied with every one before it (the watermark's SCN).
    pub fn applied_scn(&self) -> Scn {
        self.watermark.lock().expect("watermark poisoned").scn
    }

    /// Runs `read` on the shard of `key`, under its read lock. `read` must be short and
    /// must not lock a shard again (a queued writer would deadlock it).
    pub fn read_key<T>(&self, key: &[Value], read: impl FnOnce(&Shard) -> T) -> T {
        read(&self.read(shard_of(key)))
    }

    /// Runs `read` on any shard (every shard holds every table's schema).
    pub fn read_catalog<T>(&self, read: impl FnOnce(&Shard) -> T) -> T {
        read(&self.read(0))
    }

    /// Runs `read` with the shards of all of `keys` read-locked together (one consistent
    /// view of those keys).
    pub fn read_keys<T>(&self, keys: &[Key], read: impl FnOnce(&KeyShards<'_>) -> T) -> T {
        let mut set = ShardSet::default();
        for key in keys {
            set.add_key(key);
        }
        read(&KeyShards(set.iter().map(|i| (i, self.read(i))).collect()))
    }

    /// Applies changes that were never logged (a temporary table's, see `temp_tables`):
    /// as `apply`, without a commit to mark, so the watermark does not move and no
    /// checkpoint image is due for them.
    pub fn apply_unlogged(&self, shards: ShardSet, changes: &[Change]) -> DbResult<()> {
        self.apply_marking(shards, changes, None)
    }

    /// Applies a committed transaction's changes, which touch only `shards`, and marks
    /// commit `scn` (ending at `lsn`) applied.
    pub fn apply(&self, shards: ShardSet, changes: &[Change], scn: Scn, lsn: Lsn) -> DbResult<()> {
        self.apply_marking(shards, changes, Some((scn, lsn)))
    }

    /// `apply` and `apply_unlogged`: the changes under the shards' write locks, then the
    /// commit (if any) marked applied under them too.
    fn apply_marking(
        &self,
        shards: ShardSet,
        changes: &[Change],
        commit: Option<(Scn, Lsn)>,
    ) -> DbResult<()> {
        let mut locked = LockedShards(
            shards.iter().map(|i| (i, self.shards[i].0.write().expect("shard poisoned"))).collect(),
        );
        #[cfg(test)]
        if commit.is_some() && self.fail_next_apply.swap(false, SeqCst) && !changes.is_empty() {
            // Half applied, as a bug would leave it.
            apply_change(&mut locked, &changes[0])?;
            self.broken.store(true, SeqCst);
            return Err(crate::error::DbError::CorruptChange("a test failed this apply".into()));
        }
        for change in changes {
            if let Err(e) = apply_change(&mut locked, change) {
                // Marked under the shard locks: a snapshot taken after this apply sees the
                // mark, so no image is ever written of a half-applied commit.
                self.broken.store(true, SeqCst);
                return Err(e);
            }
        }
        for (index, _) in &locked.0 {
            self.shards[*index].1.fetch_add(1, SeqCst);
        }
        if let Some((scn, lsn)) = commit {
            // Under the shard locks: a snapshot sees the rows and the mark together.
            self.watermark.lock().expect("watermark poisoned").mark_applied(scn, lsn);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_integer_key_falls_in_the_same_shard_by_the_inline_hash_and_the_general_walk() {
        let mut seen = ShardSet::default();
        for i in (-1000..1000).chain([i64::MIN, i64::MAX]) {
            let key = [Value::Int(i)];
            assert_eq!(shard_of(&key), shard_of_any(&key), "key {i}");
            seen.add(shard_of(&key));
        }
        assert_eq!(seen, ShardSet::ALL, "2,002 integers reach every shard");
    }

    #[test]
    fn a_merge_of_shards_gives_every_key_once_in_key_order() {
        // Integer, text and two-column keys, each spread over several sources as the
        // shards spread them.
        let int = |i: i64| Key::from_elem(Value::Int(i), 1);
        let text = |i: i64| Key::from_elem(Value::Text(format!("k{i:05}")), 1);
        let pair = |i: i64| [Value::Int(i % 7), Value::Int(i)].into_iter().collect::<Key>();
        for make in [&int as &dyn Fn(i64) -> Key, &text, &pair] {
            let mut keys: Vec<Key> = (-300..300).map(|i| make(i * 7919 % 1000)).collect();
            keys.sort();
            keys.dedup();
            let row = Row::from(vec![Value::Null]);
            let mut parts: Vec<Vec<(Key, Row)>> = vec![Vec::new(); 5];
            for (n, k) in keys.iter().enumerate() {
                parts[(n * 31 + 3) % 5].push((k.clone(), row.clone()));
            }
            let sources: Vec<_> = parts.iter().map(|p| p.iter().map(|(k, r)| (k, r))).collect();
            let merged: Vec<Key> = merge(sources).map(|(k, _)| k.clone()).collect();
            assert_eq!(merged, keys);
        }
    }

    fn applied(order: &[u64]) -> DbState {
        let mut st = DbState::default();
        for &scn in order {
            st.mark_applied(Scn(scn), Lsn(scn * 100));
        }
        st
    }

    #[test]
    fn the_watermark_advances_over_commits_applied_ahead_of_it() {
        let st = applied(&[1, 3, 4, 6]);
        assert_eq!((st.scn, st.lsn), (Scn(1), Lsn(100)));
        assert_eq!(st.ahead, vec![(Scn(3), Lsn(300)), (Scn(4), Lsn(400)), (Scn(6), Lsn(600))]);
        assert!(st.has_applied(Scn(1)) && st.has_applied(Scn(4)) && st.has_applied(Scn(6)));
        assert!(!st.has_applied(Scn(2)) && !st.has_applied(Scn(5)) && !st.has_applied(Scn(7)));
        assert_eq!(st.newest_lsn(), Lsn(600));

        let mut st = st;
        st.mark_applied(Scn(2), Lsn(200));
        assert_eq!((st.scn, st.lsn), (Scn(4), Lsn(400)), "2 closes the gap up to 4");
        assert_eq!(st.ahead, vec![(Scn(6), Lsn(600))]);
        st.mark_applied(Scn(5), Lsn(500));
        assert_eq!((st.scn, st.lsn, st.ahead.len()), (Scn(6), Lsn(600), 0));
    }

    #[test]
    fn any_order_of_applies_ends_at_the_same_watermark() {
        // Every permutation of 1..=5: the watermark ends at 5 with nothing ahead.
        fn permutations(items: Vec<u64>) -> Vec<Vec<u64>> {
            if items.len() <= 1 {
                return vec![items];
            }
            let mut out = Vec::new();
            for i in 0..items.len() {
                let mut rest = items.clone();
                let first = rest.remove(i);
                for mut p in permutations(rest) {
                    p.insert(0, first);
                    out.push(p);
                }
            }
            out
        }
        for order in permutations((1..=5).collect()) {
            let st = applied(&order);
            assert_eq!((st.scn, st.lsn, st.ahead.len()), (Scn(5), Lsn(500), 0), "{order:?}");
        }
    }

    fn numbers() -> TableSchema {
        use crate::schema::Column;
        use crate::value::DataType;
        TableSchema::new(
            "n",
            vec![
                Column { name: "k".into(), ty: DataType::Int, nullable: false },
                Column { name: "v".into(), ty: DataType::Int, nullable: true },
            ],
            vec![0],
        )
        .unwrap()
    }

    fn insert(k: i64) -> Change {
        Change::Insert { table: "n".into(), row: Row::from(vec![Value::Int(k), Value::Int(k)]) }
    }

    fn key(k: i64) -> Key {
        Key::from_elem(Value::Int(k), 1)
    }

    #[test]
    fn equal_keys_share_a_shard_and_keys_spread_over_every_shard() {
        let mut used = ShardSet::default();
        for k in 0..1000 {
            assert_eq!(shard_of(&key(k)), shard_of(&key(k).clone()));
            used.add_key(&key(k));
        }
        assert_eq!(used, ShardSet::ALL);
        let text = |t: &str| [Value::Text(t.into())];
        assert_eq!(shard_of(&text("a somewhat long text key")), shard_of(&text("a somewhat long text key")));
    }

    #[test]
    fn the_shards_read_as_one_map_in_key_order() {
        let mut st = DbState::default();
        st.apply(&Change::CreateTable(numbers())).unwrap();
        // Keys in a scrambled order, so each shard gets a scattered subset.
        let keys: Vec<i64> = (0..500).map(|i| (i * 7919) % 1000).collect();
        for &k in &keys {
            st.apply(&insert(k)).unwrap();
        }
        let mut sorted = keys.clone();
        sorted.sort();
        let table = st.table("n").unwrap();
        let all: Vec<i64> =
            table.rows.keys().map(|k| if let Value::Int(i) = k[0] { i } else { unreachable!() }).collect();
        assert_eq!(all, sorted);
        assert_eq!(table.rows.len(), 500);
        let lo = key(300);
        let hi = key(400);
        let ranged: Vec<&Key> =
            table.rows.range((Bound::Included(&lo), Bound::Excluded(&hi))).map(|(k, _)| k).collect();
        let want: Vec<Key> = sorted.iter().filter(|&&k| (300..400).contains(&k)).map(|&k| key(k)).collect();
        assert_eq!(ranged, want.iter().collect::<Vec<_>>());
        assert!(table.rows.get(&key(keys[17])).is_some() && table.rows.get(&key(1001)).is_none());
        // A key that changes moves to its new shard.
        let moved = Change::Update {
            table: "n".into(),
            key: key(keys[0]),
            row: Row::from(vec![Value::Int(5000), Value::Int(0)]),
        };
        st.apply(&moved).unwrap();
        let table = st.table("n").unwrap();
        assert!(table.rows.get(&key(keys[0])).is_none());
        assert_eq!(table.rows.get(&key(5000)).map(|r| r[1].clone()), Some(Value::Int(0)));
    }

    /// The `checkpoint_image` fuzz target's first finding, on the redo's side: replayed
    /// redo whose row has fewer values than the table has columns used to panic (the key
    /// was indexed out of the row), and a value of another type entered the table.
    #[test]
    fn a_replayed_row_that_does_not_fit_its_table_is_corrupt_redo_not_a_panic() {
        let mut st = DbState::default();
        st.apply_recovered(&Change::CreateTable(numbers())).unwrap();
        let short = Change::Insert { table: "n".into(), row: Row::from(vec![]) };
        let e = st.apply_recovered(&short).unwrap_err();
        assert!(e.to_string().contains("has 0 values for its 2 columns"), "{e}");
        let typed = Change::Insert {
            table: "n".into(),
            row: Row::from(vec![Value::Int(1), Value::Text("x".into())]),
        };
        let e = st.apply_recovered(&typed).unwrap_err();
        assert!(e.to_string().contains("in column \"v\" of type BIGINT"), "{e}");
        let null_key = Change::Insert { table: "n".into(), row: Row::from(vec![Value::Null, Value::Int(1)]) };
        let e = st.apply_recovered(&null_key).unwrap_err();
        assert!(e.to_string().contains("NULL in NOT NULL column \"k\""), "{e}");
        st.apply_recovered(&insert(1)).unwrap();
        let short_update =
            Change::Update { table: "n".into(), key: key(1), row: Row::from(vec![Value::Int(1)]) };
        assert!(matches!(st.apply_recovered(&short_update), Err(DbError::CorruptChange(_))));
        assert_eq!(st.table("n").unwrap().rows.len(), 1, "nothing that failed entered the table");
    }

    #[test]
    fn an_image_row_that_does_not_fit_or_repeats_a_key_is_refused() {
        let mut st = DbState::default();
        st.apply(&Change::CreateTable(numbers())).unwrap();
        assert!(st.load_row("n", Row::from(vec![Value::Int(1)])).is_err());
        assert!(st.load_row("n", Row::from(vec![Value::Float(1.0), Value::Int(1)])).is_err());
        st.load_row("n", Row::from(vec![Value::Int(1), Value::Null])).unwrap();
        let e = st.load_row("n", Row::from(vec![Value::Int(1), Value::Int(2)])).unwrap_err();
        assert!(e.to_string().contains("two rows of table \"n\" have the key"), "{e}");
    }

    #[test]
    fn a_snapshot_never_sees_a_commit_without_its_mark_nor_a_mark_without_its_rows() {
        // Each commit inserts two rows (usually in two shards) while snapshots are taken:
        // a snapshot holds exactly the rows of the commits its watermark names.
        let mut initial = DbState::default();
        initial.apply(&Change::CreateTable(numbers())).unwrap();
        let live = Arc::new(LiveState::new(initial));
        let committers: Vec<_> = (0..2u64)
            .map(|t| {
                let live = live.clone();
                std::thread::spawn(move || {
                    for i in 0..500u64 {
                        let scn = 1 + i * 2 + t;
                        let changes = [insert(scn as i64), insert(-(scn as i64))];
                        let mut shards = ShardSet::default();
                        shards.add_key(&key(scn as i64));
                        shards.add_key(&key(-(scn as i64)));
                        live.apply(shards, &changes, Scn(scn), Lsn(scn * 10)).unwrap();
                    }
                })
            })
            .collect();
        let mut checked = 0;
        while committers.iter().any(|c| !c.is_finished()) || checked == 0 {
            let snap = live.snapshot();
            let rows = snap.table("n").unwrap().rows;
            for (k, _) in rows.iter() {
                let Value::Int(i) = k[0] else { unreachable!() };
                assert!(snap.has_applied(Scn(i.unsigned_abs())), "row {i} without its commit's mark");
            }
            let marked = snap.scn.0 as usize + snap.ahead.len();
            assert_eq!(rows.len(), 2 * marked, "marks without their rows");
            checked += 1;
        }
        for c in committers {
            c.join().unwrap();
        }
        assert_eq!(live.applied_scn(), Scn(1000));
    }

    #[test]
    #[should_panic(expected = "applied twice")]
    fn a_commit_applied_twice_is_a_bug() {
        applied(&[1, 3, 3]);
    }
}
