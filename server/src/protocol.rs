//! The PostgreSQL protocol after startup, run inside the connection's task
//! ([`SessionState`]): simple and extended query, transaction blocks, and the replies,
//! encoded into one buffer that the connection sends in one write per round trip.
//!
//! # Transactions
//! The db follows Oracle: a session's transaction starts with its first change and lasts
//! until COMMIT or ROLLBACK. PostgreSQL clients expect autocommit: outside a transaction
//! block (BEGIN ... COMMIT) each Query message, and in the extended protocol everything up
//! to a Sync, is one implicit transaction, committed at its end in the session's commit
//! mode (so `SET synchronous_commit = off` and `ALTER SESSION SET commit_wait = NOWAIT`
//! apply) and rolled back if a statement in it fails. Inside a block a failed statement
//! leaves the block failed: everything but ROLLBACK (or COMMIT, which then rolls back)
//! gets 25P02 until the block ends.
//!
//! # Settings and savepoints
//! SET, RESET and `SELECT set_config(...)` run here (`client_sql`), for the server's
//! client settings and the db's parameters alike, and are undone as PostgreSQL does when
//! their transaction rolls back (`settings_txn`); SET LOCAL ends with its transaction.
//! The db session is told every client setting, for `current_setting()`.
//! `SAVEPOINT name` marks the db transaction (`Session::savepoint`) and keeps the
//! settings and open cursors of the moment; `ROLLBACK TO name` undoes the db's changes,
//! the SETs and the cursors opened since, and is accepted in a failed block, which it
//! makes usable again (what psycopg's nested transactions and PgJDBC's savepoints rely
//! on). Savepoints need a transaction block (25P01).
//!
//! # A prepared query's columns
//! Drivers cache the RowDescription of a prepared statement and run it again without a
//! Describe (PgJDBC's named statements). A run whose columns differ from the ones the
//! client was last told (the table was created again by another session) fails with
//! PostgreSQL's "cached plan must not change result type" (0A000, routine
//! RevalidateCachedQuery), on which PgJDBC prepares the statement again; a run whose
//! portal was described (psycopg describes every portal) is sent as described.
//!
//! # Cursors and COPY
//! A DECLAREd cursor is a portal of the same name (`cursors`): it ends with its
//! transaction unless declared WITH HOLD and that transaction commits. A portal of a
//! statement the server runs itself that returns rows (`FETCH n FROM c`, SHOW, a catalog
//! query) keeps its rows when an Execute's row limit leaves some, and hands them out in
//! the following Executes (PortalSuspended until the last, then its own tag), as
//! PostgreSQL holds a utility statement's result in its portal. `COPY ... FROM
//! STDIN` puts the session in copy-in mode ([`CopyIn`]): CopyData messages, which may
//! arrive over many calls, go through the decoder to the db's bulk load until CopyDone
//! (`COPY n`) or CopyFail (57014); meanwhile Flush and Sync are ignored and any other
//! message aborts the copy, as in PostgreSQL. A copy started by a Query message resumes
//! that message's remaining statements when it ends.
//!
//! # Notices
//! A statement's notices (the db's warnings) go out before its CommandComplete: a run of
//! db statements given to the db as one call ends after a statement that may raise one
//! (ALTER SESSION/SYSTEM SET), so its notices can be placed.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use bytes::{BufMut, BytesMut};
use db::params::{SessionParameter, SessionParameters};
use db::sql::{
    parse_special, split_statements, BulkLoad, Cursor, Piece, PreparedStatement, QueryResult, ResultColumn,
    Special, Tag,
};
use db::{DataType, DbError, Session, Value};
use pgwire::messages::copy::{CopyDone, CopyInResponse, CopyOutResponse};
use pgwire::messages::data::{FieldDescription, NoData, ParameterDescription, RowDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete, PortalSuspended,
    TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ErrorResponse, NoticeResponse, ReadyForQuery, TransactionStatus,
};
use pgwire::messages::startup::ParameterStatus;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use redo::CommitOptions;

use crate::client_sql::{self, ClientSettings, ClientStatement, SavepointStatement, SettingError};
use crate::copy::{self, CopyStatement, DecodedRow, Direction, Source};
use crate::cursors::{CursorStatement, Declare, Fetch};
use crate::settings_txn::{SettingKey, SettingValue, TransactionSettings};
use crate::types::{self, format_of, oid_of, put_field, read_parameter};

/// An error for the client: SQLSTATE, message and, for syntax errors, the 1-based
/// character position in the query text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlError {
    pub sqlstate: String,
    pub message: String,
    pub position: Option<usize>,
    /// PostgreSQL's DETAIL and HINT, where the error has them (boxed: few errors do, and
    /// errors travel by value).
    pub notes: Option<Box<ErrorNotes>>,
    /// Where it happened, beyond the statement (`COPY t, line 3`): PostgreSQL's CONTEXT.
    pub context: Option<String>,
    /// PostgreSQL's function that raises this error, for the few errors that drivers
    /// recognise by it (PgJDBC prepares a statement again after `RevalidateCachedQuery`).
    pub routine: Option<&'static str>,
}

/// More about an error than its message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorNotes {
    /// More about it, line by line (PostgreSQL's DETAIL: the objects that depend on one a
    /// DROP would remove).
    pub detail: Option<String>,
    /// What to do about it (PostgreSQL's HINT).
    pub hint: Option<String>,
}

impl SqlError {
    pub fn new(sqlstate: &str, message: impl Into<String>) -> SqlError {
        SqlError {
            sqlstate: sqlstate.to_string(),
            message: message.into(),
            position: None,
            notes: None,
            context: None,
            routine: None,
        }
    }

    pub fn with_context(mut self, context: String) -> SqlError {
        self.context = Some(context);
        self
    }

    /// A prepared statement's result columns changed since the client was told them (its
    /// table was dropped and created again): PostgreSQL's error, which drivers that cache
    /// descriptions recognise by its routine and answer by preparing the statement again.
    fn result_changed() -> SqlError {
        SqlError {
            routine: Some("RevalidateCachedQuery"),
            ..SqlError::new("0A000", "cached plan must not change result type")
        }
    }

    fn aborted_transaction() -> SqlError {
        SqlError::new(
            "25P02",
            "current transaction is aborted, commands ignored until end of transaction block",
        )
    }

    /// This error with its syntax position moved `chars` characters on (the statement
    /// was run from that offset of the client's text).
    fn shifted(mut self, chars: usize) -> SqlError {
        if let Some(p) = &mut self.position {
            *p += chars;
        }
        self
    }
}

impl From<DbError> for SqlError {
    fn from(e: DbError) -> SqlError {
        match &e {
            DbError::Syntax { message, position } => SqlError {
                sqlstate: e.sqlstate().to_string(),
                message: format!("syntax error: {message}"),
                position: (*position > 0).then_some(*position),
                notes: None,
                context: None,
                routine: None,
            },
            _ => {
                let (detail, hint) = (e.detail(), e.hint().map(str::to_string));
                SqlError {
                    position: e.position(),
                    notes: (detail.is_some() || hint.is_some())
                        .then(|| Box::new(ErrorNotes { detail, hint })),
                    ..SqlError::new(e.sqlstate(), e.to_string())
                }
            }
        }
    }
}

impl From<SettingError> for SqlError {
    fn from(e: SettingError) -> SqlError {
        SqlError::new(e.sqlstate, e.message)
    }
}

/// When a statement's CommandComplete is reported, relative to its implicit
/// transaction's commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Completion {
    /// The simple query protocol: after the commit, as PostgreSQL does (a failed commit
    /// takes back the last statement's completion).
    AfterCommit,
    /// The extended protocol: at Execute, before the commit at Sync (as PostgreSQL).
    AtExecute,
}

/// The replies to one batch of client messages, encoded.
#[derive(Default)]
pub struct Reply {
    buf: BytesMut,
    scratch: Vec<u8>,
    /// Where the last CommandComplete starts and ends in `buf`, so that it can be taken
    /// back while it is the last message (see `take_back_last_complete`).
    last_complete: Option<(usize, usize)>,
}

impl Reply {
    pub fn message(&mut self, message: PgWireBackendMessage) {
        if let Err(e) = message.encode(&mut self.buf) {
            // Only a message over pgwire's size limits fails to encode; tell the client.
            log::error!("could not encode a reply: {e}");
            let error = error_response("ERROR", &SqlError::new("54000", format!("reply too large: {e}")));
            error.encode(&mut self.buf).expect("a short error encodes");
        }
    }

    pub fn take(&mut self) -> BytesMut {
        self.last_complete = None;
        self.buf.split()
    }

    /// Removes the last CommandComplete if nothing came after it and it was not sent yet:
    /// a simple query's implicit commit that fails reports its error instead of the last
    /// statement's completion, as PostgreSQL does (it commits before it reports the last
    /// command complete, so a client reads a completion or an error, not one then the
    /// other). Returns whether it was removed.
    fn take_back_last_complete(&mut self) -> bool {
        match self.last_complete.take() {
            Some((start, end)) if self.buf.len() == end => {
                self.buf.truncate(start);
                true
            }
            _ => false,
        }
    }

    fn error(&mut self, error: &SqlError) {
        self.message(error_response("ERROR", error));
    }

    fn notice(&mut self, notice: db::Notice) {
        self.notice_response(notice.severity.name(), notice.sqlstate, notice.message, notice.detail);
    }

    fn warning(&mut self, sqlstate: &str, text: String) {
        self.notice_response("WARNING", sqlstate, text, None);
    }

    fn notice_response(&mut self, severity: &str, sqlstate: &str, text: String, detail: Option<String>) {
        let mut fields =
            vec![(b'S', severity.into()), (b'V', severity.into()), (b'C', sqlstate.into()), (b'M', text)];
        if let Some(detail) = detail {
            fields.push((b'D', detail));
        }
        self.message(PgWireBackendMessage::NoticeResponse(NoticeResponse::new(fields)));
    }

    fn complete(&mut self, tag: impl Into<Tag>) {
        let start = self.buf.len();
        self.message(PgWireBackendMessage::CommandComplete(CommandComplete::new(tag.into().into_owned())));
        self.last_complete = Some((start, self.buf.len()));
    }

    pub fn parameter_status(&mut self, name: &str, value: String) {
        self.message(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(name.to_string(), value)));
    }

    fn row_description(&mut self, columns: &[ResultColumn], formats: &[i16]) {
        let fields = columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let (size, modifier) = types::size_and_modifier(c.ty);
                FieldDescription::new(
                    c.name.clone(),
                    0,
                    0,
                    oid_of(c.ty),
                    size,
                    modifier,
                    format_of(formats, i),
                )
            })
            .collect();
        self.message(PgWireBackendMessage::RowDescription(RowDescription::new(fields)));
    }

    /// One DataRow of columns of types `types`, written straight into the buffer (no
    /// intermediate message).
    fn data_row(&mut self, row: &[Value], types: &[Option<DataType>], formats: &[i16]) {
        let start = self.buf.len();
        self.buf.put_u8(b'D');
        self.buf.put_i32(0);
        self.buf.put_i16(row.len() as i16);
        for (i, value) in row.iter().enumerate() {
            let ty = types.get(i).copied().flatten();
            put_field(value, ty, format_of(formats, i), &mut self.scratch, &mut self.buf);
        }
        let length = (self.buf.len() - start - 1) as i32;
        self.buf[start + 1..start + 5].copy_from_slice(&length.to_be_bytes());
    }

    /// One CopyData message, written straight into the buffer.
    fn copy_data(&mut self, data: &[u8]) {
        self.buf.put_u8(b'd');
        self.buf.put_i32(data.len() as i32 + 4);
        self.buf.put_slice(data);
    }

    /// DataRows of columns of types `types`.
    fn rows(&mut self, types: &[Option<DataType>], rows: &[Vec<Value>], formats: &[i16]) {
        for row in rows {
            self.data_row(row, types, formats);
        }
    }

    /// DataRows of `columns`.
    fn column_rows(&mut self, columns: &[ResultColumn], rows: &[Vec<Value>], formats: &[i16]) {
        let types: Vec<Option<DataType>> = columns.iter().map(|c| c.ty).collect();
        self.rows(&types, rows, formats);
    }
}

pub fn error_response(severity: &str, error: &SqlError) -> PgWireBackendMessage {
    let mut fields = vec![
        (b'S', severity.to_string()),
        (b'V', severity.to_string()),
        (b'C', error.sqlstate.clone()),
        (b'M', error.message.clone()),
    ];
    if let Some(notes) = &error.notes {
        if let Some(detail) = &notes.detail {
            fields.push((b'D', detail.clone()));
        }
        if let Some(hint) = &notes.hint {
            fields.push((b'H', hint.clone()));
        }
    }
    if let Some(position) = error.position {
        fields.push((b'P', position.to_string()));
    }
    if let Some(context) = &error.context {
        fields.push((b'W', context.clone()));
    }
    if let Some(routine) = error.routine {
        fields.push((b'R', routine.to_string()));
    }
    PgWireBackendMessage::ErrorResponse(ErrorResponse::new(fields))
}

/// What a prepared statement is.
enum StatementKind {
    Empty,
    Client(ClientStatement),
    Db(PreparedStatement),
    /// DECLARE ... CURSOR FOR query: the query prepared, its parameters the statement's.
    Declare {
        declare: Declare,
        query: PreparedStatement,
    },
}

/// A statement prepared by Parse.
struct ServerStatement {
    kind: StatementKind,
    /// Parameter types the client declared (0: left to the server).
    declared: Vec<u32>,
    /// Parameter types the statement gives.
    inferred: Vec<Option<DataType>>,
    /// COMMIT, END, ROLLBACK or ABORT: allowed in a failed transaction block, which it
    /// ends.
    ends_transaction: bool,
    /// A query's result columns as the client last learnt them: from a Describe of the
    /// statement or of one of its portals, else from its first run. Drivers cache them
    /// and run the statement again without a Describe (PgJDBC's named statements), so a
    /// run without one is checked against them and encoded with their types.
    result: Mutex<Option<Vec<ResultColumn>>>,
}

impl ServerStatement {
    /// Whether it may run in a failed transaction block: a statement that ends the
    /// block, or ROLLBACK TO a savepoint, which makes it usable again.
    fn allowed_in_failed_block(&self) -> bool {
        self.ends_transaction
            || matches!(
                self.kind,
                StatementKind::Client(ClientStatement::Savepoint(SavepointStatement::RollbackTo(_)))
            )
    }

    fn parameter_count(&self) -> usize {
        self.declared.len().max(self.inferred.len())
    }

    fn known_result(&self) -> std::sync::MutexGuard<'_, Option<Vec<ResultColumn>>> {
        self.result.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The client is told `columns` (a RowDescription for the statement or a portal).
    fn tell_result(&self, columns: &[ResultColumn]) {
        *self.known_result() = Some(columns.to_vec());
    }

    /// The types to encode the rows of a run that was not described with: the ones the
    /// client knows (these columns, if it knows none yet). A run whose columns differ
    /// from them in number, name or type (the table was dropped and created again with
    /// other columns) fails with PostgreSQL's error for it, rather than sending rows the
    /// client would decode by the old columns; a column of no known type (all NULL)
    /// matches any.
    fn undescribed_run(&self, columns: &[ResultColumn]) -> Result<Vec<Option<DataType>>, SqlError> {
        let mut known = self.known_result();
        let known = known.get_or_insert_with(|| columns.to_vec());
        let same = known.len() == columns.len()
            && known.iter().zip(columns).all(|(k, c)| {
                k.name == c.name && (k.ty.is_none() || c.ty.is_none() || oid_of(k.ty) == oid_of(c.ty))
            });
        if same {
            Ok(known.iter().map(|c| c.ty).collect())
        } else {
            Err(SqlError::result_changed())
        }
    }

    fn parameter_oids(&self) -> Vec<u32> {
        (0..self.parameter_count())
            .map(|i| match self.declared.get(i) {
                Some(&oid) if oid != types::OID_UNSPECIFIED => oid,
                _ => oid_of(self.inferred.get(i).copied().flatten()),
            })
            .collect()
    }
}

enum PortalState {
    /// Bound, not run yet.
    Ready,
    /// A query run, its rows being fetched.
    Rows { cursor: Cursor },
    /// A statement the server ran itself (FETCH, SHOW, a catalog query), whose rows an
    /// Execute's row limit left: handed out by the next Executes, then its `tag`.
    Held { columns: Vec<ResultColumn>, rows: VecDeque<Vec<Value>>, tag: Tag },
    /// Run to its end.
    Done,
}

struct Portal {
    statement: Arc<ServerStatement>,
    params: Vec<Value>,
    result_formats: Vec<i16>,
    state: PortalState,
    /// Set for a DECLAREd cursor.
    cursor: Option<SqlCursor>,
    /// Its columns were sent in a RowDescription (Describe of the portal): its rows are
    /// encoded as described, whatever the client knew of its statement before.
    described: bool,
}

/// What a DECLAREd cursor adds to its portal.
struct SqlCursor {
    /// The DECLARE statement, as the client sent it (pg_cursors.statement).
    statement: String,
    /// DECLARE ... BINARY CURSOR.
    binary: bool,
    /// When it was declared (pg_cursors.creation_time).
    created: i64,
    /// WITH HOLD: kept when its transaction commits.
    hold: bool,
    /// Its transaction committed: kept when a later one rolls back.
    committed: bool,
}

/// What a statement the server runs itself gives back.
enum ClientOutcome {
    /// As a db statement's.
    Result(QueryResult),
    /// Rows with their own tag (FETCH n, a catalog query's SELECT n), in `formats`.
    Rows { columns: Vec<ResultColumn>, rows: Vec<Vec<Value>>, formats: Vec<i16>, tag: Tag },
    /// COPY FROM STDIN: copy-in mode starts.
    CopyIn(Box<CopyIn>),
}

/// Where a COPY FROM STDIN came from, to go on when it ends.
enum CopyOrigin {
    /// A Query message: its statements after the COPY run when the copy ends.
    Simple { sql: String, next: usize },
    /// An Execute: the extended protocol goes on to Sync.
    Extended,
}

/// Copy-in mode: the rows of a COPY FROM STDIN arriving in CopyData messages.
struct CopyIn {
    table: String,
    columns: usize,
    decoder: copy::Decoder,
    /// None once the load failed (it is undone at once).
    load: Option<BulkLoad>,
    /// The first error: later data is dropped, and the error is reported when the client
    /// ends the copy (CopyDone or CopyFail).
    error: Option<SqlError>,
    origin: CopyOrigin,
    /// Reused for each CopyData's rows.
    rows: Vec<DecodedRow>,
}

/// Whether a run of a Query message's statements finished or left the session copying.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Done,
    Copying,
    /// The Query's one statement stopped at a row lock: it runs again once the wait ends
    /// (`handle_messages`).
    LockWait,
}

fn ends_transaction(sql: &str) -> bool {
    matches!(parse_special(sql), Some(Ok(Special::Commit { .. } | Special::Rollback)))
}

fn rolls_back_to_savepoint(sql: &str) -> bool {
    matches!(parse_special(sql), Some(Ok(Special::RollbackToSavepoint(_))))
}

/// A savepoint as the server keeps it, beside the db's undo point: what ROLLBACK TO puts
/// back of the settings and cursors.
struct ServerSavepoint {
    name: String,
    /// The transaction's record of its SETs at the savepoint.
    settings_txn: TransactionSettings,
    /// The values of every setting at the savepoint.
    client_settings: ClientSettings,
    db_parameters: SessionParameters,
    /// The portals open at the savepoint: cursors declared after it close on ROLLBACK TO.
    portals: HashSet<String>,
}

impl ServerSavepoint {
    /// The value `key` had at the savepoint.
    fn value(&self, key: SettingKey) -> SettingValue {
        match key {
            SettingKey::Client(name) => {
                SettingValue::Client(self.client_settings.get(name).unwrap_or_default().to_string())
            }
            SettingKey::Db(_) => SettingValue::Db(self.db_parameters),
        }
    }
}

fn outside_block(statement: &str) -> SqlError {
    SqlError::new("25P01", format!("{statement} can only be used in transaction blocks"))
}

/// Whether a statement may leave notices for the client (the db's warnings come from
/// ALTER SESSION/SYSTEM SET, the deprecated commit_write for one).
fn raises_notices(piece: &Piece) -> bool {
    let alter_set = |sql: &str| matches!(parse_special(sql), Some(Ok(Special::AlterSet { .. })));
    match piece {
        Piece::Statement(text) => alter_set(&text.text),
        Piece::Block { statements, .. } => statements.iter().any(|t| alter_set(&t.text)),
    }
}

fn no_cursor(name: &str) -> SqlError {
    SqlError::new("34000", format!("cursor \"{name}\" does not exist"))
}

/// The number of characters before byte `offset` of `text`.
fn chars_before(text: &str, offset: usize) -> usize {
    text[..offset].chars().count()
}

/// What the connection awaits after a batch's handling, before the rest of the batch.
pub enum Awaited {
    Nothing,
    /// A WAIT commit's `log file sync`: nothing of the round trip is sent before it ends.
    Durability(db::DurabilityWait),
    /// An Execute's row lock wait (the Execute is back at the front of the batch).
    RowLock(db::RowLockWait),
}

/// A connection's session and protocol state; lives in the connection's task.
pub struct SessionState {
    session: Session,
    settings: ClientSettings,
    /// Inside BEGIN ... COMMIT/ROLLBACK.
    in_block: bool,
    /// A statement failed inside the block: only its end is accepted.
    failed: bool,
    /// An extended-protocol message failed: the rest up to Sync is skipped.
    discard_until_sync: bool,
    statements: HashMap<String, Arc<ServerStatement>>,
    portals: HashMap<String, Portal>,
    /// A Query message of several statements is running outside a block: an implicit
    /// transaction block, where DECLARE without HOLD is allowed (as in PostgreSQL).
    implicit_block: bool,
    copy_in: Option<Box<CopyIn>>,
    /// The SETs of the open transaction, undone or kept when it ends.
    settings_txn: TransactionSettings,
    /// The open transaction's savepoints, oldest first (the db keeps its own undo points).
    savepoints: Vec<ServerSavepoint>,
    out: Reply,
}

impl SessionState {
    /// The database session this connection runs on.
    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn new(mut session: Session, settings: ClientSettings) -> SessionState {
        for (key, value) in settings.all() {
            session.set_client_setting(key, value);
        }
        session.set_database_name(settings.database());
        SessionState {
            session,
            settings,
            in_block: false,
            failed: false,
            discard_until_sync: false,
            statements: HashMap::new(),
            portals: HashMap::new(),
            implicit_block: false,
            copy_in: None,
            settings_txn: TransactionSettings::default(),
            savepoints: Vec::new(),
            out: Reply::default(),
        }
    }

    /// Applies the startup packet's `options` (`client_sql::startup_options`) as SETs;
    /// the first that fails fails the session's start.
    pub fn apply_startup_options(&mut self, options: &[(String, String)]) -> Result<(), SqlError> {
        let applied = options.iter().try_for_each(|(name, value)| self.set_setting(name, Some(value), false));
        self.settings_transaction_ended(applied.is_ok());
        // The settings are reported with the others at startup, not as changes.
        self.out.take();
        applied
    }

    /// The settings reported at startup, after the startup options.
    pub fn reported_settings(&self) -> Vec<(&'static str, String)> {
        self.settings.reported()
    }

    pub fn status(&self) -> TransactionStatus {
        if self.failed {
            TransactionStatus::Error
        } else if self.in_block || self.session.in_transaction() {
            TransactionStatus::Transaction
        } else {
            TransactionStatus::Idle
        }
    }

    /// Whether a COPY FROM STDIN is taking the client's data: its request goes on after
    /// CopyInResponse is sent, until the data's end.
    pub fn copying_in(&self) -> bool {
        self.copy_in.is_some()
    }

    /// The session, to open and close its client calls (`Session::client_call_begin`).
    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }

    /// Handles a batch of client messages in order; returns the encoded replies and what
    /// the connection must await before it goes on with the rest of the batch. It is the
    /// server's work on the client's open request (`Session::begin_server_work`): its CPU
    /// is the session's `DB CPU`, whatever the messages are (Parse, Bind and Describe as
    /// well as Execute, a COPY's data, a failed or cancelled statement).
    ///
    /// An Execute, or a Query of one statement, that stopped at a row lock
    /// (`db::RowLockWait`) stays at the front of the batch: once the connection has
    /// awaited the wait, the next call ends it and runs the message again (or answers it
    /// with the cancel or timeout that ended it).
    pub fn handle_messages(
        &mut self,
        messages: &mut std::collections::VecDeque<PgWireFrontendMessage>,
    ) -> (BytesMut, Awaited) {
        // The lock wait is not the work's: ended before the work starts.
        let waited = self.session.has_lock_wait().then(|| self.session.end_lock_wait());
        let work = self.session.begin_server_work();
        // Values are read and written in the session's time zone.
        self.session.time_zone().make_current();
        if let Some(Err(e)) = waited {
            // The statement failed in its wait (a cancel, its timeout): its message is
            // answered with the error, as a failed run of it would be.
            match messages.pop_front() {
                Some(PgWireFrontendMessage::Query(_)) => {
                    self.out.error(&e.into());
                    self.after_error();
                    self.end_query();
                }
                other => {
                    debug_assert!(
                        matches!(other, Some(PgWireFrontendMessage::Execute(_))),
                        "the message that waited"
                    );
                    self.extended(|_| Err(e.into()));
                }
            }
        }
        let mut awaited = Awaited::Nothing;
        while let Some(front) = messages.front() {
            // A Query or an Execute is handled in place: one that stops at a row lock
            // stays at the front, to run again once its wait ends.
            let in_place = self.copy_in.is_none() && !self.discard_until_sync;
            match front {
                PgWireFrontendMessage::Query(query) if in_place => self.simple_query(&query.query),
                PgWireFrontendMessage::Execute(execute) if in_place => self.extended(|s| s.execute(execute)),
                _ => {
                    let message = messages.pop_front().expect("a message at the front");
                    self.handle_message(message);
                    if self.session.has_durability_wait() {
                        break;
                    }
                    continue;
                }
            }
            if self.session.has_lock_wait() {
                awaited = Awaited::RowLock(self.session.lock_wait().expect("a lock wait was left"));
                break;
            }
            messages.pop_front();
            // A commit that must wait for durability left its wait: the connection awaits
            // it before the next message runs and before anything is sent.
            if self.session.has_durability_wait() {
                break;
            }
        }
        // The work ends first: the wait is timed from its end.
        self.session.end_server_work(work);
        if let Some(durability) = self.session.take_durability_wait() {
            debug_assert!(matches!(awaited, Awaited::Nothing));
            awaited = Awaited::Durability(durability);
        }
        (self.out.take(), awaited)
    }

    fn handle_message(&mut self, message: PgWireFrontendMessage) {
        {
            if self.copy_in.is_some() {
                self.copy_message(message);
                return;
            }
            if self.discard_until_sync && !matches!(message, PgWireFrontendMessage::Sync(_)) {
                return;
            }
            match message {
                PgWireFrontendMessage::Query(query) => self.simple_query(&query.query),
                PgWireFrontendMessage::Parse(parse) => self.extended(|s| s.parse(parse)),
                PgWireFrontendMessage::Bind(bind) => self.extended(|s| s.bind(bind)),
                PgWireFrontendMessage::Describe(describe) => self.extended(|s| s.describe(describe)),
                PgWireFrontendMessage::Execute(execute) => self.extended(|s| s.execute(&execute)),
                PgWireFrontendMessage::Close(close) => self.extended(|s| s.close(close)),
                PgWireFrontendMessage::Sync(_) => self.sync(),
                PgWireFrontendMessage::Flush(_) => {}
                // The rest of a COPY's data after it failed: dropped, as PostgreSQL does.
                PgWireFrontendMessage::CopyData(_)
                | PgWireFrontendMessage::CopyDone(_)
                | PgWireFrontendMessage::CopyFail(_) => {}
                other => self.extended(|_| {
                    Err(SqlError::new("08P01", format!("unexpected message {}", message_name(&other))))
                }),
            }
        }
    }

    /// The statement's notices that `client_min_messages` lets through.
    fn send_notices(&mut self) {
        for notice in self.session.take_notices() {
            if self.settings.sends(notice.severity) {
                self.out.notice(notice);
            }
        }
    }

    /// After a failed statement: a block becomes failed; an implicit transaction is
    /// rolled back.
    fn after_error(&mut self) {
        if self.in_block {
            self.failed = true;
        } else {
            self.end_transaction_rollback();
        }
    }

    fn end_transaction_rollback(&mut self) {
        self.session.rollback();
        self.in_block = false;
        self.failed = false;
        self.close_portals(false, false);
        self.settings_transaction_ended(false);
    }

    /// The transaction ended: its SETs are kept or undone, its savepoints go.
    fn settings_transaction_ended(&mut self, committed: bool) {
        self.session.transaction_ended();
        self.savepoints.clear();
        for (key, value) in self.settings_txn.finish(committed) {
            self.put_back(key, &value);
        }
    }

    /// Gives setting `key` the value `value` (from the setting's past), telling the
    /// client of a reported setting that changes.
    fn put_back(&mut self, key: SettingKey, value: &SettingValue) {
        match (key, value) {
            (SettingKey::Client(name), SettingValue::Client(value)) => {
                if self.settings.get(name) != Some(value.as_str()) {
                    if let Some((reported, value)) = self.settings.restore(name, value) {
                        self.out.parameter_status(reported, value);
                    }
                    self.session.set_client_setting(name, value);
                }
            }
            (SettingKey::Db(parameter), SettingValue::Db(saved)) => {
                let current = self.session.session_parameters();
                let restored = current.with(parameter, saved);
                if restored != current {
                    self.session.restore_session_parameters(restored);
                }
            }
            (key, value) => unreachable!("setting {key:?} given a value of another kind: {value:?}"),
        }
    }

    /// `SET [LOCAL] name = value`, or `RESET name` (`value` None), of a client setting
    /// or a db parameter, recorded for the transaction (see `settings_txn`).
    fn set_setting(&mut self, name: &str, value: Option<&str>, local: bool) -> Result<(), SqlError> {
        if let Some(key) = client_sql::client_setting_key(name) {
            let before = self.settings.get(key).unwrap_or_default().to_string();
            let status = match value {
                Some(value) => self.settings.set(name, value)?,
                None => self.settings.reset(name)?,
            };
            if let Some((reported, value)) = status {
                self.out.parameter_status(reported, value);
            }
            let after = self.settings.get(key).unwrap_or_default().to_string();
            self.session.set_client_setting(key, &after);
            let (before, after) = (SettingValue::Client(before), SettingValue::Client(after));
            self.settings_txn.record(SettingKey::Client(key), before, after, local);
            return Ok(());
        }
        let before = self.session.session_parameters();
        let result = match value {
            Some(value) => self.session.set_setting(name, value),
            None => self.session.reset_setting(name),
        };
        self.send_notices();
        result?;
        let after = self.session.session_parameters();
        for &parameter in SessionParameter::set_by(name) {
            self.settings_txn.record(
                SettingKey::Db(parameter),
                SettingValue::Db(before),
                SettingValue::Db(after),
                local,
            );
        }
        Ok(())
    }

    /// Whether a transaction block is open: BEGIN's, or a multi-statement Query's.
    fn in_transaction_block(&self) -> bool {
        self.in_block || self.implicit_block
    }

    /// SAVEPOINT, ROLLBACK TO, RELEASE: the db's undo point and the server's record.
    fn run_savepoint(&mut self, statement: &SavepointStatement) -> Result<&'static str, SqlError> {
        let verb = match statement {
            SavepointStatement::Define(_) => "SAVEPOINT",
            SavepointStatement::RollbackTo(_) => "ROLLBACK TO SAVEPOINT",
            SavepointStatement::Release(_) => "RELEASE SAVEPOINT",
        };
        // Not in a multi-statement Query's implicit block either, as in PostgreSQL: an
        // error there aborts the whole message, which a savepoint could not undo.
        if !self.in_block {
            return Err(outside_block(verb));
        }
        let index = |savepoints: &[ServerSavepoint], name: &str| {
            savepoints
                .iter()
                .rposition(|s| s.name == name)
                .ok_or_else(|| SqlError::from(DbError::NoSuchSavepoint(name.to_string())))
        };
        match statement {
            SavepointStatement::Define(name) => {
                self.session.savepoint(name);
                self.savepoints.push(ServerSavepoint {
                    name: name.clone(),
                    settings_txn: self.settings_txn.clone(),
                    client_settings: self.settings.clone(),
                    db_parameters: self.session.session_parameters(),
                    portals: self.portals.keys().cloned().collect(),
                });
                Ok("SAVEPOINT")
            }
            SavepointStatement::RollbackTo(name) => {
                let index = index(&self.savepoints, name)?;
                self.session.rollback_to_savepoint(name)?;
                self.savepoints.truncate(index + 1);
                let savepoint = &self.savepoints[index];
                let values: Vec<(SettingKey, SettingValue)> =
                    self.settings_txn.keys().map(|key| (key, savepoint.value(key))).collect();
                self.settings_txn = savepoint.settings_txn.clone();
                let portals = savepoint.portals.clone();
                for (key, value) in values {
                    self.put_back(key, &value);
                }
                self.portals.retain(|name, portal| portal.cursor.is_none() || portals.contains(name));
                self.sync_open_cursors();
                self.failed = false;
                Ok("ROLLBACK")
            }
            SavepointStatement::Release(name) => {
                let index = index(&self.savepoints, name)?;
                self.session.release_savepoint(name)?;
                self.savepoints.truncate(index);
                Ok("RELEASE")
            }
        }
    }

    /// A transaction ended: its portals go, but a WITH HOLD cursor stays once its
    /// transaction has committed. `keep_unnamed` keeps the unnamed portal (a COMMIT run
    /// from it in a pipeline).
    fn close_portals(&mut self, committed: bool, keep_unnamed: bool) {
        let mut cursor_closed = false;
        self.portals.retain(|name, portal| match &mut portal.cursor {
            Some(cursor) if cursor.hold && (committed || cursor.committed) => {
                cursor.committed = true;
                true
            }
            cursor => {
                cursor_closed |= cursor.is_some();
                keep_unnamed && name.is_empty()
            }
        });
        if cursor_closed {
            self.sync_open_cursors();
        }
    }

    fn track_tag(&mut self, tag: &str) {
        match tag {
            "BEGIN" => self.in_block = true,
            "COMMIT" | "ROLLBACK" => {
                self.in_block = false;
                self.close_portals(tag == "COMMIT", true);
                self.settings_transaction_ended(tag == "COMMIT");
            }
            _ => {}
        }
    }

    /// Ends an implicit transaction: commits what it changed. Returns whether it
    /// committed (or had nothing to commit). A failed commit of a simple query
    /// (`Completion::AfterCommit`) takes back the last statement's CommandComplete.
    fn autocommit(&mut self, completion: Completion) -> bool {
        if self.in_block || self.failed {
            return !self.failed;
        }
        let committed = !(self.session.in_transaction() || self.session.has_on_commit_actions()) || {
            let committed = match self.session.commit(CommitOptions::DEFAULT) {
                Ok(_) => true,
                Err(e) => {
                    if completion == Completion::AfterCommit {
                        self.out.take_back_last_complete();
                    }
                    self.out.error(&e.into());
                    self.session.rollback();
                    false
                }
            };
            self.send_notices();
            committed
        };
        self.settings_transaction_ended(committed);
        committed
    }

    // -----------------------------------------------------------------------------------
    // Simple query
    // -----------------------------------------------------------------------------------

    fn simple_query(&mut self, sql: &str) {
        // As in PostgreSQL, a simple query replaces the unnamed statement and portal.
        self.statements.remove("");
        self.portals.remove("");
        match split_statements(sql) {
            Err(e) => {
                self.out.error(&e.into());
                self.after_error();
            }
            Ok(pieces) if pieces.is_empty() => {
                self.out.message(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()))
            }
            Ok(pieces) => {
                self.implicit_block = pieces.len() > 1 && !self.in_block;
                match self.continue_query(sql, &pieces, 0) {
                    // The rest of the message runs when the copy ends.
                    Flow::Copying => return,
                    // The whole message runs again when the wait ends.
                    Flow::LockWait => return,
                    Flow::Done => {}
                }
            }
        }
        self.end_query();
    }

    /// Runs a Query message's statements from `next`; an error ends the message.
    fn continue_query(&mut self, sql: &str, pieces: &[Piece], next: usize) -> Flow {
        match self.run_pieces(sql, pieces, next) {
            Ok(flow) => flow,
            Err(e) => {
                self.out.error(&e);
                self.after_error();
                Flow::Done
            }
        }
    }

    /// The end of a Query message: the implicit transaction commits, its cursors close.
    fn end_query(&mut self) {
        self.implicit_block = false;
        if !self.in_block {
            let committed = self.autocommit(Completion::AfterCommit);
            self.close_portals(committed, true);
        }
        self.ready();
    }

    fn ready(&mut self) {
        let status = self.status();
        self.out.message(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(status)));
    }

    /// Runs the statements of one Query message. Consecutive db statements run as one
    /// db call (`execute_batch`, with its call-level commit optimisation); the server's
    /// own statements between them run here.
    fn run_pieces(&mut self, sql: &str, pieces: &[Piece], from: usize) -> Result<Flow, SqlError> {
        let client_statement = |piece: &Piece| match piece {
            Piece::Statement(text) => ClientStatement::parse(&text.text),
            Piece::Block { .. } => None,
        };
        let mut i = from;
        while i < pieces.len() {
            if self.failed {
                match &pieces[i] {
                    Piece::Statement(text) if ends_transaction(&text.text) => {
                        self.end_transaction_rollback();
                        self.out.complete("ROLLBACK");
                        i += 1;
                        continue;
                    }
                    // Runs below, and makes the block usable again.
                    Piece::Statement(text) if rolls_back_to_savepoint(&text.text) => {}
                    _ => return Err(SqlError::aborted_transaction()),
                }
            }
            if let Some(statement) = client_statement(&pieces[i]) {
                let offset = chars_before(sql, pieces[i].offset());
                match self.run_client(&statement).map_err(|e| e.shifted(offset))? {
                    ClientOutcome::CopyIn(mut copy) => {
                        copy.origin = CopyOrigin::Simple { sql: sql.to_string(), next: i + 1 };
                        self.begin_copy_in(copy);
                        return Ok(Flow::Copying);
                    }
                    outcome => self.send_outcome(outcome, None),
                }
                i += 1;
                continue;
            }
            // A run of db statements, one db call; it ends after a statement that may
            // raise notices, so that they go out before its CommandComplete.
            let mut end = i + 1;
            while end < pieces.len()
                && !raises_notices(&pieces[end - 1])
                && client_statement(&pieces[end]).is_none()
            {
                end += 1;
            }
            let start_offset = pieces[i].offset();
            let end_offset = pieces.get(end).map_or(sql.len(), Piece::offset);
            // A Query of this one statement may stop at a row lock and run again: nothing
            // of the message has run or been sent before it.
            let restartable = pieces.len() == 1 && matches!(pieces[0], Piece::Statement(_));
            self.session.set_lock_wait_deferral(restartable);
            let (mut results, error) = self.session.execute_batch_until_error(&sql[start_offset..end_offset]);
            self.session.set_lock_wait_deferral(false);
            if self.session.has_lock_wait() {
                // Its notices are raised again by the run that completes.
                drop(self.session.take_notices());
                return Ok(Flow::LockWait);
            }
            // The notices belong to the last statement that ran: the failed one, or else
            // the last of the run.
            let last = if error.is_none() { results.pop() } else { None };
            for result in &results {
                self.track_tag(&result.tag());
                self.send_result(result, true);
            }
            self.send_notices();
            if let Some(result) = &last {
                self.track_tag(&result.tag());
                self.send_result(result, true);
            }
            if let Some(e) = error {
                return Err(SqlError::from(e).shifted(chars_before(sql, start_offset)));
            }
            i = end;
        }
        Ok(Flow::Done)
    }

    /// Sends what a statement run by the server gave: in the simple protocol with a
    /// RowDescription first (`portal_formats` None), in the extended protocol in the
    /// portal's formats.
    fn send_outcome(&mut self, outcome: ClientOutcome, portal_formats: Option<&[i16]>) {
        match outcome {
            ClientOutcome::Result(result) => {
                if let QueryResult::Rows { columns, rows, .. } = &result {
                    let formats = portal_formats.unwrap_or(&[]);
                    if portal_formats.is_none() {
                        self.out.row_description(columns, formats);
                    }
                    self.out.column_rows(columns, rows, formats);
                }
                self.out.complete(result.tag());
            }
            ClientOutcome::Rows { columns, rows, formats, tag } => {
                let formats = portal_formats.unwrap_or(&formats);
                if portal_formats.is_none() {
                    self.out.row_description(&columns, formats);
                }
                self.out.column_rows(&columns, &rows, formats);
                self.out.complete(tag);
            }
            ClientOutcome::CopyIn(_) => unreachable!("copy-in is started by the caller"),
        }
    }

    /// Sends a statement's result: for the simple protocol with a RowDescription first.
    fn send_result(&mut self, result: &QueryResult, describe: bool) {
        if let QueryResult::Rows { columns, rows, .. } = result {
            if describe {
                self.out.row_description(columns, &[]);
            }
            self.out.column_rows(columns, rows, &[]);
        }
        self.out.complete(result.tag());
    }

    /// Runs a statement the server answers itself.
    fn run_client(&mut self, statement: &ClientStatement) -> Result<ClientOutcome, SqlError> {
        let command = |tag: &'static str| QueryResult::Command { tag: tag.into(), rows_affected: 0 };
        Ok(ClientOutcome::Result(match statement {
            ClientStatement::Set { name, value, local } => {
                if *local && !self.in_transaction_block() {
                    // PostgreSQL's warning: the setting ends with this statement.
                    if self.settings.sends(db::Severity::Warning) {
                        self.out.warning("25P01", "SET LOCAL can only be used in transaction blocks".into());
                    }
                }
                self.set_setting(name, Some(value), *local)?;
                command("SET")
            }
            ClientStatement::Reset { name } => {
                self.set_setting(name, None, false)?;
                command("RESET")
            }
            ClientStatement::ResetAll => {
                self.reset_all()?;
                command("RESET")
            }
            ClientStatement::Show { name } => {
                let value = self.settings.get(name).unwrap_or_default().to_string();
                QueryResult::rows_of_query(vec![show_column(name)], vec![vec![Value::Text(value)]])
            }
            ClientStatement::SetConfig { name, value, local, column } => {
                self.set_setting(name, Some(value), *local)?;
                let value = match client_sql::client_setting_key(name) {
                    Some(key) => self.settings.get(key).unwrap_or_default().to_string(),
                    None => self.session.current_setting(name)?,
                };
                QueryResult::rows_of_query(vec![text_column(column)], vec![vec![Value::Text(value)]])
            }
            ClientStatement::Savepoint(savepoint) => command(self.run_savepoint(savepoint)?),
            ClientStatement::Prepare { name, types, statement, statement_offset } => {
                self.prepare_sql(name, types, statement, *statement_offset)?;
                command("PREPARE")
            }
            ClientStatement::Execute { name, arguments } => {
                let result = self.execute_sql(name, arguments.as_deref())?;
                self.track_tag(&result.tag());
                result
            }
            ClientStatement::Deallocate(Some(name)) => {
                if self.statements.remove(name).is_none() {
                    return Err(SqlError::new(
                        "26000",
                        format!("prepared statement \"{name}\" does not exist"),
                    ));
                }
                command("DEALLOCATE")
            }
            ClientStatement::Deallocate(None) => {
                self.statements.clear();
                command("DEALLOCATE ALL")
            }
            ClientStatement::DiscardAll => {
                if self.in_block {
                    return Err(SqlError::new("25001", "DISCARD ALL cannot run inside a transaction block"));
                }
                self.statements.clear();
                self.portals.clear();
                self.sync_open_cursors();
                self.reset_all()?;
                // DISCARD ALL includes DISCARD TEMP, as in PostgreSQL.
                self.session.discard_temporary_tables()?;
                command("DISCARD ALL")
            }
            ClientStatement::DiscardTemp => {
                self.session.discard_temporary_tables()?;
                command("DISCARD TEMP")
            }
            ClientStatement::TransactionModes => command("SET"),
            ClientStatement::Rejected(error) => return Err(error.clone()),
            ClientStatement::Cursor(CursorStatement::Declare(declare)) => {
                let query = self.prepare_declared(declare)?;
                return self.declare(declare, query, Vec::new()).map(ClientOutcome::Result);
            }
            ClientStatement::Cursor(CursorStatement::Fetch(fetch)) => return self.fetch(fetch),
            ClientStatement::Cursor(CursorStatement::Close(Some(name))) => {
                if name.is_empty() || self.portals.remove(name).is_none() {
                    return Err(no_cursor(name));
                }
                self.sync_open_cursors();
                command("CLOSE CURSOR")
            }
            ClientStatement::Cursor(CursorStatement::Close(None)) => {
                self.portals.retain(|name, _| name.is_empty());
                self.sync_open_cursors();
                command("CLOSE CURSOR ALL")
            }
            ClientStatement::Copy(copy) => return self.copy(copy),
        }))
    }

    // -----------------------------------------------------------------------------------
    // Cursors
    // -----------------------------------------------------------------------------------

    /// Prepares a DECLARE's query (errors placed in the DECLARE).
    fn prepare_declared(&mut self, declare: &Declare) -> Result<PreparedStatement, SqlError> {
        let prepared = self
            .session
            .prepare(&declare.query)
            .map_err(|e| SqlError::from(e).shifted(declare.query_position))?;
        if prepared.has_data_modifying_with() {
            return Err(SqlError::new(
                "0A000",
                "DECLARE CURSOR must not contain data-modifying statements in WITH",
            ));
        }
        if !prepared.is_query() {
            return Err(SqlError::new("42601", "DECLARE CURSOR needs a query (SELECT, VALUES or SHOW)"));
        }
        Ok(prepared)
    }

    /// DECLARE: runs the query and opens the cursor as the portal of its name.
    fn declare(
        &mut self,
        declare: &Declare,
        query: PreparedStatement,
        params: Vec<Value>,
    ) -> Result<QueryResult, SqlError> {
        if !declare.hold && !self.in_block && !self.implicit_block {
            return Err(SqlError::new("25P01", "DECLARE CURSOR can only be used in transaction blocks"));
        }
        if self.portals.contains_key(&declare.name) {
            return Err(SqlError::new("42P03", format!("cursor \"{}\" already exists", declare.name)));
        }
        let cursor = self.session.query(&query, &params);
        self.send_notices();
        let cursor = cursor?;
        let statement = ServerStatement {
            kind: StatementKind::Db(query),
            declared: Vec::new(),
            inferred: Vec::new(),
            ends_transaction: false,
            result: Mutex::new(None),
        };
        let portal = Portal {
            statement: Arc::new(statement),
            params,
            result_formats: if declare.binary { vec![types::FORMAT_BINARY] } else { Vec::new() },
            state: PortalState::Rows { cursor },
            cursor: Some(SqlCursor {
                statement: declare.statement.clone(),
                binary: declare.binary,
                created: db::datetime::now(),
                hold: declare.hold,
                committed: false,
            }),
            described: false,
        };
        self.portals.insert(declare.name.clone(), portal);
        self.sync_open_cursors();
        Ok(QueryResult::Command { tag: "DECLARE CURSOR".into(), rows_affected: 0 })
    }

    /// FETCH or MOVE: the next rows of a cursor (or of any query portal).
    fn fetch(&mut self, fetch: &Fetch) -> Result<ClientOutcome, SqlError> {
        let mut portal = self.portals.remove(&fetch.name).ok_or_else(|| no_cursor(&fetch.name))?;
        let fetched = self.fetch_from(&mut portal, fetch);
        let formats = portal.result_formats.clone();
        self.portals.insert(fetch.name.clone(), portal);
        let (columns, rows) = fetched?;
        let tag = fetch.tag(rows.len());
        Ok(if fetch.move_only {
            ClientOutcome::Result(QueryResult::Command { tag: tag.into(), rows_affected: 0 })
        } else {
            ClientOutcome::Rows { columns, rows, formats, tag: tag.into() }
        })
    }

    fn fetch_from(
        &mut self,
        portal: &mut Portal,
        fetch: &Fetch,
    ) -> Result<(Vec<ResultColumn>, Vec<Vec<Value>>), SqlError> {
        match &portal.statement.kind {
            StatementKind::Db(prepared) if prepared.returns_rows() => self.start_portal(portal)?,
            _ => {
                return Err(SqlError::new(
                    "55000",
                    format!("portal \"{}\" cannot be fetched from: it is not a query", fetch.name),
                ))
            }
        }
        match &mut portal.state {
            // One fetch call for the statistics, MOVE included.
            PortalState::Rows { cursor } => {
                Ok((cursor.columns().to_vec(), cursor.fetch(fetch.count.limit())))
            }
            PortalState::Done => Ok((Vec::new(), Vec::new())),
            PortalState::Ready | PortalState::Held { .. } => {
                unreachable!("start_portal runs a ready query portal")
            }
        }
    }

    /// The columns a FETCH returns: its cursor's, if it is open and running.
    fn fetch_columns(&self, fetch: &Fetch) -> Option<Vec<ResultColumn>> {
        if fetch.move_only {
            return None;
        }
        match &self.portals.get(&fetch.name)?.state {
            PortalState::Rows { cursor } => Some(cursor.columns().to_vec()),
            _ => None,
        }
    }

    // -----------------------------------------------------------------------------------
    // COPY
    // -----------------------------------------------------------------------------------

    fn copy(&mut self, statement: &CopyStatement) -> Result<ClientOutcome, SqlError> {
        match statement.direction {
            Direction::ToStdout => self.copy_out(statement).map(ClientOutcome::Result),
            Direction::FromStdin => self.copy_in_start(statement).map(|c| ClientOutcome::CopyIn(Box::new(c))),
        }
    }

    /// COPY ... TO STDOUT: the rows of the table or query, as CopyData messages.
    fn copy_out(&mut self, statement: &CopyStatement) -> Result<QueryResult, SqlError> {
        if let Source::Table { schema: Some(schema), .. } = &statement.source {
            if !self.session.schema_exists(schema) {
                return Err(SqlError::new("3F000", format!("schema \"{schema}\" does not exist")));
            }
        }
        let quote = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
        let relation = |schema: &Option<String>, name: &str| match schema {
            Some(schema) => format!("{}.{}", quote(schema), quote(name)),
            None => quote(name),
        };
        let sql = match &statement.source {
            Source::Table { schema, name, columns } if columns.is_empty() => {
                format!("SELECT * FROM {}", relation(schema, name))
            }
            Source::Table { schema, name, columns } => format!(
                "SELECT {} FROM {}",
                columns.iter().map(|c| quote(c)).collect::<Vec<_>>().join(", "),
                relation(schema, name)
            ),
            Source::Query(query) => query.clone(),
        };
        let result = self.session.execute(&sql, &[]);
        self.send_notices();
        let QueryResult::Rows { columns, rows, .. } = result? else {
            return Err(SqlError::new("42601", "COPY (query) TO needs a query that returns rows"));
        };
        let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
        copy::check_force_columns(&statement.options, &names)?;
        self.out.message(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
            0,
            names.len() as i16,
            vec![0; names.len()],
        )));
        let types: Vec<Option<DataType>> = columns.iter().map(|c| c.ty).collect();
        let mut encoder = copy::Encoder::new(statement.options.clone(), &names, types);
        let mut line = Vec::new();
        if statement.options.header != copy::Header::None {
            encoder.header(&names, &mut line);
            self.out.copy_data(&line);
        }
        for row in &rows {
            line.clear();
            encoder.row(row, &mut line);
            self.out.copy_data(&line);
        }
        self.out.message(PgWireBackendMessage::CopyDone(CopyDone::new()));
        Ok(QueryResult::Command {
            tag: format!("COPY {}", rows.len()).into(),
            rows_affected: rows.len() as u64,
        })
    }

    /// COPY ... FROM STDIN: checks the table and columns and starts the bulk load.
    fn copy_in_start(&mut self, statement: &CopyStatement) -> Result<CopyIn, SqlError> {
        let Source::Table { schema: written_schema, name, columns } = &statement.source else {
            unreachable!("the parser gives COPY FROM a table")
        };
        if db::views::is_view(name) {
            return Err(db::views::read_only(name).into());
        }
        if let Some(schema) = written_schema.as_ref().filter(|s| !self.session.schema_exists(s)) {
            return Err(SqlError::new("3F000", format!("schema \"{schema}\" does not exist")));
        }
        // The session's temporary table of that name comes first, then the search path.
        let stored = match written_schema {
            Some(schema) => self.session.qualified_table_name(schema, name),
            None => self.session.resolve_table_name(name),
        };
        let schema = self.session.schema_of(&stored)?;
        let names: Vec<String> = if columns.is_empty() {
            schema.visible_columns().iter().map(|c| c.name.clone()).collect()
        } else {
            columns.clone()
        };
        let mut targets = Vec::with_capacity(names.len());
        for column in &names {
            let index = schema.columns.iter().position(|c| &c.name == column).ok_or_else(|| {
                SqlError::new("42703", format!("column \"{column}\" of relation \"{name}\" does not exist"))
            })?;
            if targets.contains(&index) {
                return Err(SqlError::new("42701", format!("column \"{column}\" specified more than once")));
            }
            targets.push(index);
        }
        copy::check_force_columns(&statement.options, &names)?;
        let load = self.session.begin_bulk_load(&stored)?;
        let width = load.schema().columns.len();
        Ok(CopyIn {
            table: name.clone(),
            columns: names.len(),
            decoder: copy::Decoder::new(statement.options.clone(), names, targets, width),
            load: Some(load),
            error: None,
            origin: CopyOrigin::Extended,
            rows: Vec::new(),
        })
    }

    fn begin_copy_in(&mut self, copy: Box<CopyIn>) {
        let n = copy.columns;
        self.out.message(PgWireBackendMessage::CopyInResponse(CopyInResponse::new(0, n as i16, vec![0; n])));
        self.copy_in = Some(copy);
    }

    /// A message in copy-in mode.
    fn copy_message(&mut self, message: PgWireFrontendMessage) {
        match message {
            PgWireFrontendMessage::CopyData(data) => self.copy_data(&data.data),
            PgWireFrontendMessage::CopyDone(_) => self.copy_end(None),
            PgWireFrontendMessage::CopyFail(fail) => self.copy_end(Some(fail.message)),
            // Clients that send Flush or Sync after every Execute, COPY or not.
            PgWireFrontendMessage::Flush(_) | PgWireFrontendMessage::Sync(_) => {}
            other => {
                let error = SqlError::new(
                    "08P01",
                    format!("unexpected message {} during COPY from stdin", message_name(&other)),
                );
                self.copy_failed(error);
                self.copy_end(None);
            }
        }
    }

    /// Decodes and loads the rows completed by one CopyData message.
    fn copy_data(&mut self, data: &[u8]) {
        let Some(copy) = self.copy_in.as_mut() else { return };
        if copy.error.is_some() {
            return;
        }
        let mut rows = std::mem::take(&mut copy.rows);
        let decoded = copy.decoder.feed(data, &mut rows);
        self.load_rows(&mut rows, decoded);
        if let Some(copy) = self.copy_in.as_mut() {
            copy.rows = rows;
        }
    }

    /// Loads `rows` (the ones decoded before `decoded`'s error, if any); the first error,
    /// the load's or the decoder's, fails the copy.
    fn load_rows(&mut self, rows: &mut Vec<DecodedRow>, decoded: Result<(), copy::DecodeError>) {
        let Some(copy) = self.copy_in.as_mut() else { return };
        let context = |line: u64| format!("COPY {}, line {line}", copy.table);
        let mut error = None;
        if !rows.is_empty() {
            let lines: Vec<u64> = rows.iter().map(|r| r.line).collect();
            let values = rows.drain(..).map(|r| r.values).collect();
            let load = copy.load.as_mut().expect("a load runs until the copy fails");
            if let Err(failed) = self.session.bulk_load(load, values) {
                error = Some(SqlError::from(failed.error).with_context(context(lines[failed.index])));
            }
        }
        if error.is_none() {
            if let Err(e) = decoded {
                error = Some(SqlError::new(e.sqlstate, e.message).with_context(context(e.line)));
            }
        }
        if let Some(error) = error {
            self.copy_failed(error);
        }
    }

    /// The copy failed: its rows are undone now; the error goes out when it ends.
    fn copy_failed(&mut self, error: SqlError) {
        let Some(copy) = self.copy_in.as_mut() else { return };
        if let Some(load) = copy.load.take() {
            self.session.abort_bulk_load(load);
        }
        copy.error.get_or_insert(error);
    }

    /// CopyDone (`fail` None) or CopyFail: the copy ends.
    fn copy_end(&mut self, fail: Option<String>) {
        if let Some(message) = fail {
            self.copy_failed(SqlError::new("57014", format!("COPY from stdin failed: {message}")));
        }
        if let Some(copy) = self.copy_in.as_mut() {
            if copy.error.is_none() {
                let mut rows = std::mem::take(&mut copy.rows);
                let decoded = copy.decoder.finish(&mut rows);
                self.load_rows(&mut rows, decoded);
            }
        }
        let Some(mut copy) = self.copy_in.take() else { return };
        match copy.error.take() {
            Some(error) => {
                self.out.error(&error);
                self.after_error();
                match copy.origin {
                    CopyOrigin::Simple { .. } => self.end_query(),
                    CopyOrigin::Extended => self.discard_until_sync = true,
                }
            }
            None => {
                let load = copy.load.take().expect("a copy without an error still loads");
                let rows = self.session.finish_bulk_load(load);
                self.out.complete(format!("COPY {rows}"));
                if let CopyOrigin::Simple { sql, next } = copy.origin {
                    let pieces = split_statements(&sql).expect("the message was split before the copy");
                    if self.continue_query(&sql, &pieces, next) == Flow::Copying {
                        return;
                    }
                    self.end_query();
                }
            }
        }
    }

    /// RESET ALL: every client setting and db parameter back to its default, as SETs of
    /// the transaction.
    fn reset_all(&mut self) -> Result<(), SqlError> {
        for key in client_sql::settable_client_settings() {
            self.set_setting(key, None, false)?;
        }
        let before = self.session.session_parameters();
        self.session.execute("RESET ALL", &[])?;
        let after = self.session.session_parameters();
        for parameter in SessionParameter::ALL {
            self.settings_txn.record(
                SettingKey::Db(parameter),
                SettingValue::Db(before),
                SettingValue::Db(after),
                false,
            );
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------
    // Extended query
    // -----------------------------------------------------------------------------------

    /// Runs one extended-protocol message; after an error the rest up to Sync is skipped.
    fn extended(&mut self, step: impl FnOnce(&mut SessionState) -> Result<(), SqlError>) {
        if let Err(e) = step(self) {
            if self.session.has_lock_wait() {
                // Not a failure: the Execute stopped at a row lock and runs again once
                // its wait ends (`handle_messages`).
                return;
            }
            self.out.error(&e);
            self.discard_until_sync = true;
            self.after_error();
        }
    }

    fn sync(&mut self) {
        self.discard_until_sync = false;
        if !self.in_block && !self.failed {
            let committed = self.autocommit(Completion::AtExecute);
            // Portals live until the end of their transaction (held cursors beyond it).
            self.close_portals(committed, false);
        }
        self.ready();
    }

    fn statement(&self, name: &str) -> Result<Arc<ServerStatement>, SqlError> {
        self.statements
            .get(name)
            .cloned()
            .ok_or_else(|| SqlError::new("26000", format!("prepared statement \"{name}\" does not exist")))
    }

    fn parse(&mut self, parse: Parse) -> Result<(), SqlError> {
        self.prepare_named(parse.name.unwrap_or_default(), &parse.query, parse.type_oids)?;
        self.out.message(PgWireBackendMessage::ParseComplete(ParseComplete::new()));
        Ok(())
    }

    /// Makes the prepared statement `name` of `query` (a protocol Parse, or SQL PREPARE),
    /// with the parameter types the client declared (0: left to the server).
    fn prepare_named(&mut self, name: String, query: &str, type_oids: Vec<u32>) -> Result<(), SqlError> {
        if !name.is_empty() && self.statements.contains_key(&name) {
            return Err(SqlError::new("42P05", format!("prepared statement \"{name}\" already exists")));
        }
        let pieces = split_statements(query)?;
        let (kind, text) = match pieces.as_slice() {
            [] => (StatementKind::Empty, String::new()),
            [Piece::Statement(text)] => match ClientStatement::parse(&text.text) {
                Some(ClientStatement::Rejected(error)) => {
                    return Err(error.shifted(chars_before(query, text.offset)))
                }
                Some(ClientStatement::Cursor(CursorStatement::Declare(declare))) => {
                    let query = self
                        .prepare_declared(&declare)
                        .map_err(|e| e.shifted(chars_before(query, text.offset)))?;
                    (StatementKind::Declare { declare, query }, text.text.clone())
                }
                // Its rows could not be described before it runs: a client binds the
                // statement itself instead.
                Some(ClientStatement::Execute { .. }) => {
                    return Err(SqlError::new(
                        "0A000",
                        "EXECUTE through the extended protocol is not supported: Bind the prepared statement",
                    ))
                }
                Some(client) => (StatementKind::Client(client), text.text.clone()),
                None => {
                    let prepared = self.session.prepare(&text.text).map_err(|e| text.relocate(query, e))?;
                    (StatementKind::Db(prepared), text.text.clone())
                }
            },
            _ => {
                return Err(SqlError::new(
                    "42601",
                    "cannot insert multiple commands into a prepared statement",
                ))
            }
        };
        let ends_transaction = ends_transaction(&text);
        if self.failed && !ends_transaction && !rolls_back_to_savepoint(&text) {
            return Err(SqlError::aborted_transaction());
        }
        let inferred = match &kind {
            StatementKind::Db(prepared) | StatementKind::Declare { query: prepared, .. } => {
                self.session.describe_parameters(prepared)
            }
            _ => Vec::new(),
        };
        let statement = ServerStatement {
            kind,
            declared: type_oids,
            inferred,
            ends_transaction,
            result: Mutex::new(None),
        };
        self.statements.insert(name, Arc::new(statement));
        Ok(())
    }

    /// SQL PREPARE: a named statement as a Parse would make it, of a SELECT, INSERT,
    /// UPDATE, DELETE or VALUES, its declared types resolved by the database.
    /// `statement_offset`: the characters before `statement` in the PREPARE (an error in
    /// the statement is placed in the PREPARE's text).
    fn prepare_sql(
        &mut self,
        name: &str,
        types: &[String],
        statement: &str,
        statement_offset: usize,
    ) -> Result<(), SqlError> {
        // Its first word, past comments and the parentheses of `(SELECT ...)`.
        let tokens = crate::words::tokenize(statement);
        let first = match tokens.iter().find(|t| !t.is_punct('(')).map(|t| &t.kind) {
            Some(crate::words::Kind::Word(word)) => word.as_str(),
            _ => "",
        };
        if !["SELECT", "INSERT", "UPDATE", "DELETE", "VALUES", "WITH"]
            .contains(&first.to_ascii_uppercase().as_str())
        {
            return Err(SqlError::new(
                "42601",
                format!(
                    "PREPARE takes SELECT, INSERT, UPDATE, DELETE or VALUES, not {}",
                    first.to_ascii_uppercase()
                ),
            ));
        }
        let mut oids = Vec::with_capacity(types.len());
        for ty in types {
            // The database's own type names (its error for one it does not know).
            oids.push(oid_of(Some(self.session.type_named(ty)?)));
        }
        self.prepare_named(name.to_string(), statement, oids).map_err(|e| e.shifted(statement_offset))
    }

    /// SQL EXECUTE: the named statement run with the values of `arguments` (evaluated by
    /// the database), a text literal taking its parameter's type as PostgreSQL's untyped
    /// literals do, and any value converted to a type PREPARE declared.
    fn execute_sql(&mut self, name: &str, arguments: Option<&str>) -> Result<QueryResult, SqlError> {
        let statement = self.statement(name)?;
        let StatementKind::Db(prepared) = &statement.kind else {
            return Err(SqlError::new(
                "0A000",
                format!("prepared statement \"{name}\" is not one EXECUTE runs"),
            ));
        };
        let values = match arguments {
            Some(list) => self.session.evaluate_list(list)?,
            None => Vec::new(),
        };
        let expected = statement.parameter_count();
        if values.len() != expected {
            return Err(SqlError::new(
                "42601",
                format!(
                    "wrong number of parameters for prepared statement \"{name}\": it takes {expected}, {} given",
                    values.len()
                ),
            ));
        }
        let oids = statement.parameter_oids();
        let mut bound = Vec::with_capacity(values.len());
        for (i, value) in values.into_iter().enumerate() {
            bound.push(match value {
                Value::Text(text) => read_parameter(
                    Some(text.as_bytes()),
                    types::FORMAT_TEXT,
                    oids[i],
                    statement.inferred.get(i).copied().flatten(),
                )?,
                other => match statement.declared.get(i).and_then(|&oid| types::type_of_oid(oid)) {
                    Some(ty) => db::schema::coerce(other, ty)?,
                    None => other,
                },
            });
        }
        let result = self.session.execute_prepared(prepared, &bound);
        self.send_notices();
        Ok(result?)
    }

    fn bind(&mut self, bind: Bind) -> Result<(), SqlError> {
        let statement_name = bind.statement_name.unwrap_or_default();
        let statement = self.statement(&statement_name)?;
        if self.failed && !statement.allowed_in_failed_block() {
            return Err(SqlError::aborted_transaction());
        }
        let count = statement.parameter_count();
        if bind.parameters.len() != count {
            return Err(SqlError::new(
                "08P01",
                format!(
                    "bind message supplies {} parameters, but prepared statement \"{statement_name}\" requires {count}",
                    bind.parameters.len()
                ),
            ));
        }
        let formats = &bind.parameter_format_codes;
        if formats.len() > 1 && formats.len() != count {
            return Err(SqlError::new(
                "08P01",
                format!("bind message has {} parameter formats but {count} parameters", formats.len()),
            ));
        }
        let params = bind
            .parameters
            .iter()
            .enumerate()
            .map(|(i, bytes)| {
                let declared = statement.declared.get(i).copied().unwrap_or(types::OID_UNSPECIFIED);
                let inferred = statement.inferred.get(i).copied().flatten();
                read_parameter(bytes.as_deref(), format_of(formats, i), declared, inferred)
            })
            .collect::<Result<Vec<Value>, DbError>>()?;
        let portal_name = bind.portal_name.unwrap_or_default();
        if !portal_name.is_empty() && self.portals.contains_key(&portal_name) {
            return Err(SqlError::new("42P03", format!("cursor \"{portal_name}\" already exists")));
        }
        let portal = Portal {
            statement,
            params,
            result_formats: bind.result_column_format_codes,
            state: PortalState::Ready,
            cursor: None,
            described: false,
        };
        self.portals.insert(portal_name, portal);
        self.out.message(PgWireBackendMessage::BindComplete(BindComplete::new()));
        Ok(())
    }

    fn describe(&mut self, describe: Describe) -> Result<(), SqlError> {
        let name = describe.name.unwrap_or_default();
        match describe.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                let statement = self.statement(&name)?;
                let types = statement.parameter_oids();
                self.out
                    .message(PgWireBackendMessage::ParameterDescription(ParameterDescription::new(types)));
                let columns = match &statement.kind {
                    StatementKind::Db(prepared) if prepared.returns_rows() => {
                        let columns = self.session.describe_prepared(prepared)?.columns;
                        if let Some(columns) = &columns {
                            statement.tell_result(columns);
                        }
                        columns
                    }
                    StatementKind::Client(client) => self.client_columns(client),
                    _ => None,
                };
                self.describe_columns(columns.as_deref(), &[]);
                Ok(())
            }
            TARGET_TYPE_BYTE_PORTAL => {
                let mut portal = self.take_portal(&name)?;
                let result = self.describe_portal(&mut portal);
                self.portals.insert(name, portal);
                result
            }
            other => Err(SqlError::new("08P01", format!("invalid Describe target {:?}", other as char))),
        }
    }

    /// RowDescription, or NoData for a statement that returns no rows (an empty
    /// RowDescription would tell JDBC's executeBatch that nothing was updated).
    fn describe_columns(&mut self, columns: Option<&[ResultColumn]>, formats: &[i16]) {
        match columns {
            Some(columns) => self.out.row_description(columns, formats),
            None => self.out.message(PgWireBackendMessage::NoData(NoData::new())),
        }
    }

    /// Tells the db session the cursors open now, for pg_cursors: called wherever the
    /// set of DECLAREd cursors may have changed.
    fn sync_open_cursors(&mut self) {
        let mut open: Vec<db::catalog::OpenCursor> = self
            .portals
            .iter()
            .filter_map(|(name, portal)| {
                let cursor = portal.cursor.as_ref()?;
                Some(db::catalog::OpenCursor {
                    name: name.clone(),
                    statement: cursor.statement.clone(),
                    holdable: cursor.hold,
                    binary: cursor.binary,
                    scrollable: false,
                    created: cursor.created,
                })
            })
            .collect();
        open.sort_by(|a, b| a.name.cmp(&b.name));
        self.session.set_open_cursors(open);
    }

    /// The columns a statement the server runs itself returns, if it returns rows.
    fn client_columns(&self, client: &ClientStatement) -> Option<Vec<ResultColumn>> {
        match client {
            ClientStatement::Show { name } => Some(vec![show_column(name)]),
            ClientStatement::SetConfig { column, .. } => Some(vec![text_column(column)]),
            ClientStatement::Cursor(CursorStatement::Fetch(fetch)) => self.fetch_columns(fetch),
            _ => None,
        }
    }

    fn take_portal(&mut self, name: &str) -> Result<Portal, SqlError> {
        self.portals
            .remove(name)
            .ok_or_else(|| SqlError::new("34000", format!("portal \"{name}\" does not exist")))
    }

    /// Describes a portal. A query's portal is run here (its rows are then fetched by
    /// Execute), so that its columns come from the real run rather than a second one.
    fn describe_portal(&mut self, portal: &mut Portal) -> Result<(), SqlError> {
        let columns = match &portal.statement.kind {
            StatementKind::Db(prepared) if prepared.returns_rows() => {
                self.start_portal(portal)?;
                match &portal.state {
                    PortalState::Rows { cursor } => {
                        portal.statement.tell_result(cursor.columns());
                        portal.described = true;
                        Some(cursor.columns().to_vec())
                    }
                    _ => None,
                }
            }
            StatementKind::Client(client) => self.client_columns(client),
            _ => None,
        };
        self.describe_columns(columns.as_deref(), &portal.result_formats);
        Ok(())
    }

    fn start_portal(&mut self, portal: &mut Portal) -> Result<(), SqlError> {
        if let (PortalState::Ready, StatementKind::Db(prepared)) = (&portal.state, &portal.statement.kind) {
            if self.failed {
                return Err(SqlError::aborted_transaction());
            }
            let cursor = self.session.query(prepared, &portal.params)?;
            self.send_notices();
            portal.state = PortalState::Rows { cursor };
        }
        Ok(())
    }

    fn execute(&mut self, execute: &Execute) -> Result<(), SqlError> {
        let name = execute.name.clone().unwrap_or_default();
        let mut portal = self.take_portal(&name)?;
        let result = self.execute_portal(&mut portal, execute.max_rows);
        self.portals.insert(name, portal);
        result
    }

    fn execute_portal(&mut self, portal: &mut Portal, max_rows: i32) -> Result<(), SqlError> {
        let statement = portal.statement.clone();
        if self.failed {
            if !statement.allowed_in_failed_block() {
                return Err(SqlError::aborted_transaction());
            }
            if statement.ends_transaction {
                self.end_transaction_rollback();
                self.out.complete("ROLLBACK");
                return Ok(());
            }
        }
        let limit = if max_rows <= 0 { usize::MAX } else { max_rows as usize };
        match &statement.kind {
            StatementKind::Empty => {
                self.out.message(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()))
            }
            StatementKind::Client(_) if matches!(portal.state, PortalState::Held { .. }) => {
                self.send_held(portal, limit)
            }
            StatementKind::Client(client) => match self.run_client(client)? {
                ClientOutcome::CopyIn(copy) => self.begin_copy_in(copy),
                // Rows beyond the Execute's limit: held in the portal for the next ones.
                ClientOutcome::Rows { columns, rows, tag, .. } if rows.len() > limit => {
                    portal.state = PortalState::Held { columns, rows: rows.into(), tag };
                    self.send_held(portal, limit);
                }
                ClientOutcome::Result(QueryResult::Rows { columns, rows, command }) if rows.len() > limit => {
                    let tag = command.unwrap_or_else(|| format!("SELECT {}", rows.len()).into());
                    portal.state = PortalState::Held { columns, rows: rows.into(), tag };
                    self.send_held(portal, limit);
                }
                outcome => self.send_outcome(outcome, Some(&portal.result_formats)),
            },
            StatementKind::Declare { declare, query } => {
                if matches!(portal.state, PortalState::Done) {
                    return Err(SqlError::new("55000", "the portal has already run"));
                }
                portal.state = PortalState::Done;
                let result = self.declare(declare, query.clone(), portal.params.clone())?;
                self.send_result(&result, false);
            }
            StatementKind::Db(prepared) if prepared.returns_rows() => {
                // Nothing of the portal has been sent: a row lock wait may stop it, to run
                // it again from its start.
                self.session.set_lock_wait_deferral(true);
                let started = self.start_portal(portal);
                self.session.set_lock_wait_deferral(false);
                started?;
                match &mut portal.state {
                    PortalState::Rows { cursor } => {
                        let types = if portal.described {
                            cursor.columns().iter().map(|c| c.ty).collect()
                        } else {
                            portal.statement.undescribed_run(cursor.columns())?
                        };
                        let rows = cursor.fetch(limit);
                        self.out.rows(&types, &rows, &portal.result_formats);
                        if cursor.is_exhausted() {
                            self.out.complete(cursor.completion_tag(rows.len()));
                            portal.state = PortalState::Done;
                        } else {
                            self.out.message(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()));
                        }
                    }
                    PortalState::Done => self.out.complete("SELECT 0"),
                    PortalState::Ready | PortalState::Held { .. } => {
                        unreachable!("start_portal runs a ready query portal")
                    }
                }
            }
            StatementKind::Db(prepared) => {
                if matches!(portal.state, PortalState::Done) {
                    return Err(SqlError::new("55000", "the portal has already run"));
                }
                self.session.set_lock_wait_deferral(true);
                let result = self.session.execute_prepared(prepared, &portal.params);
                self.session.set_lock_wait_deferral(false);
                if self.session.has_lock_wait() {
                    // Stopped at a row lock: the portal runs again once the wait ends (and
                    // raises its notices then).
                    drop(self.session.take_notices());
                    return result.map(|_| ()).map_err(SqlError::from);
                }
                portal.state = PortalState::Done;
                self.send_notices();
                let result = result?;
                self.track_tag(&result.tag());
                self.send_result(&result, false);
            }
        }
        Ok(())
    }

    /// Hands out up to `limit` of the rows a portal holds: PortalSuspended while some
    /// are left, else the statement's tag.
    fn send_held(&mut self, portal: &mut Portal, limit: usize) {
        let PortalState::Held { columns, rows, tag } = &mut portal.state else {
            unreachable!("send_held on a portal that holds rows")
        };
        let n = limit.min(rows.len());
        let batch: Vec<Vec<Value>> = rows.drain(..n).collect();
        self.out.column_rows(columns, &batch, &portal.result_formats);
        if rows.is_empty() {
            self.out.complete(std::mem::take(tag));
            portal.state = PortalState::Done;
        } else {
            self.out.message(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()));
        }
    }

    fn close(&mut self, close: Close) -> Result<(), SqlError> {
        let name = close.name.unwrap_or_default();
        match close.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                self.statements.remove(&name);
            }
            TARGET_TYPE_BYTE_PORTAL => {
                if self.portals.remove(&name).is_some_and(|p| p.cursor.is_some()) {
                    self.sync_open_cursors();
                }
            }
            other => return Err(SqlError::new("08P01", format!("invalid Close target {:?}", other as char))),
        }
        self.out.message(PgWireBackendMessage::CloseComplete(CloseComplete::new()));
        Ok(())
    }
}

fn show_column(name: &str) -> ResultColumn {
    text_column(&name.to_lowercase())
}

fn text_column(name: &str) -> ResultColumn {
    ResultColumn { name: name.to_string(), ty: Some(DataType::Text { max_chars: None }) }
}

fn message_name(message: &PgWireFrontendMessage) -> &'static str {
    match message {
        PgWireFrontendMessage::Query(_) => "Query",
        PgWireFrontendMessage::Parse(_) => "Parse",
        PgWireFrontendMessage::Bind(_) => "Bind",
        PgWireFrontendMessage::Describe(_) => "Describe",
        PgWireFrontendMessage::Execute(_) => "Execute",
        PgWireFrontendMessage::Close(_) => "Close",
        PgWireFrontendMessage::PasswordMessageFamily(_) => "password (authentication is over)",
        PgWireFrontendMessage::Startup(_) | PgWireFrontendMessage::SslNegotiation(_) => "startup",
        _ => "type",
    }
}
