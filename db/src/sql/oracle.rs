//! The statements redodb recognises before `sqlparser` sees the text, and the splitting
//! of a multi-statement string into statements.
//!
//! This module owns:
//! - [`split_statements`]: one PostgreSQL simple-query message (or a script) cut into
//!   statements at top-level `;`, with Oracle's anonymous block
//!   `BEGIN stmt; stmt; ... END;` kept together as one [`Piece::Block`];
//! - [`parse_special`]: the statements `sqlparser` does not parse, or not the way the
//!   commit path needs: `COMMIT [WORK] [WRITE [WAIT|NOWAIT] [IMMEDIATE|BATCH]]`,
//!   `ROLLBACK`/`ABORT`, `BEGIN`/`START TRANSACTION`/`END`, `ALTER SESSION SET`,
//!   `ALTER SYSTEM SET ... [SCOPE = ...] [SID = ...]`, `SHOW PARAMETER[S]`,
//!   PostgreSQL's `SET`/`RESET`/`SHOW`, and `SAVEPOINT`, `ROLLBACK TO [SAVEPOINT]`,
//!   `RELEASE [SAVEPOINT]`;
//! - [`parse_commit_write`]: the value of the deprecated `commit_write` parameter
//!   (`'batch,nowait'`).
//!
//! Both functions share one small lexer that follows PostgreSQL's quoting rules:
//! `'...'` with `''`, `E'...'` with backslash escapes, `"..."` with `""`, `$$...$$` and
//! `$tag$...$tag$`, `--` line comments and nested `/* */` comments. Parameter values are
//! checked for syntax only; the parameter table validates them.
//!
//! Error positions are 1-based character offsets into the text given, like PostgreSQL's
//! error position; [`SqlText::relocate`] moves one into the string a statement was split
//! from.

use redo::{CommitLogging, CommitWait};

use crate::error::{DbError, DbResult, TextPosition};

// ---------------------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------------------

/// One statement's text, cut out of a larger string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlText {
    /// The statement, without its `;` and without surrounding whitespace and comments.
    pub text: String,
    /// Byte offset of `text` in the string it was split from.
    pub offset: usize,
}

impl SqlText {
    /// Converts a 1-based character position in `text` into one in `original`, the string
    /// this statement was split from.
    pub fn original_position(&self, original: &str, position: usize) -> usize {
        chars_before(original, self.offset) + position
    }

    /// Moves the position of an error found in `text` (a syntax error's, or a name's:
    /// `DbError::At`) into `original`, the string this statement was split from. Other
    /// errors are returned unchanged.
    pub fn relocate(&self, original: &str, error: DbError) -> DbError {
        match error.located_in(&self.text) {
            DbError::Syntax { message, position } => {
                DbError::Syntax { message, position: self.original_position(original, position) }
            }
            DbError::At { error, at: TextPosition::Char(position) } => {
                DbError::At { error, at: TextPosition::Char(self.original_position(original, position)) }
            }
            other => other,
        }
    }
}

/// One item of a multi-statement string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// An ordinary statement (including PostgreSQL's `BEGIN;` and `END;`).
    Statement(SqlText),
    /// Oracle's anonymous block `BEGIN stmt; ...; END;`, run as one call.
    Block {
        /// Byte offset of `BEGIN` in the original string.
        offset: usize,
        /// The statements inside, in order.
        statements: Vec<SqlText>,
    },
}

impl Piece {
    /// Byte offset of the piece in the original string.
    pub fn offset(&self) -> usize {
        match self {
            Piece::Statement(statement) => statement.offset,
            Piece::Block { offset, .. } => *offset,
        }
    }
}

/// A statement recognised by [`parse_special`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Special {
    /// `BEGIN [WORK|TRANSACTION] [...]`, `START TRANSACTION [...]`; isolation and access
    /// mode options are ignored.
    Begin,
    /// `COMMIT [WORK|TRANSACTION] [WRITE [WAIT|NOWAIT] [IMMEDIATE|BATCH]]`, `END [WORK|TRANSACTION]`.
    /// `None` means "not given in the statement": the session or system setting applies.
    Commit { wait: Option<CommitWait>, logging: Option<CommitLogging> },
    /// `ROLLBACK [WORK|TRANSACTION]`, `ABORT [WORK|TRANSACTION]`.
    Rollback,
    /// `ALTER SESSION SET name = value ...` or
    /// `ALTER SYSTEM SET name = value ... [SCOPE = MEMORY|SPFILE|BOTH] [SID = '...']`.
    AlterSet {
        scope: Scope,
        /// Lowercased parameter names with their values, in statement order.
        assignments: Vec<(String, ParamValue)>,
        /// The `SCOPE =` clause of ALTER SYSTEM, if given (always `None` for a session).
        persistence: Option<Persistence>,
    },
    /// Oracle's `SHOW PARAMETER[S] [name]`: the lowercased name, matched as `%name%` later.
    ShowParameter(Option<String>),
    /// PostgreSQL's `ALTER {TABLE|SEQUENCE|VIEW} [IF EXISTS] [schema.]name SET SCHEMA
    /// new_schema` (sqlparser reads no SET SCHEMA): the names folded as identifiers.
    SetSchema {
        kind: &'static str,
        if_exists: bool,
        schema: Option<String>,
        name: String,
        new_schema: String,
    },
    /// PostgreSQL's `SET [SESSION|LOCAL] name {=|TO} value[, ...]` (and `SET TIME ZONE`).
    /// `value` is the text as given with quotes removed, list items joined by `", "`.
    PgSet { name: String, value: String, local: bool },
    /// PostgreSQL's `RESET name` (`Some`) or `RESET ALL` (`None`); also
    /// `SET name TO DEFAULT`.
    PgReset(Option<String>),
    /// PostgreSQL's `SHOW name` (`Some`) or `SHOW ALL` (`None`).
    PgShow(Option<String>),
    /// `SAVEPOINT name`: the name folded as an identifier (lowercased unless quoted).
    Savepoint(String),
    /// `ROLLBACK [WORK|TRANSACTION] TO [SAVEPOINT] name`.
    RollbackToSavepoint(String),
    /// `RELEASE [SAVEPOINT] name`.
    ReleaseSavepoint(String),
    /// PostgreSQL's `VACUUM [FULL] [FREEZE] [VERBOSE] [ANALYZE] [(options)] [table, ...]`
    /// and `ANALYZE [VERBOSE] [table [(columns)], ...]`: the tables named (none: all).
    Maintenance { command: Maintenance, tables: Vec<String> },
}

/// Which maintenance command a `Special::Maintenance` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Maintenance {
    Vacuum,
    Analyze,
}

/// Which settings an `ALTER ... SET` changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Session,
    System,
}

/// Oracle's `SCOPE =` clause of `ALTER SYSTEM SET`: where the new value is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persistence {
    /// The running instance only.
    Memory,
    /// The server parameter file only (applies at the next start).
    Spfile,
    /// Both.
    Both,
}

/// The value of one `ALTER SESSION/SYSTEM SET` assignment, checked for syntax only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamValue {
    /// An unquoted word as written: an identifier or a keyword (`NOWAIT`, `TRUE`, `ON`).
    Word(String),
    /// A quoted string (`'...'`, `E'...'`, `$$...$$` or `"..."`), quotes removed.
    Quoted(String),
    /// A number as written, with its sign if one was given.
    Number(String),
    /// `DEFAULT`, unquoted: back to the default value.
    Default,
}

impl ParamValue {
    /// The value's text (`"DEFAULT"` for [`ParamValue::Default`]).
    pub fn text(&self) -> &str {
        match self {
            ParamValue::Word(text) | ParamValue::Quoted(text) | ParamValue::Number(text) => text,
            ParamValue::Default => "DEFAULT",
        }
    }

    pub fn is_quoted(&self) -> bool {
        matches!(self, ParamValue::Quoted(_))
    }
}

// ---------------------------------------------------------------------------------------
// Splitting
// ---------------------------------------------------------------------------------------

/// The words after `BEGIN` that make it PostgreSQL's transaction start rather than the
/// start of an anonymous block.
const TRANSACTION_BEGIN_WORDS: [&str; 6] = ["TRANSACTION", "WORK", "ISOLATION", "READ", "DEFERRABLE", "NOT"];

/// Splits `sql` into statements at top-level `;`. Whitespace and comments around a
/// statement are dropped, and so are empty statements. `BEGIN` followed by something
/// other than `;` or a transaction option starts an anonymous block, which runs to the
/// next statement that is only `END`.
///
/// Errors: an unterminated quoted string, quoted identifier, dollar-quoted string or
/// block comment; a block without `END`; a block inside a block.
pub fn split_statements(sql: &str) -> DbResult<Vec<Piece>> {
    let tokens = tokenize(sql)?;
    let mut statements = tokens.split(|token| token.kind == TokenKind::Semicolon).filter(|s| !s.is_empty());
    let mut pieces = Vec::new();
    while let Some(statement) = statements.next() {
        match block_start(statement) {
            Some((begin, first)) => pieces.push(collect_block(sql, begin, first, &mut statements)?),
            None => pieces.push(Piece::Statement(sql_text(sql, statement))),
        }
    }
    Ok(pieces)
}

/// If a statement's tokens are `BEGIN` followed by something that is not a PostgreSQL
/// transaction option: the `BEGIN` and the tokens after it (the block's first statement).
fn block_start<'t, 'a>(statement: &'t [Token<'a>]) -> Option<(Token<'a>, &'t [Token<'a>])> {
    match statement {
        [begin, rest @ ..] if begin.is_keyword("BEGIN") => {
            let second = rest.first()?;
            let transaction = second.kind == TokenKind::Semicolon
                || TRANSACTION_BEGIN_WORDS.iter().any(|word| second.is_keyword(word));
            (!transaction).then_some((*begin, rest))
        }
        _ => None,
    }
}

fn starts_block(statement: &[Token]) -> bool {
    block_start(statement).is_some()
}

fn is_block_end(statement: &[Token]) -> bool {
    matches!(statement, [only] if only.is_keyword("END"))
}

/// Gathers the block opened by `begin` whose first statement is `first`, taking the
/// statements that follow from `rest` up to and including `END`.
fn collect_block<'t, 'a: 't>(
    sql: &str,
    begin: Token<'a>,
    first: &'t [Token<'a>],
    rest: &mut impl Iterator<Item = &'t [Token<'a>]>,
) -> DbResult<Piece> {
    let mut statements = Vec::new();
    let mut next = Some(first);
    while let Some(statement) = next {
        if is_block_end(statement) {
            return Ok(Piece::Block { offset: begin.start, statements });
        }
        if starts_block(statement) {
            return Err(DbError::Unsupported("a BEGIN ... END block inside another block".into()));
        }
        statements.push(sql_text(sql, statement));
        next = rest.next();
    }
    Err(DbError::Syntax {
        message: "BEGIN block is not closed by END".into(),
        position: char_position(sql, begin.start),
    })
}

/// The text of a non-empty run of tokens, from the first token's start to the last's end.
fn sql_text(sql: &str, statement: &[Token]) -> SqlText {
    let start = statement.first().map_or(0, |token| token.start);
    let end = statement.last().map_or(start, |token| token.end());
    SqlText { text: sql[start..end].to_string(), offset: start }
}

// ---------------------------------------------------------------------------------------
// Special statements
// ---------------------------------------------------------------------------------------

/// Recognises one statement (a trailing `;` is allowed). `None`: not one of ours, give it
/// to `sqlparser`. Keywords are case-insensitive.
///
/// Left to `sqlparser` (`None`): `ROLLBACK AND [NO] CHAIN`, `START` other than `START TRANSACTION`, `SET TRANSACTION`,
/// `SET SESSION CHARACTERISTICS`, `SET [SESSION] AUTHORIZATION`, `SET ROLE`,
/// `SET CONSTRAINTS`, the block form of `BEGIN`, and text that does not lex (an
/// unterminated string).
pub fn parse_special(sql: &str) -> Option<DbResult<Special>> {
    let mut cursor = Cursor::new(sql, tokenize(sql).ok()?);
    let first = cursor.peek()?;
    if first.kind != TokenKind::Word {
        return None;
    }
    match first.text.to_ascii_uppercase().as_str() {
        "COMMIT" => Some(parse_commit(&mut cursor)),
        "END" => Some(parse_end(&mut cursor)),
        "ROLLBACK" | "ABORT" => parse_rollback(&mut cursor),
        "BEGIN" => parse_begin(&mut cursor),
        "START" => parse_start(&mut cursor),
        "ALTER" => parse_alter(&mut cursor),
        "SHOW" => Some(parse_show(&mut cursor)),
        "SET" => parse_pg_set(&mut cursor),
        "RESET" => Some(parse_pg_reset(&mut cursor)),
        "SAVEPOINT" => Some(parse_savepoint(&mut cursor)),
        "RELEASE" => Some(parse_release(&mut cursor)),
        "VACUUM" => Some(parse_maintenance(&mut cursor, Maintenance::Vacuum)),
        "ANALYZE" | "ANALYSE" => Some(parse_maintenance(&mut cursor, Maintenance::Analyze)),
        _ => None,
    }
}

/// `COMMIT [WORK|TRANSACTION] [WRITE [WAIT|NOWAIT] [IMMEDIATE|BATCH]]`, the two options
/// in either order.
fn parse_commit(cursor: &mut Cursor) -> DbResult<Special> {
    cursor.advance();
    cursor.eat_one_of(&["WORK", "TRANSACTION"]);
    if cursor.at_end() {
        return Ok(Special::Commit { wait: None, logging: None });
    }
    if !cursor.eat_keyword("WRITE") {
        return Err(cursor.expected("WRITE or the end of the statement after COMMIT"));
    }
    let mut options = CommitOptions::default();
    while let Some(token) = cursor.peek() {
        let option = Some(token)
            .filter(|token| token.kind == TokenKind::Word)
            .and_then(|token| commit_option(token.text))
            .ok_or_else(|| cursor.expected("WAIT, NOWAIT, IMMEDIATE or BATCH after COMMIT WRITE"))?;
        options
            .add(option)
            .map_err(|conflict| cursor.syntax_error(format!("COMMIT WRITE takes {conflict}")))?;
        cursor.advance();
    }
    Ok(Special::Commit { wait: options.wait, logging: options.logging })
}

/// PostgreSQL's `END [WORK|TRANSACTION]`: a COMMIT.
fn parse_end(cursor: &mut Cursor) -> DbResult<Special> {
    cursor.advance();
    cursor.eat_one_of(&["WORK", "TRANSACTION"]);
    cursor.expect_end("the end of the statement after END")?;
    Ok(Special::Commit { wait: None, logging: None })
}

/// `ROLLBACK|ABORT [WORK|TRANSACTION]` and `ROLLBACK [WORK|TRANSACTION] TO [SAVEPOINT]
/// name`; other forms (AND CHAIN) go to sqlparser.
fn parse_rollback(cursor: &mut Cursor) -> Option<DbResult<Special>> {
    let abort = cursor.peek_is_keyword("ABORT");
    cursor.advance();
    cursor.eat_one_of(&["WORK", "TRANSACTION"]);
    if !abort && cursor.eat_keyword("TO") {
        cursor.eat_keyword("SAVEPOINT");
        return Some(savepoint_name(cursor, "TO").map(Special::RollbackToSavepoint));
    }
    cursor.at_end().then_some(Ok(Special::Rollback))
}

/// `SAVEPOINT name`.
fn parse_savepoint(cursor: &mut Cursor) -> DbResult<Special> {
    cursor.advance();
    savepoint_name(cursor, "SAVEPOINT").map(Special::Savepoint)
}

/// `RELEASE [SAVEPOINT] name`.
fn parse_release(cursor: &mut Cursor) -> DbResult<Special> {
    cursor.advance();
    cursor.eat_keyword("SAVEPOINT");
    savepoint_name(cursor, "RELEASE").map(Special::ReleaseSavepoint)
}

/// `CREATE SEQUENCE` with Oracle's options (`NOCACHE`, `NOCYCLE`, `NOMAXVALUE`,
/// `NOMINVALUE`, `ORDER`, `NOORDER`) in PostgreSQL's words (`CACHE 1`, `NO CYCLE`, ...;
/// ORDER goes: a sequence here hands out values in order anyway); None for any other
/// statement, or one with none of them.
pub fn standard_sequence_options(sql: &str) -> Option<String> {
    let oracle = oracle_sequence_words(sql);
    let text = oracle.as_deref().unwrap_or(sql);
    match reorder_sequence_options(text) {
        Some(reordered) => Some(reordered),
        None => oracle,
    }
}

/// The sequence options of `CREATE SEQUENCE` and of `AS IDENTITY (...)`, which
/// PostgreSQL takes in any order, in the order sqlparser reads them (INCREMENT, MINVALUE,
/// MAXVALUE, START, CACHE, CYCLE, OWNED BY); None where they are in order already.
fn reorder_sequence_options(sql: &str) -> Option<String> {
    let upper = sql.to_ascii_uppercase();
    let (start, end) =
        if upper.trim_start().starts_with("CREATE") && upper.split_whitespace().nth(1) == Some("SEQUENCE") {
            // After the name and an `AS type`.
            let words: Vec<(usize, &str)> = word_spans(sql);
            let mut i = 3;
            if words.get(2).is_some_and(|(_, w)| w.eq_ignore_ascii_case("IF")) {
                i = 6;
            }
            if words.get(i).is_some_and(|(_, w)| w.eq_ignore_ascii_case("AS")) {
                i += 2;
            }
            let start = words.get(i).map(|(at, _)| *at)?;
            (start, sql.trim_end().trim_end_matches(';').len())
        } else {
            let at = upper.find("AS IDENTITY")?;
            let open = at + upper[at..].find('(')?;
            let close = open + upper[open..].find(')')?;
            if !upper[at + "AS IDENTITY".len()..open].trim().is_empty() {
                return None;
            }
            (open + 1, close)
        };
    let body = &sql[start..end];
    let words: Vec<&str> = body.split_whitespace().collect();
    let rank = |w: &str, next: Option<&&str>| -> Option<u8> {
        Some(match w.to_ascii_uppercase().as_str() {
            "INCREMENT" => 0,
            "MINVALUE" => 1,
            "MAXVALUE" => 2,
            "START" => 3,
            "CACHE" => 4,
            "CYCLE" => 5,
            "OWNED" => 6,
            "NO" => match next.map(|n| n.to_ascii_uppercase()).as_deref() {
                Some("MINVALUE") => 1,
                Some("MAXVALUE") => 2,
                Some("CYCLE") => 5,
                _ => return None,
            },
            _ => return None,
        })
    };
    let mut options: Vec<(u8, Vec<&str>)> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let r = rank(words[i], words.get(i + 1))?;
        let mut option = vec![words[i]];
        i += 1;
        if words[i - 1].eq_ignore_ascii_case("NO") {
            option.push(words[i]);
            i += 1;
        }
        while i < words.len() && rank(words[i], words.get(i + 1)).is_none() {
            option.push(words[i]);
            i += 1;
        }
        options.push((r, option));
    }
    if options.windows(2).all(|w| w[0].0 <= w[1].0) {
        return None;
    }
    options.sort_by_key(|(r, _)| *r);
    let body: Vec<String> = options.iter().map(|(_, o)| o.join(" ")).collect();
    Some(format!("{}{}{}", &sql[..start], body.join(" "), &sql[end..]))
}

/// The whitespace-separated words of `sql` with their byte offsets.
fn word_spans(sql: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in sql.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push((s, &sql[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &sql[s..]));
    }
    out
}

/// Oracle's sequence words in PostgreSQL's (see `standard_sequence_options`).
fn oracle_sequence_words(sql: &str) -> Option<String> {
    let mut words = sql.split_whitespace();
    let create = words.next()?.eq_ignore_ascii_case("CREATE");
    if !create || !words.next()?.eq_ignore_ascii_case("SEQUENCE") {
        return None;
    }
    let mut changed = false;
    let mut out = String::with_capacity(sql.len() + 8);
    for piece in sql.split_inclusive(char::is_whitespace) {
        let word = piece.trim_end();
        let replacement = match word.to_ascii_uppercase().trim_end_matches(';') {
            "NOCACHE" => Some("CACHE 1"),
            "NOCYCLE" => Some("NO CYCLE"),
            "NOMAXVALUE" => Some("NO MAXVALUE"),
            "NOMINVALUE" => Some("NO MINVALUE"),
            "ORDER" | "NOORDER" => Some(""),
            _ => None,
        };
        match replacement {
            Some(r) => {
                changed = true;
                out.push_str(r);
                out.push_str(&piece[word.len()..]);
                if word.ends_with(';') {
                    out.push(';');
                }
            }
            None => out.push_str(piece),
        }
    }
    changed.then_some(out)
}

/// `VACUUM [FULL] [FREEZE] [VERBOSE] [ANALYZE] [(option [value], ...)] [table [(columns)], ...]`
/// and `ANALYZE [VERBOSE] [(options)] [table [(columns)], ...]`.
fn parse_maintenance(cursor: &mut Cursor, command: Maintenance) -> DbResult<Special> {
    cursor.advance();
    let what = match command {
        Maintenance::Vacuum => "VACUUM",
        Maintenance::Analyze => "ANALYZE",
    };
    if cursor.eat_punct('(') {
        // PostgreSQL's options list: words, each with an optional value.
        while !cursor.eat_punct(')') {
            if cursor.at_end() {
                return Err(cursor.expected(&format!("a closing parenthesis after the options of {what}")));
            }
            cursor.advance();
        }
    }
    while cursor.eat_one_of(&["FULL", "FREEZE", "VERBOSE", "ANALYZE", "ANALYSE", "SKIP_LOCKED"]).is_some() {}
    let mut tables = Vec::new();
    while !cursor.at_end() {
        let mut name =
            cursor.take_identifier().ok_or_else(|| cursor.expected(&format!("a table name after {what}")))?;
        // A schema-qualified name: the table is the last part.
        while cursor.eat_punct('.') {
            name =
                cursor.take_identifier().ok_or_else(|| cursor.expected("a table name after the schema"))?;
        }
        if cursor.eat_punct('(') {
            while !cursor.eat_punct(')') {
                if cursor.at_end() {
                    return Err(cursor.expected("a closing parenthesis after the column names"));
                }
                cursor.advance();
            }
        }
        tables.push(name);
        if !cursor.eat_punct(',') {
            cursor.expect_end(&format!("a comma or the end of the statement after a table of {what}"))?;
        }
    }
    Ok(Special::Maintenance { command, tables })
}

/// The savepoint name ending a statement, after `after`.
fn savepoint_name(cursor: &mut Cursor, after: &str) -> DbResult<String> {
    let name = cursor
        .take_identifier()
        .ok_or_else(|| cursor.expected(&format!("a savepoint name after {after}")))?;
    cursor.expect_end("the end of the statement after the savepoint name")?;
    Ok(name)
}

/// `BEGIN [WORK|TRANSACTION] [options]`, but not the block form `BEGIN stmt; ... END;`.
fn parse_begin(cursor: &mut Cursor) -> Option<DbResult<Special>> {
    if starts_block(&cursor.tokens) {
        return None;
    }
    Some(skip_transaction_options(cursor))
}

/// `START TRANSACTION [options]`.
fn parse_start(cursor: &mut Cursor) -> Option<DbResult<Special>> {
    cursor.advance();
    cursor.eat_keyword("TRANSACTION").then(|| skip_transaction_options(cursor))
}

/// Skips the isolation level and access mode of BEGIN or START TRANSACTION (ignored),
/// refusing a `;` that would hide a second statement.
fn skip_transaction_options(cursor: &mut Cursor) -> DbResult<Special> {
    while let Some(token) = cursor.peek() {
        if token.kind == TokenKind::Semicolon {
            return Err(cursor.expected("the end of the statement"));
        }
        cursor.advance();
    }
    Ok(Special::Begin)
}

/// `ALTER SESSION SET ...` and `ALTER SYSTEM SET ...`; other ALTER statements go to
/// sqlparser, other ALTER SESSION/SYSTEM statements are unsupported.
fn parse_alter(cursor: &mut Cursor) -> Option<DbResult<Special>> {
    cursor.advance();
    if let Some(kind) = cursor.eat_one_of(&["TABLE", "SEQUENCE", "VIEW"]) {
        return parse_set_schema(cursor, kind).map(Ok);
    }
    let scope = match cursor.eat_one_of(&["SESSION", "SYSTEM"])? {
        "SESSION" => Scope::Session,
        _ => Scope::System,
    };
    Some(parse_alter_set(cursor, scope))
}

/// `[IF EXISTS] [schema.]name SET SCHEMA new_schema` after `ALTER kind`; None for any
/// other ALTER (sqlparser's).
fn parse_set_schema(cursor: &mut Cursor, kind: &'static str) -> Option<Special> {
    let if_exists = cursor.peek_is_keyword("IF") && cursor.peek_at(1).is_some_and(|t| t.is_keyword("EXISTS"));
    if if_exists {
        cursor.advance();
        cursor.advance();
    }
    let mut name = cursor.take_identifier()?;
    let mut schema = None;
    if cursor.eat_punct('.') {
        schema = Some(std::mem::replace(&mut name, cursor.take_identifier()?));
    }
    if !cursor.eat_keyword("SET") || !cursor.eat_keyword("SCHEMA") {
        return None;
    }
    let new_schema = cursor.take_identifier()?;
    cursor.at_end().then_some(Special::SetSchema { kind, if_exists, schema, name, new_schema })
}

fn parse_alter_set(cursor: &mut Cursor, scope: Scope) -> DbResult<Special> {
    let scope_word = match scope {
        Scope::Session => "SESSION",
        Scope::System => "SYSTEM",
    };
    if !cursor.eat_keyword("SET") {
        if cursor.at_end() {
            return Err(cursor.expected(&format!("SET after ALTER {scope_word}")));
        }
        return Err(DbError::Unsupported(format!("ALTER {scope_word} {}", cursor.rest_text())));
    }
    let mut assignments = Vec::new();
    let at_assignments_end =
        |cursor: &Cursor| cursor.at_end() || (scope == Scope::System && cursor.at_system_option());
    while !at_assignments_end(cursor) {
        assignments.push(parse_assignment(cursor)?);
    }
    if assignments.is_empty() {
        return Err(cursor.expected(&format!("a parameter name after ALTER {scope_word} SET")));
    }
    let persistence = match scope {
        Scope::Session => None,
        Scope::System => parse_system_options(cursor)?,
    };
    Ok(Special::AlterSet { scope, assignments, persistence })
}

/// `name = value` of ALTER SESSION/SYSTEM SET.
fn parse_assignment(cursor: &mut Cursor) -> DbResult<(String, ParamValue)> {
    let name = parse_name(cursor, "a parameter name")?;
    if !cursor.eat_punct('=') {
        return Err(cursor.expected(&format!("= after {name}")));
    }
    let value = parse_value(cursor, &name)?;
    Ok((name, value))
}

/// The `SCOPE = ...` and `SID = '...'` clauses ending ALTER SYSTEM SET, each at most
/// once, in any order, up to the end of the statement. The SID is accepted and ignored:
/// there is one instance.
fn parse_system_options(cursor: &mut Cursor) -> DbResult<Option<Persistence>> {
    let mut persistence = None;
    let mut sid_seen = false;
    while !cursor.at_end() {
        if cursor.peek_is_keyword("SCOPE") && persistence.is_none() {
            cursor.advance();
            cursor.expect_punct('=', "= after SCOPE")?;
            persistence = Some(match cursor.eat_one_of(&["MEMORY", "SPFILE", "BOTH"]) {
                Some("MEMORY") => Persistence::Memory,
                Some("SPFILE") => Persistence::Spfile,
                Some(_) => Persistence::Both,
                None => return Err(cursor.expected("MEMORY, SPFILE or BOTH after SCOPE =")),
            });
        } else if cursor.peek_is_keyword("SID") && !sid_seen {
            cursor.advance();
            cursor.expect_punct('=', "= after SID")?;
            if !cursor.peek().is_some_and(|token| token.kind == TokenKind::String) {
                return Err(cursor.expected("a quoted instance name after SID =, such as '*'"));
            }
            cursor.advance();
            sid_seen = true;
        } else {
            return Err(cursor.expected("SCOPE = or SID = or the end of the statement"));
        }
    }
    Ok(persistence)
}

/// `SHOW PARAMETER[S] [name]` (Oracle), `SHOW ALL` and `SHOW name` (PostgreSQL).
fn parse_show(cursor: &mut Cursor) -> DbResult<Special> {
    cursor.advance();
    let special = if cursor.eat_one_of(&["PARAMETER", "PARAMETERS"]).is_some() {
        let name = if cursor.at_end() { None } else { Some(parse_name(cursor, "a parameter name")?) };
        Special::ShowParameter(name)
    } else if cursor.eat_keyword("ALL") {
        Special::PgShow(None)
    } else if let Some(name) = cursor.eat_multiword_name() {
        Special::PgShow(Some(name.to_string()))
    } else {
        Special::PgShow(Some(parse_name(cursor, "a parameter name after SHOW")?))
    };
    cursor.expect_end("the end of the statement")?;
    Ok(special)
}

/// `RESET ALL` and `RESET name`.
fn parse_pg_reset(cursor: &mut Cursor) -> DbResult<Special> {
    cursor.advance();
    let name = if cursor.eat_keyword("ALL") {
        None
    } else if let Some(name) = cursor.eat_multiword_name() {
        Some(name.to_string())
    } else {
        Some(parse_name(cursor, "a parameter name after RESET")?)
    };
    cursor.expect_end("the end of the statement")?;
    Ok(Special::PgReset(name))
}

/// PostgreSQL's `SET [SESSION|LOCAL] name {=|TO} value[, value ...]` and
/// `SET [SESSION|LOCAL] TIME ZONE value`. The special SET forms (transaction, role,
/// authorization, constraints) go to sqlparser.
fn parse_pg_set(cursor: &mut Cursor) -> Option<DbResult<Special>> {
    cursor.advance();
    let local = cursor.eat_one_of(&["SESSION", "LOCAL"]) == Some("LOCAL");
    if cursor.peek_is_one_of(&["TRANSACTION", "CHARACTERISTICS", "AUTHORIZATION", "ROLE", "CONSTRAINTS"]) {
        return None;
    }
    Some(parse_pg_set_body(cursor, local))
}

fn parse_pg_set_body(cursor: &mut Cursor, local: bool) -> DbResult<Special> {
    if let Some(name) = cursor.eat_multiword_name() {
        // SET TIME ZONE value: no `=` or `TO`, and LOCAL means the default.
        if cursor.peek_is_keyword("LOCAL") || cursor.peek_is_keyword("DEFAULT") {
            cursor.advance();
            cursor.expect_end("the end of the statement")?;
            return reset_to_default(name.to_string(), local);
        }
        return parse_pg_set_values(cursor, name.to_string(), local);
    }
    let name = parse_name(cursor, "a parameter name after SET")?;
    if !cursor.eat_punct('=') && !cursor.eat_keyword("TO") {
        return Err(cursor.expected(&format!("= or TO after {name}")));
    }
    parse_pg_set_values(cursor, name, local)
}

/// `value[, value ...]` or `DEFAULT` after `SET name =`.
fn parse_pg_set_values(cursor: &mut Cursor, name: String, local: bool) -> DbResult<Special> {
    let first = parse_value(cursor, &name)?;
    if first == ParamValue::Default {
        cursor.expect_end("the end of the statement after DEFAULT")?;
        return reset_to_default(name, local);
    }
    // A list of names (search_path) is kept as PostgreSQL shows it: each name folded as
    // an identifier is, then quoted where it must be (`"$user", public`).
    let names = name.eq_ignore_ascii_case("search_path");
    let item = |value: ParamValue| match value {
        ParamValue::Word(word) if names => word.to_lowercase(),
        other => other.text().to_string(),
    };
    let mut values = vec![item(first)];
    while cursor.eat_punct(',') {
        if cursor.peek_is_keyword("DEFAULT") {
            return Err(cursor.syntax_error("DEFAULT cannot be part of a list of values".into()));
        }
        values.push(item(parse_value(cursor, &name)?));
    }
    cursor.expect_end("a comma or the end of the statement")?;
    let value = if names { crate::namespaces::render_search_path(&values) } else { values.join(", ") };
    Ok(Special::PgSet { name, value, local })
}

/// `SET name TO DEFAULT` is `RESET name`.
fn reset_to_default(name: String, local: bool) -> DbResult<Special> {
    if local {
        return Err(DbError::Unsupported(format!("SET LOCAL {name} TO DEFAULT")));
    }
    Ok(Special::PgReset(Some(name)))
}

/// A parameter name: words separated by dots (`app.x`), lowercased.
fn parse_name(cursor: &mut Cursor, what: &str) -> DbResult<String> {
    let mut name = cursor.take_name_part().ok_or_else(|| cursor.expected(what))?;
    while cursor.peek_is_punct('.') {
        cursor.advance();
        let part =
            cursor.take_name_part().ok_or_else(|| cursor.expected(&format!("a name after {name}.")))?;
        name.push('.');
        name.push_str(&part);
    }
    Ok(name)
}

/// One value: a word, `DEFAULT`, a quoted string or identifier, or a number with an
/// optional sign.
fn parse_value(cursor: &mut Cursor, name: &str) -> DbResult<ParamValue> {
    if let Some(number) = cursor.take_signed_number() {
        return Ok(ParamValue::Number(number));
    }
    let value = match cursor.peek() {
        Some(token) if token.is_keyword("DEFAULT") => ParamValue::Default,
        Some(token) => match token.kind {
            TokenKind::Word => ParamValue::Word(token.text.to_string()),
            TokenKind::String | TokenKind::DollarString | TokenKind::QuotedIdent => {
                ParamValue::Quoted(unquote(token))
            }
            _ => return Err(cursor.expected(&format!("a value for {name}"))),
        },
        None => return Err(cursor.expected(&format!("a value for {name}"))),
    };
    cursor.advance();
    Ok(value)
}

// ---------------------------------------------------------------------------------------
// COMMIT WRITE options and the commit_write parameter
// ---------------------------------------------------------------------------------------

/// Parses the value of the deprecated `commit_write` parameter: a comma-separated list,
/// in any order and any case, of at most one of WAIT/NOWAIT and at most one of
/// IMMEDIATE/BATCH (`'batch,nowait'`). An empty value means the defaults.
pub fn parse_commit_write(value: &str) -> DbResult<(Option<CommitWait>, Option<CommitLogging>)> {
    let invalid = || DbError::InvalidParameterValue {
        parameter: "commit_write".into(),
        value: value.into(),
        allowed: "a comma-separated list of at most one of WAIT, NOWAIT and at most one of IMMEDIATE, \
                  BATCH, such as 'batch,nowait'"
            .into(),
    };
    let mut options = CommitOptions::default();
    if value.trim().is_empty() {
        return Ok((None, None));
    }
    for word in value.split(',') {
        let option = commit_option(word).ok_or_else(invalid)?;
        options.add(option).map_err(|_| invalid())?;
    }
    Ok((options.wait, options.logging))
}

/// One word of `COMMIT WRITE` or of `commit_write`.
#[derive(Clone, Copy, Debug)]
enum CommitOption {
    Wait(CommitWait),
    Logging(CommitLogging),
}

/// WAIT, NOWAIT, IMMEDIATE or BATCH (not FORCE_WAIT, which is a parameter value only).
fn commit_option(word: &str) -> Option<CommitOption> {
    match CommitWait::parse(word) {
        Some(CommitWait::ForceWait) => None,
        Some(wait) => Some(CommitOption::Wait(wait)),
        None => CommitLogging::parse(word).map(CommitOption::Logging),
    }
}

/// The options gathered so far, each kind at most once.
#[derive(Default)]
struct CommitOptions {
    wait: Option<CommitWait>,
    logging: Option<CommitLogging>,
}

impl CommitOptions {
    /// Adds one option; `Err` describes the rule when its kind was already given.
    fn add(&mut self, option: CommitOption) -> Result<(), &'static str> {
        match option {
            CommitOption::Wait(wait) if self.wait.is_none() => self.wait = Some(wait),
            CommitOption::Wait(_) => return Err("at most one of WAIT and NOWAIT"),
            CommitOption::Logging(logging) if self.logging.is_none() => self.logging = Some(logging),
            CommitOption::Logging(_) => return Err("at most one of IMMEDIATE and BATCH"),
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Token cursor
// ---------------------------------------------------------------------------------------

/// Names spelled as several keywords, with the parameter they stand for.
const MULTIWORD_NAMES: [(&[&str], &str); 3] = [
    (&["TIME", "ZONE"], "timezone"),
    (&["TRANSACTION", "ISOLATION", "LEVEL"], "transaction_isolation"),
    (&["SESSION", "AUTHORIZATION"], "session_authorization"),
];

/// The tokens of one statement (trailing `;` removed) and the next one to read.
struct Cursor<'a> {
    sql: &'a str,
    tokens: Vec<Token<'a>>,
    next: usize,
}

impl<'a> Cursor<'a> {
    fn new(sql: &'a str, mut tokens: Vec<Token<'a>>) -> Cursor<'a> {
        while tokens.last().is_some_and(|token| token.kind == TokenKind::Semicolon) {
            tokens.pop();
        }
        Cursor { sql, tokens, next: 0 }
    }

    fn peek(&self) -> Option<Token<'a>> {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> Option<Token<'a>> {
        self.tokens.get(self.next + ahead).copied()
    }

    fn at_end(&self) -> bool {
        self.next >= self.tokens.len()
    }

    fn advance(&mut self) {
        self.next = (self.next + 1).min(self.tokens.len());
    }

    fn peek_is_keyword(&self, keyword: &str) -> bool {
        self.peek().is_some_and(|token| token.is_keyword(keyword))
    }

    fn peek_is_one_of(&self, keywords: &[&str]) -> bool {
        keywords.iter().any(|keyword| self.peek_is_keyword(keyword))
    }

    fn peek_is_punct(&self, punct: char) -> bool {
        self.peek().is_some_and(|token| token.is_punct(punct))
    }

    fn eat_keyword(&mut self, keyword: &str) -> bool {
        let found = self.peek_is_keyword(keyword);
        if found {
            self.advance();
        }
        found
    }

    /// Takes the next token if it is one of `keywords`, returning which.
    fn eat_one_of(&mut self, keywords: &[&'static str]) -> Option<&'static str> {
        let keyword = keywords.iter().copied().find(|keyword| self.peek_is_keyword(keyword))?;
        self.advance();
        Some(keyword)
    }

    fn eat_punct(&mut self, punct: char) -> bool {
        let found = self.peek_is_punct(punct);
        if found {
            self.advance();
        }
        found
    }

    fn expect_punct(&mut self, punct: char, what: &str) -> DbResult<()> {
        if self.eat_punct(punct) {
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    fn expect_end(&self, what: &str) -> DbResult<()> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    /// Takes `TIME ZONE`, `TRANSACTION ISOLATION LEVEL` or `SESSION AUTHORIZATION`,
    /// returning the parameter name it stands for.
    fn eat_multiword_name(&mut self) -> Option<&'static str> {
        let (words, name) = MULTIWORD_NAMES.iter().find(|(words, _)| {
            words.iter().enumerate().all(|(i, word)| self.peek_at(i).is_some_and(|t| t.is_keyword(word)))
        })?;
        self.next += words.len();
        Some(name)
    }

    /// Whether the next tokens are `SCOPE =` or `SID =`, the clauses ending ALTER SYSTEM SET.
    fn at_system_option(&self) -> bool {
        (self.peek_is_keyword("SCOPE") || self.peek_is_keyword("SID"))
            && self.peek_at(1).is_some_and(|token| token.is_punct('='))
    }

    /// Takes one part of a name (a word or a quoted identifier), lowercased.
    fn take_name_part(&mut self) -> Option<String> {
        let token =
            self.peek().filter(|token| matches!(token.kind, TokenKind::Word | TokenKind::QuotedIdent))?;
        self.advance();
        Some(unquote(token).to_lowercase())
    }

    /// Takes an identifier as PostgreSQL folds it: a word lowercased, a quoted identifier
    /// as written.
    fn take_identifier(&mut self) -> Option<String> {
        let token = self.peek()?;
        let name = match token.kind {
            TokenKind::Word => token.text.to_lowercase(),
            TokenKind::QuotedIdent => unquote(token),
            _ => return None,
        };
        self.advance();
        Some(name)
    }

    /// Takes a number with an optional `+` or `-` before it.
    fn take_signed_number(&mut self) -> Option<String> {
        let first = self.peek()?;
        if first.kind == TokenKind::Number {
            self.advance();
            return Some(first.text.to_string());
        }
        let number = self.peek_at(1).filter(|token| token.kind == TokenKind::Number)?;
        if !(first.is_punct('-') || first.is_punct('+')) {
            return None;
        }
        self.next += 2;
        Some(format!("{}{}", first.text, number.text))
    }

    /// The text from the next token to the end of the statement.
    fn rest_text(&self) -> &'a str {
        match (self.peek(), self.tokens.last()) {
            (Some(first), Some(last)) => &self.sql[first.start..last.end()],
            _ => "",
        }
    }

    /// 1-based character position of the next token, or just after the last token.
    fn position(&self) -> usize {
        match (self.peek(), self.tokens.last()) {
            (Some(token), _) => char_position(self.sql, token.start),
            (None, Some(last)) => char_position(self.sql, last.end()),
            (None, None) => 1,
        }
    }

    fn syntax_error(&self, message: String) -> DbError {
        DbError::Syntax { message, position: self.position() }
    }

    /// A syntax error at the next token: "expected {what}, found ...".
    fn expected(&self, what: &str) -> DbError {
        let found = match self.peek() {
            Some(token) => format!("\"{}\"", token.text),
            None => "the end of the statement".to_string(),
        };
        self.syntax_error(format!("expected {what}, found {found}"))
    }
}

// ---------------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TokenKind {
    /// An unquoted identifier or keyword.
    Word,
    /// `"..."`.
    QuotedIdent,
    /// `'...'` or `E'...'`.
    String,
    /// `$$...$$` or `$tag$...$tag$`.
    DollarString,
    Number,
    /// `$1`.
    Parameter,
    Semicolon,
    /// Any other single character.
    Punct,
}

/// A token: its kind and its text, a slice of the lexed string starting at byte `start`.
#[derive(Clone, Copy, Debug)]
struct Token<'a> {
    kind: TokenKind,
    text: &'a str,
    start: usize,
}

impl Token<'_> {
    fn end(&self) -> usize {
        self.start + self.text.len()
    }

    fn is_keyword(&self, keyword: &str) -> bool {
        self.kind == TokenKind::Word && self.text.eq_ignore_ascii_case(keyword)
    }

    fn is_punct(&self, punct: char) -> bool {
        self.kind == TokenKind::Punct && self.text.starts_with(punct)
    }
}

/// Cuts `sql` into tokens, dropping whitespace and comments.
fn tokenize(sql: &str) -> DbResult<Vec<Token<'_>>> {
    let mut lexer = Lexer { sql, pos: 0 };
    let mut tokens = Vec::new();
    while let Some(token) = lexer.next_token()? {
        tokens.push(token);
    }
    Ok(tokens)
}

/// Reads `sql` byte by byte. Every delimiter is ASCII and bytes of non-ASCII characters
/// belong to words, so tokens always start and end on character boundaries.
struct Lexer<'a> {
    sql: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn byte_at(&self, index: usize) -> Option<u8> {
        self.sql.as_bytes().get(index).copied()
    }

    /// The next token, after any whitespace and comments; `None` at the end.
    fn next_token(&mut self) -> DbResult<Option<Token<'a>>> {
        loop {
            while self.byte_at(self.pos).is_some_and(is_whitespace) {
                self.pos += 1;
            }
            let start = self.pos;
            let Some(byte) = self.byte_at(start) else { return Ok(None) };
            let kind = match (byte, self.byte_at(start + 1)) {
                (b'-', Some(b'-')) => {
                    self.skip_line_comment();
                    continue;
                }
                (b'/', Some(b'*')) => {
                    self.skip_block_comment()?;
                    continue;
                }
                (b'\'', _) => self.quoted(start, false, TokenKind::String, "quoted string")?,
                (b'e' | b'E', Some(b'\'')) => {
                    self.pos += 1;
                    self.quoted(start, true, TokenKind::String, "quoted string")?
                }
                (b'"', _) => self.quoted(start, false, TokenKind::QuotedIdent, "quoted identifier")?,
                (b'$', Some(b'0'..=b'9')) => {
                    self.pos += 1;
                    self.skip_while(|b| b.is_ascii_digit());
                    TokenKind::Parameter
                }
                (b'$', _) => self.dollar()?,
                (b'0'..=b'9', _) | (b'.', Some(b'0'..=b'9')) => self.number(),
                (b';', _) => {
                    self.pos += 1;
                    TokenKind::Semicolon
                }
                (b, _) if is_identifier_start(b) => {
                    self.skip_while(is_identifier_part);
                    TokenKind::Word
                }
                _ => {
                    self.pos += 1;
                    TokenKind::Punct
                }
            };
            return Ok(Some(Token { kind, text: &self.sql[start..self.pos], start }));
        }
    }

    fn skip_while(&mut self, keep: impl Fn(u8) -> bool) {
        while self.byte_at(self.pos).is_some_and(&keep) {
            self.pos += 1;
        }
    }

    fn skip_line_comment(&mut self) {
        self.skip_while(|b| b != b'\n');
    }

    /// Skips `/* ... */`, nested like PostgreSQL.
    fn skip_block_comment(&mut self) -> DbResult<()> {
        let start = self.pos;
        let mut depth = 0usize;
        loop {
            match (self.byte_at(self.pos), self.byte_at(self.pos + 1)) {
                (Some(b'/'), Some(b'*')) => {
                    depth += 1;
                    self.pos += 2;
                }
                (Some(b'*'), Some(b'/')) => {
                    depth -= 1;
                    self.pos += 2;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                (Some(_), _) => self.pos += 1,
                (None, _) => return Err(self.unterminated(start, "/* comment")),
            }
        }
    }

    /// Reads a quoted token (begun at `start`) whose opening quote is at `pos`; a doubled
    /// quote stands for one, and with `backslash_escapes` a backslash escapes the next
    /// character.
    fn quoted(
        &mut self,
        start: usize,
        backslash_escapes: bool,
        kind: TokenKind,
        what: &str,
    ) -> DbResult<TokenKind> {
        let Some(quote) = self.byte_at(self.pos) else { return Err(self.unterminated(start, what)) };
        self.pos += 1;
        loop {
            match (self.byte_at(self.pos), self.byte_at(self.pos + 1)) {
                (Some(b), Some(next)) if b == quote && next == quote => self.pos += 2,
                (Some(b), _) if b == quote => {
                    self.pos += 1;
                    return Ok(kind);
                }
                (Some(b'\\'), Some(_)) if backslash_escapes => self.pos += 2,
                (Some(_), _) => self.pos += 1,
                (None, _) => return Err(self.unterminated(start, what)),
            }
        }
    }

    /// At a `$` not followed by a digit: a dollar-quoted string if a tag (`$$` or
    /// `$name$`) starts here, else a lone `$`.
    fn dollar(&mut self) -> DbResult<TokenKind> {
        let start = self.pos;
        let mut tag_end = start + 1;
        while self.byte_at(tag_end).is_some_and(is_identifier_start_or_digit) {
            tag_end += 1;
        }
        if self.byte_at(tag_end) != Some(b'$') {
            self.pos += 1;
            return Ok(TokenKind::Punct);
        }
        let tag = &self.sql[start..=tag_end];
        let body_start = tag_end + 1;
        match self.sql[body_start..].find(tag) {
            Some(body_len) => {
                self.pos = body_start + body_len + tag.len();
                Ok(TokenKind::DollarString)
            }
            None => Err(self.unterminated(start, "dollar-quoted string")),
        }
    }

    /// Digits, an optional fraction and an optional exponent.
    fn number(&mut self) -> TokenKind {
        self.skip_while(|b| b.is_ascii_digit());
        if self.byte_at(self.pos) == Some(b'.') {
            self.pos += 1;
            self.skip_while(|b| b.is_ascii_digit());
        }
        if matches!(self.byte_at(self.pos), Some(b'e' | b'E')) {
            let digits_at = match self.byte_at(self.pos + 1) {
                Some(b'+' | b'-') => self.pos + 2,
                _ => self.pos + 1,
            };
            if self.byte_at(digits_at).is_some_and(|b| b.is_ascii_digit()) {
                self.pos = digits_at;
                self.skip_while(|b| b.is_ascii_digit());
            }
        }
        TokenKind::Number
    }

    fn unterminated(&self, start: usize, what: &str) -> DbError {
        DbError::Syntax { message: format!("unterminated {what}"), position: char_position(self.sql, start) }
    }
}

/// PostgreSQL's whitespace: space, tab, newline, carriage return, form feed, vertical tab.
fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'\x0b')
}

/// Letters, `_` and any byte of a non-ASCII character.
fn is_identifier_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_' || !byte.is_ascii()
}

fn is_identifier_start_or_digit(byte: u8) -> bool {
    is_identifier_start(byte) || byte.is_ascii_digit()
}

/// Inside an identifier `$` is allowed too (`a$b`), as in PostgreSQL.
fn is_identifier_part(byte: u8) -> bool {
    is_identifier_start_or_digit(byte) || byte == b'$'
}

/// The content of a quoted token: quotes removed and escapes resolved. Other tokens are
/// returned as written.
fn unquote(token: Token) -> String {
    let text = token.text;
    match token.kind {
        TokenKind::String if text.starts_with(['e', 'E']) => unescape_backslashes(&text[2..text.len() - 1]),
        TokenKind::String => text[1..text.len() - 1].replace("''", "'"),
        TokenKind::QuotedIdent => text[1..text.len() - 1].replace("\"\"", "\""),
        TokenKind::DollarString => {
            let tag_len = text[1..].find('$').map_or(1, |i| i + 2);
            text[tag_len..text.len() - tag_len].to_string()
        }
        _ => text.to_string(),
    }
}

/// The body of an `E'...'` string: `''` and backslash escapes (`\n`, `\t`, `\r`, `\b`,
/// `\f`; any other character stands for itself).
fn unescape_backslashes(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('b') => out.push('\u{8}'),
                Some('f') => out.push('\u{c}'),
                Some(other) => out.push(other),
                None => {}
            },
            '\'' => {
                // A doubled quote; the lexer guarantees the second one follows.
                chars.next();
                out.push('\'');
            }
            other => out.push(other),
        }
    }
    out
}

/// Characters in `sql` before byte offset `byte`.
fn chars_before(sql: &str, byte: usize) -> usize {
    sql.get(..byte).map_or(0, |prefix| prefix.chars().count())
}

/// 1-based character position of byte offset `byte` in `sql`.
fn char_position(sql: &str, byte: usize) -> usize {
    chars_before(sql, byte) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    // ----- helpers -----

    fn special(sql: &str) -> Special {
        match parse_special(sql) {
            Some(Ok(special)) => special,
            other => panic!("{sql:?}: expected a special statement, got {other:?}"),
        }
    }

    /// The position of the syntax error `sql` gives.
    fn error_position(sql: &str) -> usize {
        match parse_special(sql) {
            Some(Err(DbError::Syntax { position, .. })) => position,
            other => panic!("{sql:?}: expected a syntax error, got {other:?}"),
        }
    }

    fn commit(wait: Option<CommitWait>, logging: Option<CommitLogging>) -> Special {
        Special::Commit { wait, logging }
    }

    fn texts(pieces: &[Piece]) -> Vec<String> {
        pieces
            .iter()
            .map(|piece| match piece {
                Piece::Statement(statement) => statement.text.clone(),
                Piece::Block { .. } => panic!("unexpected block in {pieces:?}"),
            })
            .collect()
    }

    fn split_texts(sql: &str) -> Vec<String> {
        texts(&split_statements(sql).expect("split"))
    }

    fn split_error_position(sql: &str) -> usize {
        match split_statements(sql) {
            Err(DbError::Syntax { position, .. }) => position,
            other => panic!("{sql:?}: expected a syntax error, got {other:?}"),
        }
    }

    fn set(assignments: &[(&str, ParamValue)]) -> Vec<(String, ParamValue)> {
        assignments.iter().map(|(name, value)| (name.to_string(), value.clone())).collect()
    }

    fn word(text: &str) -> ParamValue {
        ParamValue::Word(text.into())
    }

    fn quoted(text: &str) -> ParamValue {
        ParamValue::Quoted(text.into())
    }

    fn number(text: &str) -> ParamValue {
        ParamValue::Number(text.into())
    }

    fn pg_set(name: &str, value: &str, local: bool) -> Special {
        Special::PgSet { name: name.into(), value: value.into(), local }
    }

    // ----- COMMIT -----

    #[test]
    fn plain_commit_forms() {
        for sql in [
            "COMMIT",
            "commit",
            "COMMIT;",
            "  Commit  ;  ",
            "COMMIT WORK",
            "commit\n\twork;",
            "COMMIT TRANSACTION",
            "END",
            "end;",
            "END WORK",
            "END TRANSACTION;",
            "COMMIT WRITE",
            "COMMIT -- trailing comment",
            "/* leading */ COMMIT",
        ] {
            assert_eq!(special(sql), commit(None, None), "{sql:?}");
        }
    }

    #[test]
    fn commit_write_options_in_either_order() {
        use CommitLogging::*;
        use CommitWait::*;
        let cases = [
            ("COMMIT WRITE WAIT", Some(Wait), None),
            ("COMMIT WRITE NOWAIT", Some(NoWait), None),
            ("COMMIT WRITE IMMEDIATE", None, Some(Immediate)),
            ("COMMIT WRITE BATCH", None, Some(Batch)),
            ("COMMIT WRITE WAIT IMMEDIATE", Some(Wait), Some(Immediate)),
            ("commit write nowait immediate", Some(NoWait), Some(Immediate)),
            ("COMMIT WRITE IMMEDIATE NOWAIT", Some(NoWait), Some(Immediate)),
            ("COMMIT WRITE BATCH NOWAIT", Some(NoWait), Some(Batch)),
            ("COMMIT WRITE NOWAIT BATCH;", Some(NoWait), Some(Batch)),
            ("COMMIT WRITE BATCH WAIT", Some(Wait), Some(Batch)),
            ("COMMIT WORK WRITE WAIT", Some(Wait), None),
            ("Commit Work Write Batch NoWait ;", Some(NoWait), Some(Batch)),
            ("COMMIT TRANSACTION WRITE NOWAIT", Some(NoWait), None),
            ("COMMIT\n  WRITE\r\n\tBATCH   NOWAIT", Some(NoWait), Some(Batch)),
            ("COMMIT /* why */ WRITE BATCH -- because\n NOWAIT", Some(NoWait), Some(Batch)),
        ];
        for (sql, wait, logging) in cases {
            assert_eq!(special(sql), commit(wait, logging), "{sql:?}");
        }
    }

    #[test]
    fn commit_write_errors_point_at_the_bad_word() {
        assert_eq!(error_position("COMMIT WRITE FAST"), 14);
        assert_eq!(error_position("COMMIT WRITE WAIT NOWAIT"), 19);
        assert_eq!(error_position("commit write batch immediate"), 20);
        assert_eq!(error_position("COMMIT WRITE NOWAIT BATCH WAIT"), 27);
        assert_eq!(error_position("COMMIT WRITE FORCE_WAIT"), 14);
        assert_eq!(error_position("COMMIT WRITE 'nowait'"), 14);
        assert_eq!(error_position("COMMIT NOWAIT"), 8);
        assert_eq!(error_position("COMMIT WORK BATCH"), 13);
        assert_eq!(error_position("END NOW"), 5);
        // Positions count characters, not bytes.
        assert_eq!(error_position("/* é */ COMMIT WRITE FAST"), 22);
    }

    #[test]
    fn commit_write_error_messages_say_what_was_expected() {
        let Some(Err(error)) = parse_special("COMMIT WRITE FAST") else { panic!("expected an error") };
        let message = error.to_string();
        assert!(message.contains("FAST") && message.contains("NOWAIT"), "{message}");
        assert_eq!(error.sqlstate(), "42601");
        let Some(Err(error)) = parse_special("COMMIT WRITE WAIT NOWAIT") else { panic!("expected an error") };
        assert!(error.to_string().contains("at most one of WAIT and NOWAIT"), "{error}");
    }

    // ----- ROLLBACK, BEGIN -----

    #[test]
    fn rollback_forms() {
        for sql in ["ROLLBACK", "rollback;", "ROLLBACK WORK", "ROLLBACK TRANSACTION;", "ABORT", "abort work"]
        {
            assert_eq!(special(sql), Special::Rollback, "{sql:?}");
        }
        assert!(parse_special("ROLLBACK AND CHAIN").is_none());
    }

    #[test]
    fn savepoint_forms_fold_their_names_as_identifiers() {
        assert_eq!(special("SAVEPOINT a"), Special::Savepoint("a".into()));
        assert_eq!(special("savepoint \"_pg3_1\";"), Special::Savepoint("_pg3_1".into()));
        assert_eq!(special("SAVEPOINT JDBC_SAVEPOINT_1"), Special::Savepoint("jdbc_savepoint_1".into()));
        assert_eq!(special("ROLLBACK TO SAVEPOINT a"), Special::RollbackToSavepoint("a".into()));
        assert_eq!(special("ROLLBACK WORK TO \"B\""), Special::RollbackToSavepoint("B".into()));
        assert_eq!(special("rollback transaction to savepoint x"), Special::RollbackToSavepoint("x".into()));
        assert_eq!(special("RELEASE SAVEPOINT a"), Special::ReleaseSavepoint("a".into()));
        assert_eq!(special("RELEASE a"), Special::ReleaseSavepoint("a".into()));
        for bad in ["SAVEPOINT", "SAVEPOINT a b", "ROLLBACK TO", "RELEASE SAVEPOINT 'a'"] {
            let Some(Err(error)) = parse_special(bad) else { panic!("{bad:?} should be a syntax error") };
            assert_eq!(error.sqlstate(), "42601", "{bad:?}");
        }
    }

    #[test]
    fn begin_forms() {
        for sql in [
            "BEGIN",
            "begin;",
            "BEGIN WORK",
            "BEGIN TRANSACTION",
            "BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE",
            "BEGIN ISOLATION LEVEL READ COMMITTED;",
            "BEGIN READ ONLY",
            "BEGIN NOT DEFERRABLE",
            "BEGIN DEFERRABLE",
            "START TRANSACTION",
            "start transaction read write;",
        ] {
            assert_eq!(special(sql), Special::Begin, "{sql:?}");
        }
        assert!(parse_special("BEGIN INSERT INTO t VALUES (1); COMMIT; END;").is_none());
        assert_eq!(error_position("BEGIN; COMMIT"), 6);
        assert_eq!(error_position("START TRANSACTION READ ONLY; COMMIT"), 28);
        assert!(parse_special("START SOMETHING").is_none());
    }

    // ----- ALTER SESSION / SYSTEM -----

    #[test]
    fn alter_session_set() {
        assert_eq!(
            special("ALTER SESSION SET commit_wait = nowait"),
            Special::AlterSet {
                scope: Scope::Session,
                assignments: set(&[("commit_wait", word("nowait"))]),
                persistence: None,
            }
        );
        assert_eq!(
            special("alter session set COMMIT_LOGGING=BATCH commit_wait = 'NOWAIT';"),
            Special::AlterSet {
                scope: Scope::Session,
                assignments: set(&[("commit_logging", word("BATCH")), ("commit_wait", quoted("NOWAIT"))]),
                persistence: None,
            }
        );
        assert_eq!(
            special("ALTER SESSION SET commit_write = 'batch,nowait'"),
            Special::AlterSet {
                scope: Scope::Session,
                assignments: set(&[("commit_write", quoted("batch,nowait"))]),
                persistence: None,
            }
        );
    }

    #[test]
    fn alter_set_values() {
        let value_of = |sql: &str| match special(sql) {
            Special::AlterSet { mut assignments, .. } => assignments.remove(0).1,
            other => panic!("{other:?}"),
        };
        assert_eq!(value_of("ALTER SESSION SET x = 1048576"), number("1048576"));
        assert_eq!(value_of("ALTER SESSION SET x = -3"), number("-3"));
        assert_eq!(value_of("ALTER SESSION SET x = 1.5"), number("1.5"));
        assert_eq!(value_of("ALTER SESSION SET x = TRUE"), word("TRUE"));
        assert_eq!(value_of("ALTER SESSION SET x = off"), word("off"));
        assert_eq!(value_of("ALTER SESSION SET x = DEFAULT"), ParamValue::Default);
        assert_eq!(value_of("ALTER SESSION SET x = 'default'"), quoted("default"));
        assert_eq!(value_of("ALTER SESSION SET x = 'it''s'"), quoted("it's"));
        assert_eq!(value_of("ALTER SESSION SET x = E'a\\tb'"), quoted("a\tb"));
        assert_eq!(value_of("ALTER SESSION SET x = $$a;b$$"), quoted("a;b"));
        assert_eq!(value_of("ALTER SESSION SET x = ''"), quoted(""));
        assert_eq!(ParamValue::Default.text(), "DEFAULT");
        assert!(quoted("a").is_quoted() && !word("a").is_quoted());
    }

    #[test]
    fn alter_system_set_with_scope_and_sid() {
        assert_eq!(
            special("ALTER SYSTEM SET commit_logging = batch"),
            Special::AlterSet {
                scope: Scope::System,
                assignments: set(&[("commit_logging", word("batch"))]),
                persistence: None,
            }
        );
        assert_eq!(
            special("ALTER SYSTEM SET batch_flush_timeout_ms = 3000 SCOPE = MEMORY"),
            Special::AlterSet {
                scope: Scope::System,
                assignments: set(&[("batch_flush_timeout_ms", number("3000"))]),
                persistence: Some(Persistence::Memory),
            }
        );
        assert_eq!(
            special("alter system set commit_wait='FORCE_WAIT' sid='*' scope=both;"),
            Special::AlterSet {
                scope: Scope::System,
                assignments: set(&[("commit_wait", quoted("FORCE_WAIT"))]),
                persistence: Some(Persistence::Both),
            }
        );
        assert_eq!(
            special("ALTER SYSTEM SET x = 1 y = 2 SCOPE = SPFILE SID = 'redo1'"),
            Special::AlterSet {
                scope: Scope::System,
                assignments: set(&[("x", number("1")), ("y", number("2"))]),
                persistence: Some(Persistence::Spfile),
            }
        );
    }

    #[test]
    fn alter_set_errors() {
        assert_eq!(error_position("ALTER SESSION SET"), 18);
        assert_eq!(error_position("ALTER SESSION SET commit_wait"), 30);
        assert_eq!(error_position("ALTER SESSION SET commit_wait nowait"), 31);
        assert_eq!(error_position("ALTER SESSION SET commit_wait = "), 32);
        assert_eq!(error_position("ALTER SESSION SET commit_wait = ,"), 33);
        assert_eq!(error_position("ALTER SYSTEM SET x = 1 SCOPE = DISK"), 32);
        assert_eq!(error_position("ALTER SYSTEM SET x = 1 SCOPE = MEMORY SCOPE = BOTH"), 39);
        assert_eq!(error_position("ALTER SYSTEM SET x = 1 SID = *"), 30);
        assert_eq!(error_position("ALTER SYSTEM SET x = 1 SCOPE = MEMORY y = 2"), 39);
        assert_eq!(error_position("ALTER SESSION"), 14);
        assert!(matches!(
            parse_special("ALTER SYSTEM SWITCH LOGFILE"),
            Some(Err(DbError::Unsupported(text))) if text == "ALTER SYSTEM SWITCH LOGFILE"
        ));
        assert!(parse_special("ALTER TABLE t ADD COLUMN c INT").is_none());
    }

    // ----- SHOW PARAMETER -----

    #[test]
    fn show_parameter() {
        assert_eq!(special("SHOW PARAMETER"), Special::ShowParameter(None));
        assert_eq!(special("show parameters;"), Special::ShowParameter(None));
        assert_eq!(special("SHOW PARAMETER COMMIT"), Special::ShowParameter(Some("commit".into())));
        assert_eq!(
            special("show parameters log_buffer ;"),
            Special::ShowParameter(Some("log_buffer".into()))
        );
        assert_eq!(error_position("SHOW PARAMETER a b"), 18);
    }

    // ----- PostgreSQL SET / RESET / SHOW -----

    #[test]
    fn pg_set_forms() {
        assert_eq!(special("SET commit_wait = nowait"), pg_set("commit_wait", "nowait", false));
        assert_eq!(special("set Commit_Wait TO 'NOWAIT';"), pg_set("commit_wait", "NOWAIT", false));
        assert_eq!(special("SET SESSION extra_float_digits = 3"), pg_set("extra_float_digits", "3", false));
        assert_eq!(special("SET LOCAL commit_logging = batch"), pg_set("commit_logging", "batch", true));
        assert_eq!(special("SET app.x = 1"), pg_set("app.x", "1", false));
        assert_eq!(special("SET application_name = 'psql'"), pg_set("application_name", "psql", false));
        assert_eq!(
            special("SET search_path = \"$user\", public"),
            pg_set("search_path", "\"$user\", public", false)
        );
        assert_eq!(special("SET x = -1.5"), pg_set("x", "-1.5", false));
        assert_eq!(special("SET x = on"), pg_set("x", "on", false));
        assert_eq!(special("SET x TO 'a', 'b' , c"), pg_set("x", "a, b, c", false));
    }

    #[test]
    fn pg_set_time_zone() {
        assert_eq!(special("SET TIME ZONE 'UTC'"), pg_set("timezone", "UTC", false));
        assert_eq!(special("set local time zone 'Europe/Paris';"), pg_set("timezone", "Europe/Paris", true));
        assert_eq!(special("SET TIME ZONE -7"), pg_set("timezone", "-7", false));
        assert_eq!(special("SET TIME ZONE LOCAL"), Special::PgReset(Some("timezone".into())));
        assert_eq!(special("SET TIME ZONE DEFAULT"), Special::PgReset(Some("timezone".into())));
        assert_eq!(special("SET timezone = 'UTC'"), pg_set("timezone", "UTC", false));
    }

    #[test]
    fn pg_set_default_is_reset() {
        assert_eq!(special("SET commit_wait TO DEFAULT"), Special::PgReset(Some("commit_wait".into())));
        assert_eq!(special("SET commit_wait = default;"), Special::PgReset(Some("commit_wait".into())));
        assert_eq!(special("SET commit_wait = 'default'"), pg_set("commit_wait", "default", false));
        assert!(matches!(parse_special("SET LOCAL x TO DEFAULT"), Some(Err(DbError::Unsupported(_)))));
    }

    #[test]
    fn pg_set_errors_and_forms_left_to_sqlparser() {
        assert_eq!(error_position("SET x"), 6);
        assert_eq!(error_position("SET x 1"), 7);
        assert_eq!(error_position("SET x ="), 8);
        assert_eq!(error_position("SET x = 1 2"), 11);
        assert_eq!(error_position("SET x = 1, DEFAULT"), 12);
        assert_eq!(error_position("SET = 1"), 5);
        assert_eq!(error_position("SET app. = 1"), 10);
        for sql in [
            "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
            "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
            "SET SESSION AUTHORIZATION bob",
            "SET ROLE admin",
            "SET CONSTRAINTS ALL DEFERRED",
        ] {
            assert!(parse_special(sql).is_none(), "{sql:?}");
        }
    }

    #[test]
    fn pg_reset_and_show() {
        assert_eq!(special("RESET ALL"), Special::PgReset(None));
        assert_eq!(special("reset Commit_Wait;"), Special::PgReset(Some("commit_wait".into())));
        assert_eq!(special("RESET TIME ZONE"), Special::PgReset(Some("timezone".into())));
        let maintenance = |command, tables: &[&str]| Special::Maintenance {
            command,
            tables: tables.iter().map(|t| t.to_string()).collect(),
        };
        assert_eq!(
            special("vacuum analyze pgbench_branches"),
            maintenance(Maintenance::Vacuum, &["pgbench_branches"])
        );
        assert_eq!(special("VACUUM"), maintenance(Maintenance::Vacuum, &[]));
        assert_eq!(
            special("vacuum (verbose, analyze) public.a, \"B\" (x, y)"),
            maintenance(Maintenance::Vacuum, &["a", "B"])
        );
        assert_eq!(special("ANALYZE verbose t"), maintenance(Maintenance::Analyze, &["t"]));
        assert!(matches!(parse_special("vacuum a b"), Some(Err(DbError::Syntax { .. }))));
        assert_eq!(special("SHOW ALL"), Special::PgShow(None));
        assert_eq!(special("show Commit_Wait;"), Special::PgShow(Some("commit_wait".into())));
        assert_eq!(special("SHOW app.x"), Special::PgShow(Some("app.x".into())));
        assert_eq!(special("SHOW TIME ZONE"), Special::PgShow(Some("timezone".into())));
        assert_eq!(
            special("SHOW TRANSACTION ISOLATION LEVEL"),
            Special::PgShow(Some("transaction_isolation".into()))
        );
        assert_eq!(special("SHOW \"DateStyle\""), Special::PgShow(Some("datestyle".into())));
        assert_eq!(error_position("SHOW"), 5);
        assert_eq!(error_position("SHOW a b"), 8);
        assert_eq!(error_position("RESET"), 6);
        assert_eq!(error_position("RESET a b"), 9);
    }

    #[test]
    fn ordinary_sql_is_not_special() {
        for sql in [
            "SELECT 1",
            "SELECT 'COMMIT'",
            "select * from commits",
            "INSERT INTO t VALUES (1, 'COMMIT WRITE NOWAIT')",
            "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)",
            "UPDATE t SET v = 'x' WHERE id = 1",
            "DELETE FROM t",
            "\"COMMIT\"",
            "-- COMMIT",
            "/* COMMIT */",
            "",
            ";",
            "(COMMIT)",
            "COMMIT WRITE 'unterminated",
        ] {
            assert!(parse_special(sql).is_none(), "{sql:?}");
        }
    }

    // ----- parse_commit_write -----

    #[test]
    fn commit_write_parameter_values() {
        use CommitLogging::*;
        use CommitWait::*;
        assert_eq!(parse_commit_write("batch,nowait").ok(), Some((Some(NoWait), Some(Batch))));
        assert_eq!(parse_commit_write("NOWAIT,BATCH").ok(), Some((Some(NoWait), Some(Batch))));
        assert_eq!(parse_commit_write(" Immediate , Wait ").ok(), Some((Some(Wait), Some(Immediate))));
        assert_eq!(parse_commit_write("wait").ok(), Some((Some(Wait), None)));
        assert_eq!(parse_commit_write("batch").ok(), Some((None, Some(Batch))));
        assert_eq!(parse_commit_write("").ok(), Some((None, None)));
        assert_eq!(parse_commit_write("  ").ok(), Some((None, None)));
        for bad in [
            "fast",
            "wait,nowait",
            "batch,batch",
            "batch,",
            ",nowait",
            "batch;nowait",
            "force_wait",
            "batch nowait",
        ] {
            match parse_commit_write(bad) {
                Err(DbError::InvalidParameterValue { parameter, value, .. }) => {
                    assert_eq!((parameter.as_str(), value.as_str()), ("commit_write", bad));
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    // ----- split_statements -----

    #[test]
    fn split_simple() {
        assert_eq!(split_texts("SELECT 1; SELECT 2"), ["SELECT 1", "SELECT 2"]);
        assert_eq!(split_texts("  SELECT 1 ;\n\n SELECT 2 ;  "), ["SELECT 1", "SELECT 2"]);
        assert_eq!(split_texts(";;SELECT 1;;; ;"), ["SELECT 1"]);
        assert!(split_texts("").is_empty());
        assert!(split_texts(" ; \n ;").is_empty());
        assert!(split_texts("-- only a comment").is_empty());
        assert!(split_texts("/* a */ ; -- b\n;").is_empty());
    }

    #[test]
    fn split_keeps_offsets_into_the_original() {
        let sql = "  SELECT 1 ;\n INSERT INTO t VALUES ('é;');commit";
        let pieces = split_statements(sql).expect("split");
        let statements: Vec<&SqlText> = pieces
            .iter()
            .map(|piece| match piece {
                Piece::Statement(statement) => statement,
                Piece::Block { .. } => panic!("block"),
            })
            .collect();
        assert_eq!(statements.len(), 3);
        for statement in &statements {
            assert_eq!(&sql[statement.offset..statement.offset + statement.text.len()], statement.text);
        }
        assert_eq!(statements[0].offset, 2);
        assert_eq!(statements[2].text, "commit");
        assert_eq!(pieces[2].offset(), statements[2].offset);
    }

    #[test]
    fn split_skips_semicolons_in_quotes_and_comments() {
        assert_eq!(split_texts("SELECT 'a;b'; SELECT 2"), ["SELECT 'a;b'", "SELECT 2"]);
        assert_eq!(split_texts("SELECT 'it''s; here'; SELECT 2"), ["SELECT 'it''s; here'", "SELECT 2"]);
        assert_eq!(split_texts("SELECT E'a\\';b'; SELECT 2"), ["SELECT E'a\\';b'", "SELECT 2"]);
        assert_eq!(
            split_texts("SELECT \"a;\"\"b\" FROM t; SELECT 2"),
            ["SELECT \"a;\"\"b\" FROM t", "SELECT 2"]
        );
        assert_eq!(split_texts("SELECT $$a;b$$; SELECT 2"), ["SELECT $$a;b$$", "SELECT 2"]);
        assert_eq!(
            split_texts("SELECT $fn$ a; $$ b; $fn$; SELECT 2"),
            ["SELECT $fn$ a; $$ b; $fn$", "SELECT 2"]
        );
        assert_eq!(split_texts("SELECT 1 -- not; here\n; SELECT 2"), ["SELECT 1", "SELECT 2"]);
        assert_eq!(
            split_texts("SELECT /* a; /* nested; */ b; */ 1; SELECT 2"),
            ["SELECT /* a; /* nested; */ b; */ 1", "SELECT 2"]
        );
        // `$1` is a parameter and `a$b` an identifier, not dollar quotes.
        assert_eq!(split_texts("SELECT $1; SELECT a$b; SELECT 3"), ["SELECT $1", "SELECT a$b", "SELECT 3"]);
        // A comment opener inside a string is not a comment.
        assert_eq!(
            split_texts("SELECT '--'; SELECT '/*'; SELECT 3"),
            ["SELECT '--'", "SELECT '/*'", "SELECT 3"]
        );
    }

    #[test]
    fn split_errors_on_unterminated_quotes_and_comments() {
        assert_eq!(split_error_position("SELECT 1; SELECT 'abc"), 18);
        assert_eq!(split_error_position("SELECT \"abc"), 8);
        assert_eq!(split_error_position("SELECT $x$ abc $y$"), 8);
        assert_eq!(split_error_position("SELECT 1 /* a /* b */"), 10);
        assert_eq!(split_error_position("SELECT E'abc\\'"), 8);
    }

    #[test]
    fn split_block() {
        let sql = "BEGIN insert into t values (1); commit; insert into t values (2); commit; END;";
        let pieces = split_statements(sql).expect("split");
        let [Piece::Block { offset, statements }] = pieces.as_slice() else { panic!("{pieces:?}") };
        assert_eq!(*offset, 0);
        let texts: Vec<&str> = statements.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["insert into t values (1)", "commit", "insert into t values (2)", "commit"]);
        for statement in statements {
            assert_eq!(&sql[statement.offset..statement.offset + statement.text.len()], statement.text);
        }
    }

    #[test]
    fn split_block_among_statements() {
        let sql = "SELECT 1;\nbegin\n  update t set v = ';' where id = 1;\n  commit write batch nowait;\nend;\nSELECT 2";
        let pieces = split_statements(sql).expect("split");
        assert_eq!(pieces.len(), 3);
        assert!(matches!(&pieces[0], Piece::Statement(s) if s.text == "SELECT 1"));
        let Piece::Block { offset, statements } = &pieces[1] else { panic!("{pieces:?}") };
        assert_eq!(&sql[*offset..*offset + 5], "begin");
        assert_eq!(statements.len(), 2);
        assert_eq!(statements[0].text, "update t set v = ';' where id = 1");
        assert_eq!(statements[1].text, "commit write batch nowait");
        assert!(matches!(&pieces[2], Piece::Statement(s) if s.text == "SELECT 2"));
    }

    #[test]
    fn split_transaction_begin_is_not_a_block() {
        for begin in [
            "BEGIN",
            "begin",
            "BEGIN TRANSACTION",
            "BEGIN WORK",
            "BEGIN ISOLATION LEVEL SERIALIZABLE",
            "BEGIN READ ONLY",
            "BEGIN DEFERRABLE",
            "BEGIN NOT DEFERRABLE",
        ] {
            let sql = format!("{begin}; INSERT INTO t VALUES (1); END;");
            assert_eq!(split_texts(&sql), [begin, "INSERT INTO t VALUES (1)", "END"], "{sql:?}");
        }
        assert_eq!(split_texts("END; END"), ["END", "END"]);
        assert_eq!(split_texts("\"BEGIN\" x; END"), ["\"BEGIN\" x", "END"]);
    }

    #[test]
    fn split_block_edge_cases() {
        // The last END may lack its semicolon; an empty block is allowed.
        let pieces = split_statements("BEGIN SELECT 1; END").expect("split");
        assert!(matches!(pieces.as_slice(), [Piece::Block { statements, .. }] if statements.len() == 1));
        let pieces = split_statements("BEGIN END;").expect("split");
        assert!(matches!(pieces.as_slice(), [Piece::Block { statements, .. }] if statements.is_empty()));
        // BEGIN; inside a block is an ordinary statement.
        let pieces = split_statements("BEGIN SELECT 1; BEGIN; END;").expect("split");
        assert!(
            matches!(pieces.as_slice(), [Piece::Block { statements, .. }] if statements[1].text == "BEGIN")
        );
        // Empty statements inside a block are dropped.
        let pieces = split_statements("BEGIN SELECT 1;; ; SELECT 2; END;").expect("split");
        assert!(matches!(pieces.as_slice(), [Piece::Block { statements, .. }] if statements.len() == 2));
    }

    #[test]
    fn split_block_errors() {
        assert_eq!(split_error_position("SELECT 1; BEGIN INSERT INTO t VALUES (1); COMMIT;"), 11);
        assert!(matches!(
            split_statements("BEGIN SELECT 1; BEGIN SELECT 2; END; END;"),
            Err(DbError::Unsupported(_))
        ));
        assert!(matches!(split_statements("BEGIN BEGIN SELECT 2; END; END;"), Err(DbError::Unsupported(_))));
    }

    #[test]
    fn relocate_moves_positions_into_the_original() {
        let sql = "SELECT 'é';\n  COMMIT WRITE FAST;";
        let pieces = split_statements(sql).expect("split");
        let Piece::Statement(statement) = &pieces[1] else { panic!("{pieces:?}") };
        let Some(Err(error)) = parse_special(&statement.text) else { panic!("expected an error") };
        let DbError::Syntax { position, .. } = statement.relocate(sql, error) else { panic!("syntax") };
        assert_eq!(sql.chars().nth(position - 1), Some('F'));
        assert_eq!(position, 28);
        assert!(matches!(statement.relocate(sql, DbError::DivisionByZero), DbError::DivisionByZero));
    }

    // ----- property tests -----

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// Checks what holds for any successful split: each text is the slice of `sql`
        /// at its offset, non-empty, trimmed, and the pieces come in order without
        /// overlapping.
        fn check_slices(sql: &str, pieces: &[Piece]) {
            let mut end = 0;
            let all = pieces.iter().flat_map(|piece| match piece {
                Piece::Statement(statement) => vec![statement],
                Piece::Block { statements, .. } => statements.iter().collect(),
            });
            for statement in all {
                assert!(statement.offset >= end, "{sql:?}: overlapping pieces");
                assert_eq!(
                    sql.get(statement.offset..statement.offset + statement.text.len()),
                    Some(&*statement.text)
                );
                assert!(!statement.text.is_empty());
                let bytes = statement.text.as_bytes();
                assert!(
                    !is_whitespace(bytes[0]) && !is_whitespace(bytes[bytes.len() - 1]),
                    "{sql:?}: untrimmed"
                );
                end = statement.offset + statement.text.len();
            }
        }

        /// Fragments a statement is made of: words and quoted things holding `;`.
        fn fragment() -> impl Strategy<Value = String> {
            prop_oneof![
                "[a-df-z_][a-z0-9_]{0,6}".prop_filter("no block keywords", |w| w != "begin" && w != "end"),
                "[0-9]{1,4}",
                "'[a-z ;$\"-]{0,6}'",
                "'[a-z;]{0,3}''[a-z;]{0,3}'",
                "\"[a-z ;']{1,6}\"",
                "\\$\\$[a-z ;'\"]{0,6}\\$\\$",
                "\\$q\\$[a-z ;']{0,6}\\$q\\$",
                "/\\* [a-z ;'\"]{0,6} \\*/",
                "/\\* a /\\* [a-z;]{0,3} \\*/ b \\*/",
                "[(),=*+<>]",
            ]
        }

        /// A statement: fragments separated by spaces, starting and ending with a word.
        fn statement() -> impl Strategy<Value = String> {
            ("[a-df-z][a-z]{0,5}", proptest::collection::vec(fragment(), 0..6), "[a-df-z][a-z]{0,5}")
                .prop_filter("no block keywords", |(first, _, last)| {
                    first != "begin" && first != "end" && last != "begin" && last != "end"
                })
                .prop_map(|(first, middle, last)| {
                    let mut parts = vec![first];
                    parts.extend(middle);
                    parts.push(last);
                    parts.join(" ")
                })
        }

        /// What may stand between two statements besides `;`.
        fn separator() -> impl Strategy<Value = String> {
            prop_oneof![
                Just(";".to_string()),
                Just(" ;\n".to_string()),
                Just(";;".to_string()),
                Just("; -- note; here\n".to_string()),
                Just("\t/* ; */ ;\r\n".to_string()),
                Just(";\n/* a /* ; */ */ ;".to_string()),
            ]
        }

        proptest! {
            #[test]
            fn never_panics_and_slices_are_exact(sql in "\\PC{0,80}") {
                if let Ok(pieces) = split_statements(&sql) {
                    check_slices(&sql, &pieces);
                }
                let _ = parse_special(&sql);
            }

            #[test]
            fn never_panics_on_sql_like_text(sql in "[a-zA-Z0-9 ;'\"$/*\\-\\n().,=E_é]{0,80}") {
                if let Ok(pieces) = split_statements(&sql) {
                    check_slices(&sql, &pieces);
                }
                let _ = parse_special(&sql);
                let _ = parse_commit_write(&sql);
            }

            /// A script built from known statements and separators splits back into
            /// exactly those statements.
            #[test]
            fn splits_back_into_the_statements_joined(
                statements in proptest::collection::vec(statement(), 0..6),
                separators in proptest::collection::vec(separator(), 6),
                leading in "[ \n\t]{0,2}",
            ) {
                let mut sql = leading;
                for (statement, separator) in statements.iter().zip(&separators) {
                    sql.push_str(statement);
                    sql.push_str(separator);
                }
                let pieces = split_statements(&sql).expect("split");
                check_slices(&sql, &pieces);
                prop_assert_eq!(texts(&pieces), statements);
            }

            /// Without quotes, comments, dollars or block keywords, splitting is cutting
            /// at every `;`, trimming, and dropping the empty pieces.
            #[test]
            fn plain_text_splits_like_str_split(sql in "[a-d0-9 ;\\n\\t,()=*]{0,60}") {
                let expected: Vec<String> =
                    sql.split(';').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
                prop_assert_eq!(split_texts(&sql), expected);
            }
        }
    }
}
