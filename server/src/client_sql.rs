//! The statements the server answers itself, because they concern the client's
//! connection rather than the database: the settings drivers set (application_name,
//! extra_float_digits, DateStyle, ...) and SHOW of them, and the statement-name
//! bookkeeping of DEALLOCATE and DISCARD ALL; and the statements it runs on the
//! protocol's own objects or answers from elsewhere than SQL: cursors (`cursors`), COPY
//! (`copy`) and psql's catalog queries (`catalog`).
//!
//! `SET` and `RESET` of any setting come here, the db's parameters (`synchronous_commit`,
//! `commit_wait`, ...) included, because PostgreSQL's SET is transactional and the server
//! is what knows where transactions end (`protocol`, `settings_txn`); the server sets a db
//! parameter through the db session's API. So do `SAVEPOINT`, `ROLLBACK TO` and `RELEASE`
//! (the server keeps a savepoint's settings beside the db's undo point) and `SELECT
//! set_config(...)`. SHOW of a db parameter and the Oracle statements (COMMIT WRITE,
//! ALTER SESSION, SHOW PARAMETER) reach the db.
//!
//! The startup packet's `options` (`PGOPTIONS='-c name=value'`) are parsed here
//! ([`startup_options`]) and applied as SETs when the session starts.
//!
//! # Isolation
//! Every transaction runs at READ COMMITTED (a statement reads the latest committed rows
//! and its transaction's own). Clients may ask for it or for READ UNCOMMITTED (PostgreSQL's
//! synonym for it), in BEGIN, `SET [SESSION CHARACTERISTICS AS] TRANSACTION` (PgJDBC's
//! setTransactionIsolation) or `default_transaction_isolation`; REPEATABLE READ and
//! SERIALIZABLE are refused (0A000) rather than silently weakened. Access modes (READ
//! ONLY, DEFERRABLE) are accepted and ignored, as the db does in BEGIN.

use std::collections::BTreeMap;

use db::sql::{parse_special, Special};

use crate::copy::CopyStatement;
use crate::cursors::CursorStatement;
use crate::protocol::SqlError;
use crate::words::{tokenize, Kind, Token};

/// Settings of the connection kept by the server: (lowercase name, name as reported,
/// default, whether clients may change it, whether a change is reported to the client
/// with a ParameterStatus message).
const CLIENT_SETTINGS: &[(&str, &str, &str, bool, bool)] = &[
    ("application_name", "application_name", "", true, true),
    ("client_encoding", "client_encoding", "UTF8", true, true),
    ("datestyle", "DateStyle", "ISO, MDY", true, true),
    ("timezone", "TimeZone", "UTC", true, true),
    ("intervalstyle", "IntervalStyle", "postgres", true, true),
    ("extra_float_digits", "extra_float_digits", "1", true, false),
    ("search_path", "search_path", "\"$user\", public", true, false),
    ("lock_timeout", "lock_timeout", "0", true, false),
    ("idle_in_transaction_session_timeout", "idle_in_transaction_session_timeout", "0", true, false),
    ("client_min_messages", "client_min_messages", "notice", true, false),
    ("bytea_output", "bytea_output", "hex", true, false),
    ("default_transaction_isolation", "default_transaction_isolation", "read committed", true, false),
    ("transaction_isolation", "transaction_isolation", "read committed", false, false),
    ("lc_messages", "lc_messages", "C", true, false),
    ("jit", "jit", "off", true, false),
    ("standard_conforming_strings", "standard_conforming_strings", "on", false, true),
    ("server_version", "server_version", db::params::SERVER_VERSION, false, true),
    ("server_version_num", "server_version_num", db::params::SERVER_VERSION_NUM, false, false),
    ("server_encoding", "server_encoding", "UTF8", false, true),
    ("integer_datetimes", "integer_datetimes", "on", false, true),
    ("is_superuser", "is_superuser", "on", false, true),
    ("session_authorization", "session_authorization", "", false, true),
    ("max_identifier_length", "max_identifier_length", "63", false, false),
];

fn definition(name: &str) -> Option<&'static (&'static str, &'static str, &'static str, bool, bool)> {
    CLIENT_SETTINGS.iter().find(|d| d.0.eq_ignore_ascii_case(name))
}

/// Whether `name` is a setting the server keeps rather than the db.
pub fn is_client_setting(name: &str) -> bool {
    definition(name).is_some()
}

/// The key (lowercase name) of a setting the server keeps, if `name` is one.
pub fn client_setting_key(name: &str) -> Option<&'static str> {
    definition(name).map(|d| d.0)
}

/// The keys of the settings clients may change (what RESET ALL resets).
pub fn settable_client_settings() -> impl Iterator<Item = &'static str> {
    CLIENT_SETTINGS.iter().filter(|d| d.3).map(|d| d.0)
}

/// A problem with a client setting, with its SQLSTATE.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct SettingError {
    pub sqlstate: &'static str,
    pub message: String,
}

/// PostgreSQL's message levels, least severe first, as `client_min_messages` names them
/// (`log` sorts below `notice` for a client, as in PostgreSQL).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MessageLevel {
    Debug5,
    Debug4,
    Debug3,
    Debug2,
    Debug1,
    Log,
    Info,
    Notice,
    Warning,
    Error,
}

impl MessageLevel {
    const ALL: [(MessageLevel, &'static str); 10] = [
        (MessageLevel::Debug5, "debug5"),
        (MessageLevel::Debug4, "debug4"),
        (MessageLevel::Debug3, "debug3"),
        (MessageLevel::Debug2, "debug2"),
        (MessageLevel::Debug1, "debug1"),
        (MessageLevel::Log, "log"),
        (MessageLevel::Info, "info"),
        (MessageLevel::Notice, "notice"),
        (MessageLevel::Warning, "warning"),
        (MessageLevel::Error, "error"),
    ];

    /// A level by name, any case (`debug` is `debug2`, as PostgreSQL takes it).
    pub fn parse(name: &str) -> Option<MessageLevel> {
        match name.trim().to_ascii_lowercase().as_str() {
            "debug" => Some(MessageLevel::Debug2),
            lower => MessageLevel::ALL.iter().find(|(_, n)| *n == lower).map(|(level, _)| *level),
        }
    }

    pub fn name(self) -> &'static str {
        MessageLevel::ALL
            .iter()
            .find(|(level, _)| *level == self)
            .map(|(_, n)| *n)
            .expect("every level is listed")
    }

    /// The level of a notice the database sends.
    pub fn of(severity: db::Severity) -> MessageLevel {
        match severity {
            db::Severity::Notice => MessageLevel::Notice,
            db::Severity::Warning => MessageLevel::Warning,
        }
    }
}

/// The connection's settings.
#[derive(Clone, Debug)]
pub struct ClientSettings {
    values: BTreeMap<&'static str, String>,
    /// The database the client asked for in its startup message (there is one database:
    /// the name is only shown back, by psql's `\l` for one).
    database: String,
}

impl ClientSettings {
    pub fn new(user: &str) -> ClientSettings {
        let mut values: BTreeMap<&'static str, String> =
            CLIENT_SETTINGS.iter().map(|d| (d.0, d.2.to_string())).collect();
        values.insert("session_authorization", user.to_string());
        ClientSettings { values, database: user.to_string() }
    }

    /// The user the client connected as.
    pub fn user(&self) -> &str {
        &self.values["session_authorization"]
    }

    /// The database the client connected to (by default named as its user, as libpq does).
    pub fn database(&self) -> &str {
        &self.database
    }

    /// The settings reported at startup, with their names as reported.
    pub fn reported(&self) -> Vec<(&'static str, String)> {
        CLIENT_SETTINGS.iter().filter(|d| d.4).map(|d| (d.1, self.values[d.0].clone())).collect()
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        definition(name).map(|d| self.values[d.0].as_str())
    }

    /// Whether a notice of `severity` reaches the client (`client_min_messages`).
    pub fn sends(&self, severity: db::Severity) -> bool {
        let minimum =
            MessageLevel::parse(&self.values["client_min_messages"]).unwrap_or(MessageLevel::Notice);
        MessageLevel::of(severity) >= minimum
    }

    /// Every setting by key, with its value (what the db session is told, for
    /// `current_setting()`).
    pub fn all(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.values.iter().map(|(k, v)| (*k, v.as_str()))
    }

    /// Puts back a value this setting had (a SET undone by its transaction's end): no
    /// check, it was valid. Returns the ParameterStatus to send, as `set` does.
    pub fn restore(&mut self, key: &'static str, value: &str) -> Option<(&'static str, String)> {
        let &(key, reported_name, _, _, reported) = definition(key).expect("a key of a known setting");
        self.values.insert(key, value.to_string());
        reported.then(|| (reported_name, value.to_string()))
    }

    /// Changes a setting. Returns the (reported name, value) to send as a ParameterStatus
    /// when the change is reported to clients.
    pub fn set(&mut self, name: &str, value: &str) -> Result<Option<(&'static str, String)>, SettingError> {
        let Some(&(key, reported_name, default, settable, reported)) = definition(name) else {
            return Err(SettingError {
                sqlstate: "42704",
                message: format!("unrecognized configuration parameter \"{name}\""),
            });
        };
        if !settable {
            return Err(SettingError {
                sqlstate: "55P02",
                message: format!("parameter \"{key}\" cannot be changed"),
            });
        }
        let value =
            if value.eq_ignore_ascii_case("default") { default.to_string() } else { value.to_string() };
        match key {
            "client_encoding"
                if !["utf8", "utf-8", "unicode"].contains(&value.to_ascii_lowercase().as_str()) =>
            {
                return Err(SettingError {
                    sqlstate: "22023",
                    message: format!("invalid value for parameter \"client_encoding\": \"{value}\" (only UTF8 is supported)"),
                });
            }
            "timezone" if db::datetime::ZoneId::named(&value).is_err() => {
                return Err(SettingError {
                    sqlstate: "22023",
                    message: format!("invalid value for parameter \"TimeZone\": \"{value}\""),
                });
            }
            "search_path" if db::namespaces::parse_search_path(&value).is_err() => {
                return Err(SettingError {
                    sqlstate: "22023",
                    message: format!("invalid value for parameter \"search_path\": \"{value}\""),
                });
            }
            "datestyle" if !value.to_ascii_uppercase().starts_with("ISO") => {
                return Err(SettingError {
                    sqlstate: "22023",
                    message: format!(
                        "invalid value for parameter \"DateStyle\": \"{value}\" (only ISO is supported)"
                    ),
                });
            }
            _ => {}
        }
        let value = match key {
            "client_min_messages" => match MessageLevel::parse(&value) {
                Some(level) => level.name().to_string(),
                None => {
                    return Err(SettingError {
                        sqlstate: "22023",
                        message: format!(
                            "invalid value for parameter \"client_min_messages\": \"{value}\" (allowed: \
                             debug5, debug4, debug3, debug2, debug1, log, info, notice, warning, error)"
                        ),
                    })
                }
            },
            _ => value,
        };
        if key == "default_transaction_isolation" {
            let level = value.split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_uppercase();
            if !["READ COMMITTED", "READ UNCOMMITTED", "REPEATABLE READ", "SERIALIZABLE"]
                .contains(&level.as_str())
            {
                return Err(SettingError {
                    sqlstate: "22023",
                    message: format!(
                        "invalid value for parameter \"default_transaction_isolation\": \"{value}\""
                    ),
                });
            }
            check_isolation(&level).map_err(|e| SettingError { sqlstate: "0A000", message: e.message })?;
        }
        let value = match key {
            "client_encoding" => "UTF8".to_string(),
            "default_transaction_isolation" => "read committed".to_string(),
            _ => value,
        };
        self.values.insert(key, value.clone());
        Ok(reported.then_some((reported_name, value)))
    }

    /// Back to the default. Returns the ParameterStatus to send, as `set` does.
    pub fn reset(&mut self, name: &str) -> Result<Option<(&'static str, String)>, SettingError> {
        self.set(name, "default")
    }

    /// Every settable setting back to its default; the ParameterStatus messages to send.
    pub fn reset_all(&mut self) -> Vec<(&'static str, String)> {
        CLIENT_SETTINGS.iter().filter(|d| d.3).filter_map(|d| self.reset(d.0).ok().flatten()).collect()
    }

    /// Applies the settings a client sends in its startup message (others are ignored).
    pub fn apply_startup(&mut self, parameters: &BTreeMap<String, String>) -> Result<(), SettingError> {
        if let Some(database) = parameters.get("database").filter(|d| !d.is_empty()) {
            self.database = database.clone();
        }
        for (name, value) in parameters {
            if definition(name).is_some_and(|d| d.3) {
                self.set(name, value)?;
            }
        }
        Ok(())
    }
}

/// `SAVEPOINT`, `ROLLBACK TO [SAVEPOINT]` and `RELEASE [SAVEPOINT]`, with the name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SavepointStatement {
    Define(String),
    RollbackTo(String),
    Release(String),
}

/// A statement the server answers itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientStatement {
    /// `SET [LOCAL] name = value`, of a client setting or a db parameter.
    Set {
        name: String,
        value: String,
        local: bool,
    },
    /// `RESET name` (`SET name TO DEFAULT`).
    Reset {
        name: String,
    },
    /// RESET ALL: the client's settings and the db's session parameters.
    ResetAll,
    Show {
        name: String,
    },
    /// `PREPARE name [(type, ...)] AS statement`: a named prepared statement made with
    /// SQL (psql's way to bind variables), the same as a protocol Parse of that name.
    Prepare {
        name: String,
        /// The declared parameter types, as written.
        types: Vec<String>,
        statement: String,
        /// Characters before `statement` in the PREPARE's text (for error positions).
        statement_offset: usize,
    },
    /// `EXECUTE name [(expression, ...)]`: runs it with those values for `$1..$n`.
    Execute {
        name: String,
        /// The argument list's text, between its parentheses (None: no list).
        arguments: Option<String>,
    },
    /// DEALLOCATE [PREPARE] name; None for ALL.
    Deallocate(Option<String>),
    DiscardAll,
    /// `DISCARD TEMP` (or TEMPORARY): the session's temporary tables dropped.
    DiscardTemp,
    /// `SET TRANSACTION ...` or `SET SESSION CHARACTERISTICS AS TRANSACTION ...` with modes
    /// that change nothing here (READ COMMITTED, access modes): answered SET.
    TransactionModes,
    /// `SELECT set_config(name, value, is_local) [[AS] column]`: a SET that returns the
    /// new value, in a column of that name.
    SetConfig {
        name: String,
        value: String,
        local: bool,
        column: String,
    },
    Savepoint(SavepointStatement),
    /// DECLARE, FETCH, MOVE, CLOSE.
    Cursor(CursorStatement),
    Copy(CopyStatement),
    /// A statement the server recognises but cannot run (a SCROLL cursor, COPY BINARY):
    /// it fails with this error when run.
    Rejected(SqlError),
}

/// The text between the parenthesis at token `open` and its match, and the index of the
/// token after the match.
fn parenthesized(sql: &str, tokens: &[Token], open: usize) -> Result<(String, usize), SqlError> {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        if token.is_punct('(') {
            depth += 1;
        } else if token.is_punct(')') {
            depth -= 1;
            if depth == 0 {
                return Ok((sql[tokens[open].start + 1..token.start].to_string(), i + 1));
            }
        }
    }
    Err(SqlError::new("42601", "syntax error: a parenthesis is not closed"))
}

fn second_word_is(sql: &str, word: &str) -> bool {
    sql.split_whitespace().nth(1).is_some_and(|w| w.eq_ignore_ascii_case(word))
}

/// `PREPARE name [(type, ...)] AS statement`.
fn prepare_statement(sql: &str) -> Result<ClientStatement, SqlError> {
    let tokens = tokenize(sql);
    let syntax = || SqlError::new("42601", "syntax error: PREPARE name [(type, ...)] AS statement");
    let name = tokens.get(1).and_then(Token::ident).filter(|n| !n.is_empty()).ok_or_else(syntax)?;
    let mut next = 2;
    let mut types = Vec::new();
    if tokens.get(next).is_some_and(|t| t.is_punct('(')) {
        let (list, after) = parenthesized(sql, &tokens, next)?;
        // Split at the commas outside parentheses (`numeric(10, 2)` is one type).
        let (mut depth, mut from) = (0usize, 0usize);
        for (i, c) in list.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    types.push(list[from..i].trim().to_string());
                    from = i + 1;
                }
                _ => {}
            }
        }
        types.push(list[from..].trim().to_string());
        if types.iter().any(String::is_empty) {
            return Err(syntax());
        }
        next = after;
    }
    let as_keyword = tokens.get(next).filter(|t| t.is("AS")).ok_or_else(syntax)?;
    let after_as = &sql[as_keyword.start + 2..];
    let statement = after_as.trim().to_string();
    if statement.is_empty() {
        return Err(syntax());
    }
    let leading = after_as.len() - after_as.trim_start().len();
    let statement_offset = sql[..as_keyword.start + 2 + leading].chars().count();
    Ok(ClientStatement::Prepare { name, types, statement, statement_offset })
}

/// `EXECUTE name [(expression, ...)]`.
fn execute_statement(sql: &str) -> Result<ClientStatement, SqlError> {
    let tokens = tokenize(sql);
    let syntax = || SqlError::new("42601", "syntax error: EXECUTE name [(value, ...)]");
    let name = tokens.get(1).and_then(Token::ident).ok_or_else(syntax)?;
    let (arguments, after) = match tokens.get(2) {
        Some(t) if t.is_punct('(') => {
            let (list, after) = parenthesized(sql, &tokens, 2)?;
            (Some(list), after)
        }
        _ => (None, 2),
    };
    if after != tokens.len() {
        return Err(syntax());
    }
    Ok(ClientStatement::Execute { name, arguments })
}

impl ClientStatement {
    /// Recognises a client statement in `sql` (one statement, without its `;`).
    pub fn parse(sql: &str) -> Option<ClientStatement> {
        let first = sql.trim_start().split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("");
        let answer = |parsed: Result<ClientStatement, SqlError>| {
            Some(parsed.unwrap_or_else(ClientStatement::Rejected))
        };
        match first.to_ascii_uppercase().as_str() {
            "DECLARE" | "FETCH" | "MOVE" | "CLOSE" => {
                return crate::cursors::parse(sql).and_then(|p| answer(p.map(ClientStatement::Cursor)))
            }
            "COPY" => return crate::copy::parse(sql).and_then(|p| answer(p.map(ClientStatement::Copy))),
            "SELECT" | "WITH" => {
                if let Some(set) = set_config(sql) {
                    return Some(set);
                }
                return None;
            }
            "BEGIN" | "START" => return begin_isolation(sql).err().map(ClientStatement::Rejected),
            "SAVEPOINT" | "RELEASE" | "ROLLBACK" => {
                return match parse_special(sql)? {
                    Ok(Special::Savepoint(name)) => {
                        Some(ClientStatement::Savepoint(SavepointStatement::Define(name)))
                    }
                    Ok(Special::RollbackToSavepoint(name)) => {
                        Some(ClientStatement::Savepoint(SavepointStatement::RollbackTo(name)))
                    }
                    Ok(Special::ReleaseSavepoint(name)) => {
                        Some(ClientStatement::Savepoint(SavepointStatement::Release(name)))
                    }
                    // ROLLBACK itself, and the syntax errors, are the db's.
                    _ => None,
                };
            }
            "PREPARE" if second_word_is(sql, "TRANSACTION") => {
                return Some(ClientStatement::Rejected(SqlError::new(
                    "0A000",
                    "PREPARE TRANSACTION (two-phase commit) is not supported",
                )))
            }
            "PREPARE" => return answer(prepare_statement(sql)),
            // `EXECUTE snapshot` and `EXECUTE dbms_workload_repository...` are the AWR
            // calls the db runs (Oracle's EXECUTE of a procedure).
            "EXECUTE" if db::awr::parse_awr_call(sql).is_none() => return answer(execute_statement(sql)),
            "DEALLOCATE" | "DISCARD" | "SET" | "RESET" | "SHOW" => {}
            _ => return None,
        }
        let words: Vec<&str> = sql.split_whitespace().collect();
        let keyword = |i: usize, k: &str| words.get(i).is_some_and(|w| w.eq_ignore_ascii_case(k));
        let modes_from = if keyword(1, "TRANSACTION") {
            Some(2)
        } else if keyword(1, "SESSION")
            && keyword(2, "CHARACTERISTICS")
            && keyword(3, "AS")
            && keyword(4, "TRANSACTION")
        {
            Some(5)
        } else {
            None
        };
        if let (true, Some(from)) = (keyword(0, "SET"), modes_from) {
            let modes = transaction_modes(&mode_words(&words[from..].join(" ")));
            return Some(match modes.and_then(|level| level.map_or(Ok(()), |l| check_isolation(&l))) {
                Ok(()) => ClientStatement::TransactionModes,
                Err(e) => ClientStatement::Rejected(e),
            });
        }
        if keyword(0, "DEALLOCATE") {
            let mut i = 1;
            if keyword(i, "PREPARE") {
                i += 1;
            }
            return match &words[i..] {
                [all] if all.eq_ignore_ascii_case("ALL") => Some(ClientStatement::Deallocate(None)),
                [name] => Some(ClientStatement::Deallocate(Some(unquote(name)))),
                _ => None,
            };
        }
        if keyword(0, "DISCARD") && keyword(1, "ALL") && words.len() == 2 {
            return Some(ClientStatement::DiscardAll);
        }
        if keyword(0, "DISCARD") && (keyword(1, "TEMP") || keyword(1, "TEMPORARY")) && words.len() == 2 {
            return Some(ClientStatement::DiscardTemp);
        }
        match parse_special(sql)? {
            Ok(Special::PgSet { name, value, local }) => Some(ClientStatement::Set { name, value, local }),
            Ok(Special::PgReset(Some(name))) => Some(ClientStatement::Reset { name }),
            Ok(Special::PgReset(None)) => Some(ClientStatement::ResetAll),
            Ok(Special::PgShow(Some(name))) if is_client_setting(&name) => {
                Some(ClientStatement::Show { name })
            }
            _ => None,
        }
    }
}

/// `SELECT [pg_catalog.]set_config('name', 'value', is_local) [[AS] column]`, what
/// pg_dump and tools send to change a setting; None for any other SELECT (including a
/// set_config with other arguments than constants, which the db refuses cleanly).
fn set_config(sql: &str) -> Option<ClientStatement> {
    // Every SELECT comes through here: the lexer runs only for the few that may be one.
    const NAME: &[u8] = b"set_config";
    if !sql.as_bytes().windows(NAME.len()).any(|w| w.eq_ignore_ascii_case(NAME)) {
        return None;
    }
    let tokens = tokenize(sql);
    if !tokens.first().is_some_and(|t| t.is("SELECT")) {
        return None;
    }
    let mut i = 1;
    if tokens.get(1).is_some_and(|t| t.is("pg_catalog")) && tokens.get(2).is_some_and(|t| t.is_punct('.')) {
        i = 3;
    }
    let at = |k: usize| tokens.get(i + k);
    if !at(0).is_some_and(|t| t.is("set_config")) || !at(1).is_some_and(|t| t.is_punct('(')) {
        return None;
    }
    let text = |t: Option<&Token>| match t.map(|t| &t.kind) {
        Some(Kind::Str(s)) => Some(s.clone()),
        _ => None,
    };
    let name = text(at(2))?;
    let value = text(at(4))?;
    let local = match at(6).map(|t| &t.kind) {
        Some(Kind::Word(w) | Kind::Str(w)) => match w.to_ascii_lowercase().as_str() {
            "true" | "t" | "on" | "yes" => true,
            "false" | "f" | "off" | "no" => false,
            _ => return None,
        },
        _ => return None,
    };
    if !(at(3)?.is_punct(',') && at(5)?.is_punct(',') && at(7)?.is_punct(')')) {
        return None;
    }
    let column = match &tokens[i + 8..] {
        [] => "set_config".to_string(),
        [alias] | [_, alias] if tokens.len() == i + 9 || tokens[i + 8].is("AS") => alias.ident()?,
        _ => return None,
    };
    Some(ClientStatement::SetConfig { name, value, local, column })
}

/// The options of a startup packet (`PGOPTIONS`, libpq's `options`), as PostgreSQL's
/// backend reads them: words split at spaces (a backslash keeps the next character,
/// spaces included), each `-c name=value`, `-cname=value` or `--name=value`, with `-` in
/// names read as `_`. Other switches are refused (42601), as are names without a value.
pub fn startup_options(options: &str) -> Result<Vec<(String, String)>, SettingError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let syntax = |message: String| SettingError { sqlstate: "42601", message };
    let mut settings = Vec::new();
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        let assignment = if word == "-c" {
            words.next().ok_or_else(|| syntax("-c requires a value (name=value)".into()))?
        } else if let Some(rest) = word.strip_prefix("--").or_else(|| word.strip_prefix("-c")) {
            rest.to_string()
        } else {
            return Err(syntax(format!(
                "invalid command-line argument for server process: {word} (redodb accepts -c name=value and --name=value)"
            )));
        };
        match assignment.split_once('=') {
            Some((name, value)) if !name.is_empty() => {
                settings.push((name.replace('-', "_"), value.to_string()))
            }
            _ => {
                let name = assignment.split('=').next().unwrap_or_default();
                return Err(syntax(format!("-c {name} requires a value")));
            }
        }
    }
    Ok(settings)
}

/// The words of a list of transaction modes, uppercased (commas separate modes).
fn mode_words(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_uppercase)
        .collect()
}

/// The isolation level among transaction modes (`ISOLATION LEVEL x`, `READ WRITE`, `READ
/// ONLY`, `[NOT] DEFERRABLE`), as "READ COMMITTED" and the like.
fn transaction_modes(words: &[String]) -> Result<Option<String>, SqlError> {
    let syntax = |word: Option<&String>| {
        SqlError::new(
            "42601",
            match word {
                Some(w) => format!("syntax error at or near \"{w}\" in the transaction modes"),
                None => "syntax error: a transaction mode is missing".to_string(),
            },
        )
    };
    let mut level = None;
    let mut i = 0;
    if words.is_empty() {
        return Err(syntax(None));
    }
    while i < words.len() {
        let at = |k: usize| words.get(i + k).map(String::as_str);
        let taken = match (at(0), at(1), at(2), at(3)) {
            (Some("ISOLATION"), Some("LEVEL"), Some("SERIALIZABLE"), _) => Some((3, "SERIALIZABLE")),
            (Some("ISOLATION"), Some("LEVEL"), Some("REPEATABLE"), Some("READ")) => {
                Some((4, "REPEATABLE READ"))
            }
            (Some("ISOLATION"), Some("LEVEL"), Some("READ"), Some("COMMITTED")) => {
                Some((4, "READ COMMITTED"))
            }
            (Some("ISOLATION"), Some("LEVEL"), Some("READ"), Some("UNCOMMITTED")) => {
                Some((4, "READ UNCOMMITTED"))
            }
            (Some("READ"), Some("WRITE" | "ONLY"), _, _) | (Some("NOT"), Some("DEFERRABLE"), _, _) => {
                Some((2, ""))
            }
            (Some("DEFERRABLE"), _, _, _) => Some((1, "")),
            _ => None,
        };
        let Some((n, found)) = taken else {
            return Err(syntax(words.get(i + 2).filter(|_| at(0) == Some("ISOLATION")).or(words.get(i))));
        };
        if !found.is_empty() {
            level = Some(found.to_string());
        }
        i += n;
    }
    Ok(level)
}

/// Refuses an isolation level stronger than the READ COMMITTED every transaction runs at.
fn check_isolation(level: &str) -> Result<(), SqlError> {
    match level {
        "READ COMMITTED" | "READ UNCOMMITTED" => Ok(()),
        _ => Err(SqlError::new(
            "0A000",
            format!(
                "isolation level {level} is not supported: redodb runs every transaction at READ COMMITTED"
            ),
        )),
    }
}

/// BEGIN or START TRANSACTION asking for an isolation level that is refused; other forms
/// (and their syntax errors) are the db's.
fn begin_isolation(sql: &str) -> Result<(), SqlError> {
    let words = mode_words(sql);
    match words.iter().position(|w| w == "ISOLATION") {
        Some(i) if words.get(i + 1).is_some_and(|w| w == "LEVEL") => {
            match words.get(i + 2).map(String::as_str) {
                Some("SERIALIZABLE") => check_isolation("SERIALIZABLE"),
                Some("REPEATABLE") => check_isolation("REPEATABLE READ"),
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// A statement name as written: `"Name"` keeps its case, a bare name is lowercased.
fn unquote(name: &str) -> String {
    match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => name.to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_statements_are_recognised() {
        assert_eq!(
            ClientStatement::parse("SET extra_float_digits = 3"),
            Some(ClientStatement::Set { name: "extra_float_digits".into(), value: "3".into(), local: false })
        );
        assert_eq!(
            ClientStatement::parse("SET application_name TO 'x y'"),
            Some(ClientStatement::Set { name: "application_name".into(), value: "x y".into(), local: false })
        );
        assert_eq!(ClientStatement::parse("deallocate all"), Some(ClientStatement::Deallocate(None)));
        assert_eq!(
            ClientStatement::parse("PREPARE q (bigint, numeric(10, 2)) AS SELECT $1 + $2"),
            Some(ClientStatement::Prepare {
                name: "q".into(),
                types: vec!["bigint".into(), "numeric(10, 2)".into()],
                statement: "SELECT $1 + $2".into(),
                statement_offset: 38,
            })
        );
        assert_eq!(
            ClientStatement::parse("prepare \"Q\" as update t set v = 1"),
            Some(ClientStatement::Prepare {
                name: "Q".into(),
                types: vec![],
                statement: "update t set v = 1".into(),
                statement_offset: 15,
            })
        );
        assert_eq!(
            ClientStatement::parse("EXECUTE q (1, 'a)b', f(2, 3))"),
            Some(ClientStatement::Execute { name: "q".into(), arguments: Some("1, 'a)b', f(2, 3)".into()) })
        );
        assert_eq!(
            ClientStatement::parse("execute q"),
            Some(ClientStatement::Execute { name: "q".into(), arguments: None })
        );
        for bad in [
            "PREPARE q SELECT 1",
            "PREPARE AS SELECT 1",
            "PREPARE q () AS SELECT 1",
            "EXECUTE q (1",
            "EXECUTE q 1",
        ] {
            assert!(matches!(ClientStatement::parse(bad), Some(ClientStatement::Rejected(_))), "{bad}");
        }
        assert_eq!(
            ClientStatement::parse("DEALLOCATE PREPARE \"S_1\""),
            Some(ClientStatement::Deallocate(Some("S_1".into())))
        );
        assert_eq!(ClientStatement::parse("DISCARD ALL"), Some(ClientStatement::DiscardAll));
        assert_eq!(ClientStatement::parse("discard temporary"), Some(ClientStatement::DiscardTemp));
        assert_eq!(
            ClientStatement::parse("show DateStyle"),
            Some(ClientStatement::Show { name: "datestyle".into() })
        );
        // SET of a db parameter too (SET is transactional), SHOW of one goes to the db.
        assert_eq!(
            ClientStatement::parse("SET LOCAL synchronous_commit = off"),
            Some(ClientStatement::Set {
                name: "synchronous_commit".into(),
                value: "off".into(),
                local: true
            })
        );
        assert_eq!(ClientStatement::parse("SHOW commit_wait"), None);
        assert_eq!(
            ClientStatement::parse("ROLLBACK TO SAVEPOINT \"_pg3_1\""),
            Some(ClientStatement::Savepoint(SavepointStatement::RollbackTo("_pg3_1".into())))
        );
        assert_eq!(
            ClientStatement::parse("release sp"),
            Some(ClientStatement::Savepoint(SavepointStatement::Release("sp".into())))
        );
        assert_eq!(ClientStatement::parse("ROLLBACK"), None);
        assert_eq!(ClientStatement::parse("ALTER SESSION SET commit_wait = NOWAIT"), None);
        assert_eq!(ClientStatement::parse("SELECT 1"), None);
    }

    #[test]
    fn isolation_levels_weaker_or_equal_to_read_committed_are_accepted() {
        let rejected = |sql: &str| match ClientStatement::parse(sql) {
            Some(ClientStatement::Rejected(e)) => e.sqlstate,
            other => panic!("{sql:?} gave {other:?}"),
        };
        // PgJDBC's setTransactionIsolation and setReadOnly, psycopg's isolation_level.
        for sql in [
            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED",
            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ UNCOMMITTED",
            "set transaction isolation level read committed, read write",
            "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
            "SET TRANSACTION NOT DEFERRABLE",
        ] {
            assert_eq!(ClientStatement::parse(sql), Some(ClientStatement::TransactionModes), "{sql:?}");
        }
        assert_eq!(
            rejected("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE"),
            "0A000"
        );
        assert_eq!(rejected("SET TRANSACTION READ ONLY, ISOLATION LEVEL REPEATABLE READ"), "0A000");
        assert_eq!(rejected("SET TRANSACTION ISOLATION LEVEL SOMETIMES"), "42601");
        assert_eq!(rejected("SET TRANSACTION"), "42601");
        assert_eq!(rejected("BEGIN ISOLATION LEVEL SERIALIZABLE"), "0A000");
        assert_eq!(rejected("START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"), "0A000");
        // The rest of BEGIN is the db's.
        assert_eq!(ClientStatement::parse("BEGIN ISOLATION LEVEL READ COMMITTED"), None);
        assert_eq!(ClientStatement::parse("BEGIN READ ONLY"), None);
        assert_eq!(ClientStatement::parse("BEGIN"), None);

        let mut s = ClientSettings::new("u");
        assert!(s.set("default_transaction_isolation", "read uncommitted").is_ok());
        assert_eq!(s.get("default_transaction_isolation"), Some("read committed"));
        assert_eq!(s.set("default_transaction_isolation", "serializable").unwrap_err().sqlstate, "0A000");
        assert_eq!(s.set("default_transaction_isolation", "whatever").unwrap_err().sqlstate, "22023");
        assert!(s.set("default_transaction_isolation", "DEFAULT").is_ok());
    }

    #[test]
    fn set_config_alone_in_a_select_is_recognised() {
        let set = |name: &str, value: &str, local: bool, column: &str| {
            Some(ClientStatement::SetConfig {
                name: name.into(),
                value: value.into(),
                local,
                column: column.into(),
            })
        };
        assert_eq!(
            ClientStatement::parse("SELECT pg_catalog.set_config('search_path', '', false)"),
            set("search_path", "", false, "set_config")
        );
        assert_eq!(
            ClientStatement::parse("select set_config('application_name', 'a b', true) AS old"),
            set("application_name", "a b", true, "old")
        );
        assert_eq!(ClientStatement::parse("SELECT set_config('x', 'y', 'f') v"), set("x", "y", false, "v"));
        for other in
            ["SELECT set_config($1, 'y', false)", "SELECT set_config('a', 'b', false) + 1", "SELECT 1"]
        {
            assert_eq!(ClientStatement::parse(other), None, "{other}");
        }
    }

    #[test]
    fn startup_options_are_read_as_the_backend_does() {
        let pairs = |list: &[(&str, &str)]| {
            list.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect::<Vec<_>>()
        };
        assert_eq!(
            startup_options("-c commit_wait=nowait  --synchronous-commit=off -capplication_name=a\\ b")
                .unwrap(),
            pairs(&[("commit_wait", "nowait"), ("synchronous_commit", "off"), ("application_name", "a b")])
        );
        assert_eq!(startup_options("").unwrap(), pairs(&[]));
        assert_eq!(startup_options("-c").unwrap_err().sqlstate, "42601");
        assert_eq!(startup_options("-c commit_wait").unwrap_err().sqlstate, "42601");
        assert_eq!(startup_options("-B 100").unwrap_err().sqlstate, "42601");
    }

    #[test]
    fn settings_are_checked_and_reported() {
        let mut s = ClientSettings::new("alice");
        assert_eq!(s.get("session_authorization"), Some("alice"));
        assert_eq!(s.set("application_name", "app").unwrap(), Some(("application_name", "app".to_string())));
        assert_eq!(s.set("extra_float_digits", "3").unwrap(), None);
        assert_eq!(s.get("EXTRA_FLOAT_DIGITS"), Some("3"));
        assert_eq!(s.set("client_encoding", "latin1").unwrap_err().sqlstate, "22023");
        assert_eq!(s.set("server_version", "1").unwrap_err().sqlstate, "55P02");
        assert_eq!(s.set("no_such", "1").unwrap_err().sqlstate, "42704");
        s.reset_all();
        assert_eq!(s.get("application_name"), Some(""));
    }
}
