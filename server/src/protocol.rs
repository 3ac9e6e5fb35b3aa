//! The PostgreSQL protocol after startup, run on the connection's dedicated thread
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

use std::collections::HashMap;
use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use db::sql::{
    parse_special, split_statements, Cursor, Piece, PreparedStatement, QueryResult, ResultColumn, Special,
};
use db::{DataType, DbError, Session, Value};
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

use crate::client_sql::{ClientSettings, ClientStatement, SettingError};
use crate::types::{self, format_of, oid_of, put_field, read_parameter};

/// An error for the client: SQLSTATE, message and, for syntax errors, the 1-based
/// character position in the query text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlError {
    pub sqlstate: String,
    pub message: String,
    pub position: Option<usize>,
}

impl SqlError {
    pub fn new(sqlstate: &str, message: impl Into<String>) -> SqlError {
        SqlError { sqlstate: sqlstate.to_string(), message: message.into(), position: None }
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
            },
            _ => SqlError::new(e.sqlstate(), e.to_string()),
        }
    }
}

impl From<SettingError> for SqlError {
    fn from(e: SettingError) -> SqlError {
        SqlError::new(e.sqlstate, e.message)
    }
}

/// The replies to one batch of client messages, encoded.
#[derive(Default)]
pub struct Reply {
    buf: BytesMut,
    scratch: Vec<u8>,
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
        self.buf.split()
    }

    fn error(&mut self, error: &SqlError) {
        self.message(error_response("ERROR", error));
    }

    fn notice(&mut self, text: String) {
        let fields =
            vec![(b'S', "WARNING".into()), (b'V', "WARNING".into()), (b'C', "01000".into()), (b'M', text)];
        self.message(PgWireBackendMessage::NoticeResponse(NoticeResponse::new(fields)));
    }

    fn complete(&mut self, tag: String) {
        self.message(PgWireBackendMessage::CommandComplete(CommandComplete::new(tag)));
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

    /// One DataRow, written straight into the buffer (no intermediate message).
    fn data_row(&mut self, row: &[Value], oids: &[u32], formats: &[i16]) {
        let start = self.buf.len();
        self.buf.put_u8(b'D');
        self.buf.put_i32(0);
        self.buf.put_i16(row.len() as i16);
        for (i, value) in row.iter().enumerate() {
            let oid = oids.get(i).copied().unwrap_or(types::OID_TEXT);
            put_field(value, oid, format_of(formats, i), &mut self.scratch, &mut self.buf);
        }
        let length = (self.buf.len() - start - 1) as i32;
        self.buf[start + 1..start + 5].copy_from_slice(&length.to_be_bytes());
    }

    fn rows(&mut self, columns: &[ResultColumn], rows: &[Vec<Value>], formats: &[i16]) {
        let oids: Vec<u32> = columns.iter().map(|c| oid_of(c.ty)).collect();
        for row in rows {
            self.data_row(row, &oids, formats);
        }
    }
}

pub fn error_response(severity: &str, error: &SqlError) -> PgWireBackendMessage {
    let mut fields = vec![
        (b'S', severity.to_string()),
        (b'V', severity.to_string()),
        (b'C', error.sqlstate.clone()),
        (b'M', error.message.clone()),
    ];
    if let Some(position) = error.position {
        fields.push((b'P', position.to_string()));
    }
    PgWireBackendMessage::ErrorResponse(ErrorResponse::new(fields))
}

/// What a prepared statement is.
enum StatementKind {
    Empty,
    Client(ClientStatement),
    Db(PreparedStatement),
}

/// A statement prepared by Parse.
struct ServerStatement {
    kind: StatementKind,
    /// Parameter types the client declared (0: left to the server).
    declared: Vec<u32>,
    /// Parameter types the statement gives.
    inferred: Vec<Option<DataType>>,
    /// COMMIT, END, ROLLBACK or ABORT: allowed in a failed transaction block.
    ends_transaction: bool,
}

impl ServerStatement {
    fn parameter_count(&self) -> usize {
        self.declared.len().max(self.inferred.len())
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
    /// Run to its end.
    Done,
}

struct Portal {
    statement: Arc<ServerStatement>,
    params: Vec<Value>,
    result_formats: Vec<i16>,
    state: PortalState,
}

fn ends_transaction(sql: &str) -> bool {
    matches!(parse_special(sql), Some(Ok(Special::Commit { .. } | Special::Rollback)))
}

/// The number of characters before byte `offset` of `text`.
fn chars_before(text: &str, offset: usize) -> usize {
    text[..offset].chars().count()
}

/// A connection's session and protocol state; lives on its dedicated thread.
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
    out: Reply,
}

impl SessionState {
    /// The database session this connection runs on.
    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn new(session: Session, settings: ClientSettings) -> SessionState {
        SessionState {
            session,
            settings,
            in_block: false,
            failed: false,
            discard_until_sync: false,
            statements: HashMap::new(),
            portals: HashMap::new(),
            out: Reply::default(),
        }
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

    /// Handles a batch of client messages in order; returns the encoded replies.
    pub fn handle_messages(&mut self, messages: Vec<PgWireFrontendMessage>) -> BytesMut {
        for message in messages {
            if self.discard_until_sync && !matches!(message, PgWireFrontendMessage::Sync(_)) {
                continue;
            }
            match message {
                PgWireFrontendMessage::Query(query) => self.simple_query(&query.query),
                PgWireFrontendMessage::Parse(parse) => self.extended(|s| s.parse(parse)),
                PgWireFrontendMessage::Bind(bind) => self.extended(|s| s.bind(bind)),
                PgWireFrontendMessage::Describe(describe) => self.extended(|s| s.describe(describe)),
                PgWireFrontendMessage::Execute(execute) => self.extended(|s| s.execute(execute)),
                PgWireFrontendMessage::Close(close) => self.extended(|s| s.close(close)),
                PgWireFrontendMessage::Sync(_) => self.sync(),
                PgWireFrontendMessage::Flush(_) => {}
                other => self.extended(|_| {
                    Err(SqlError::new("08P01", format!("unexpected message {}", message_name(&other))))
                }),
            }
        }
        self.out.take()
    }

    fn send_notices(&mut self) {
        for notice in self.session.take_notices() {
            self.out.notice(notice);
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
        self.portals.clear();
    }

    fn track_tag(&mut self, tag: &str) {
        match tag {
            "BEGIN" => self.in_block = true,
            "COMMIT" | "ROLLBACK" => {
                self.in_block = false;
                self.portals.retain(|name, _| name.is_empty());
            }
            _ => {}
        }
    }

    /// Ends an implicit transaction: commits what it changed.
    fn autocommit(&mut self) {
        if self.in_block || self.failed || !self.session.in_transaction() {
            return;
        }
        if let Err(e) = self.session.commit(CommitOptions::DEFAULT) {
            self.out.error(&e.into());
            self.session.rollback();
        }
        self.send_notices();
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
                if let Err(e) = self.run_pieces(sql, &pieces) {
                    self.out.error(&e);
                    self.after_error();
                }
            }
        }
        self.autocommit();
        self.ready();
    }

    fn ready(&mut self) {
        let status = self.status();
        self.out.message(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(status)));
    }

    /// Runs the statements of one Query message. Consecutive db statements run as one
    /// db call (`execute_batch`, with its call-level commit optimisation); the server's
    /// own statements between them run here.
    fn run_pieces(&mut self, sql: &str, pieces: &[Piece]) -> Result<(), SqlError> {
        let client_statement = |piece: &Piece| match piece {
            Piece::Statement(text) => ClientStatement::parse(&text.text),
            Piece::Block { .. } => None,
        };
        let mut i = 0;
        while i < pieces.len() {
            if self.failed {
                match &pieces[i] {
                    Piece::Statement(text) if ends_transaction(&text.text) => {
                        self.end_transaction_rollback();
                        self.out.complete("ROLLBACK".into());
                        i += 1;
                        continue;
                    }
                    _ => return Err(SqlError::aborted_transaction()),
                }
            }
            if let Some(statement) = client_statement(&pieces[i]) {
                let result = self.run_client(&statement)?;
                self.send_result(&result, true);
                i += 1;
                continue;
            }
            let mut end = i + 1;
            while end < pieces.len() && client_statement(&pieces[end]).is_none() {
                end += 1;
            }
            let start_offset = pieces[i].offset();
            let end_offset = pieces.get(end).map_or(sql.len(), Piece::offset);
            let (results, error) = self.session.execute_batch_until_error(&sql[start_offset..end_offset]);
            for result in &results {
                self.track_tag(&result.tag());
                self.send_result(result, true);
            }
            self.send_notices();
            if let Some(e) = error {
                return Err(SqlError::from(e).shifted(chars_before(sql, start_offset)));
            }
            i = end;
        }
        Ok(())
    }

    /// Sends a statement's result: for the simple protocol with a RowDescription first.
    fn send_result(&mut self, result: &QueryResult, describe: bool) {
        if let QueryResult::Rows { columns, rows } = result {
            if describe {
                self.out.row_description(columns, &[]);
            }
            self.out.rows(columns, rows, &[]);
        }
        self.out.complete(result.tag());
    }

    /// Runs a statement the server answers itself.
    fn run_client(&mut self, statement: &ClientStatement) -> Result<QueryResult, SqlError> {
        let command = |tag: &str| QueryResult::Command { tag: tag.into(), rows_affected: 0 };
        Ok(match statement {
            ClientStatement::Set { name, value } => {
                if let Some((name, value)) = self.settings.set(name, value)? {
                    self.out.parameter_status(name, value);
                }
                command("SET")
            }
            ClientStatement::Reset { name } => {
                if let Some((name, value)) = self.settings.reset(name)? {
                    self.out.parameter_status(name, value);
                }
                command("RESET")
            }
            ClientStatement::ResetAll => {
                self.reset_all()?;
                command("RESET")
            }
            ClientStatement::Show { name } => {
                let value = self.settings.get(name).unwrap_or_default().to_string();
                QueryResult::Rows {
                    columns: vec![ResultColumn {
                        name: name.to_lowercase(),
                        ty: Some(DataType::Text { max_chars: None }),
                    }],
                    rows: vec![vec![Value::Text(value)]],
                }
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
                self.reset_all()?;
                command("DISCARD ALL")
            }
        })
    }

    fn reset_all(&mut self) -> Result<(), SqlError> {
        for (name, value) in self.settings.reset_all() {
            self.out.parameter_status(name, value);
        }
        self.session.execute("RESET ALL", &[])?;
        Ok(())
    }

    // -----------------------------------------------------------------------------------
    // Extended query
    // -----------------------------------------------------------------------------------

    /// Runs one extended-protocol message; after an error the rest up to Sync is skipped.
    fn extended(&mut self, step: impl FnOnce(&mut SessionState) -> Result<(), SqlError>) {
        if let Err(e) = step(self) {
            self.out.error(&e);
            self.discard_until_sync = true;
            self.after_error();
        }
    }

    fn sync(&mut self) {
        self.discard_until_sync = false;
        if !self.in_block && !self.failed {
            self.autocommit();
            // Portals live until the end of their transaction.
            self.portals.clear();
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
        let name = parse.name.unwrap_or_default();
        if !name.is_empty() && self.statements.contains_key(&name) {
            return Err(SqlError::new("42P05", format!("prepared statement \"{name}\" already exists")));
        }
        let pieces = split_statements(&parse.query)?;
        let (kind, text) = match pieces.as_slice() {
            [] => (StatementKind::Empty, String::new()),
            [Piece::Statement(text)] => match ClientStatement::parse(&text.text) {
                Some(client) => (StatementKind::Client(client), text.text.clone()),
                None => {
                    let prepared =
                        self.session.prepare(&text.text).map_err(|e| text.relocate(&parse.query, e))?;
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
        if self.failed && !ends_transaction {
            return Err(SqlError::aborted_transaction());
        }
        let inferred = match &kind {
            StatementKind::Db(prepared) => self.session.describe_parameters(prepared),
            _ => Vec::new(),
        };
        let statement = ServerStatement { kind, declared: parse.type_oids, inferred, ends_transaction };
        self.statements.insert(name, Arc::new(statement));
        self.out.message(PgWireBackendMessage::ParseComplete(ParseComplete::new()));
        Ok(())
    }

    fn bind(&mut self, bind: Bind) -> Result<(), SqlError> {
        let statement_name = bind.statement_name.unwrap_or_default();
        let statement = self.statement(&statement_name)?;
        if self.failed && !statement.ends_transaction {
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
                        self.session.describe_prepared(prepared)?.columns
                    }
                    StatementKind::Client(ClientStatement::Show { name }) => Some(vec![show_column(name)]),
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
                    PortalState::Rows { cursor } => Some(cursor.columns().to_vec()),
                    _ => None,
                }
            }
            StatementKind::Client(ClientStatement::Show { name }) => Some(vec![show_column(name)]),
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

    fn execute(&mut self, execute: Execute) -> Result<(), SqlError> {
        let name = execute.name.unwrap_or_default();
        let mut portal = self.take_portal(&name)?;
        let result = self.execute_portal(&mut portal, execute.max_rows);
        self.portals.insert(name, portal);
        result
    }

    fn execute_portal(&mut self, portal: &mut Portal, max_rows: i32) -> Result<(), SqlError> {
        let statement = portal.statement.clone();
        if self.failed {
            if !statement.ends_transaction {
                return Err(SqlError::aborted_transaction());
            }
            self.end_transaction_rollback();
            self.out.complete("ROLLBACK".into());
            return Ok(());
        }
        match &statement.kind {
            StatementKind::Empty => {
                self.out.message(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()))
            }
            StatementKind::Client(client) => {
                let result = self.run_client(client)?;
                self.send_result(&result, false);
            }
            StatementKind::Db(prepared) if prepared.returns_rows() => {
                self.start_portal(portal)?;
                let limit = if max_rows <= 0 { usize::MAX } else { max_rows as usize };
                match &mut portal.state {
                    PortalState::Rows { cursor } => {
                        let rows = cursor.fetch(limit);
                        let columns = cursor.columns().to_vec();
                        self.out.rows(&columns, &rows, &portal.result_formats);
                        if cursor.is_exhausted() {
                            self.out.complete(format!("SELECT {}", rows.len()));
                            portal.state = PortalState::Done;
                        } else {
                            self.out.message(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()));
                        }
                    }
                    PortalState::Done => self.out.complete("SELECT 0".into()),
                    PortalState::Ready => unreachable!("start_portal runs a ready query portal"),
                }
            }
            StatementKind::Db(prepared) => {
                if matches!(portal.state, PortalState::Done) {
                    return Err(SqlError::new("55000", "the portal has already run"));
                }
                let result = self.session.execute_prepared(prepared, &portal.params);
                portal.state = PortalState::Done;
                self.send_notices();
                let result = result?;
                self.track_tag(&result.tag());
                self.send_result(&result, false);
            }
        }
        Ok(())
    }

    fn close(&mut self, close: Close) -> Result<(), SqlError> {
        let name = close.name.unwrap_or_default();
        match close.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                self.statements.remove(&name);
            }
            TARGET_TYPE_BYTE_PORTAL => {
                self.portals.remove(&name);
            }
            other => return Err(SqlError::new("08P01", format!("invalid Close target {:?}", other as char))),
        }
        self.out.message(PgWireBackendMessage::CloseComplete(CloseComplete::new()));
        Ok(())
    }
}

fn show_column(name: &str) -> ResultColumn {
    ResultColumn { name: name.to_lowercase(), ty: Some(DataType::Text { max_chars: None }) }
}

fn message_name(message: &PgWireFrontendMessage) -> &'static str {
    match message {
        PgWireFrontendMessage::CopyData(_)
        | PgWireFrontendMessage::CopyDone(_)
        | PgWireFrontendMessage::CopyFail(_) => "COPY data (COPY is not supported)",
        PgWireFrontendMessage::PasswordMessageFamily(_) => "password (authentication is over)",
        PgWireFrontendMessage::Startup(_) | PgWireFrontendMessage::SslNegotiation(_) => "startup",
        _ => "type",
    }
}
