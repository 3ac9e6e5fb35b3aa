//! COPY: `COPY table [(columns)] FROM STDIN` for bulk load, and `COPY table|(query) TO
//! STDOUT`, in PostgreSQL's text and csv formats, with both option syntaxes
//! (`WITH (FORMAT csv, HEADER, DELIMITER ',', NULL '')` and the old `WITH CSV HEADER
//! DELIMITER ','`). This module parses the statement, decodes the incoming data into
//! rows and encodes outgoing rows; `protocol` runs the copy-in mode and hands the rows to
//! the db's bulk load (one statement: a bad row fails the whole COPY).
//!
//! # Decoding
//! Data arrives in CopyData messages cut anywhere, so the decoder keeps the incomplete
//! record and its scan state (inside a csv quote, after a text backslash) between
//! messages: each byte is scanned once. A record ends at a newline (`\n` or `\r\n`)
//! outside csv quotes; a line `\.` ends the data. Line numbers count records from 1,
//! the header included, as PostgreSQL's `CONTEXT: COPY t, line n` does.
//!
//! Text format: fields split at the delimiter (tab by default), `\N` (the NULL string,
//! compared before unescaping) is NULL, and `\b \f \n \r \t \v \\`, `\`-octal (1-3
//! digits) and `\x`-hex (1-2 digits) are unescaped; a backslash before any other
//! character stands for that character. CSV: fields split at the delimiter (comma)
//! outside quotes, `""` inside quotes is a quote (or the ESCAPE character before a quote),
//! an unquoted field equal to the NULL string (empty by default) is NULL and a quoted one
//! never is (except FORCE_NULL columns), FORCE_NOT_NULL columns are never NULL.
//! Field bytes must be UTF-8 (22021).

use db::Value;

use crate::protocol::SqlError;
use crate::words::{tokenize, Kind, Token};

/// The data format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Csv,
}

/// HEADER: none, skip the first line, or check it names the columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    None,
    Skip,
    Match,
}

/// Columns named by FORCE_QUOTE, FORCE_NOT_NULL or FORCE_NULL.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum ColumnSet {
    #[default]
    None,
    All,
    Some(Vec<String>),
}

impl ColumnSet {
    fn contains(&self, column: &str) -> bool {
        match self {
            ColumnSet::None => false,
            ColumnSet::All => true,
            ColumnSet::Some(columns) => columns.iter().any(|c| c == column),
        }
    }

    fn names(&self) -> &[String] {
        match self {
            ColumnSet::Some(columns) => columns,
            _ => &[],
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyOptions {
    pub format: Format,
    pub delimiter: u8,
    pub null: String,
    pub header: Header,
    pub quote: u8,
    pub escape: u8,
    pub force_quote: ColumnSet,
    pub force_not_null: ColumnSet,
    pub force_null: ColumnSet,
}

/// Options as given, before the format's defaults fill the rest in.
#[derive(Default)]
struct GivenOptions {
    format: Option<Format>,
    delimiter: Option<String>,
    null: Option<String>,
    header: Option<Header>,
    quote: Option<String>,
    escape: Option<String>,
    force_quote: ColumnSet,
    force_not_null: ColumnSet,
    force_null: ColumnSet,
}

/// What is copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A table (of `schema` if qualified, else as the search path finds it), and the
    /// columns named (none: all of them).
    Table { schema: Option<String>, name: String, columns: Vec<String> },
    /// `COPY (query) TO STDOUT`.
    Query(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    FromStdin,
    ToStdout,
}

/// A COPY statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyStatement {
    pub source: Source,
    pub direction: Direction,
    pub options: CopyOptions,
}

impl CopyStatement {
    /// The table's name for messages (`COPY t, line 3`).
    pub fn table_name(&self) -> &str {
        match &self.source {
            Source::Table { name, .. } => name,
            Source::Query(_) => "query",
        }
    }
}

fn syntax(message: impl Into<String>, token: Option<&Token>, sql: &str) -> SqlError {
    let mut error = SqlError::new("42601", message);
    let offset = token.map_or(sql.len(), |t| t.start);
    error.position = Some(sql[..offset].chars().count() + 1);
    error
}

fn unsupported(message: impl Into<String>) -> SqlError {
    SqlError::new("0A000", message)
}

fn invalid_option(message: impl Into<String>) -> SqlError {
    SqlError::new("22023", message)
}

/// Recognises a COPY statement in `sql` (one statement without its `;`). None when it is
/// not one; an error when it is one we cannot run.
pub fn parse(sql: &str) -> Option<Result<CopyStatement, SqlError>> {
    let tokens = tokenize(sql);
    if !tokens.first()?.is("COPY") {
        return None;
    }
    Some(parse_tokens(sql, &tokens))
}

fn parse_tokens(sql: &str, tokens: &[Token]) -> Result<CopyStatement, SqlError> {
    let mut p = Parser { sql, tokens, i: 1 };
    if p.peek_is("BINARY") {
        return Err(unsupported("COPY in binary format is not supported (use text or csv)"));
    }
    let source = if p.peek().is_some_and(|t| t.is_punct('(')) {
        // `(query)`: the text between the parentheses, which must balance.
        let open = p.next().expect("peeked");
        let mut depth = 1;
        let mut close = None;
        while let Some(t) = p.next() {
            if t.is_punct('(') {
                depth += 1;
            } else if t.is_punct(')') {
                depth -= 1;
                if depth == 0 {
                    close = Some(t.start);
                    break;
                }
            }
        }
        let close = close.ok_or_else(|| syntax("unbalanced parentheses around COPY's query", None, sql))?;
        Source::Query(sql[open.start + 1..close].trim().to_string())
    } else {
        let mut name = p.ident("COPY needs a table name")?;
        let mut schema = None;
        if p.peek().is_some_and(|t| t.is_punct('.')) {
            p.next();
            schema = Some(std::mem::replace(&mut name, p.ident("a table name after the schema")?));
        }
        let columns = if p.peek().is_some_and(|t| t.is_punct('(')) { p.column_list()? } else { Vec::new() };
        Source::Table { schema, name, columns }
    };
    let direction = match p.next() {
        Some(t) if t.is("FROM") => Direction::FromStdin,
        Some(t) if t.is("TO") => Direction::ToStdout,
        other => return Err(syntax("COPY expects FROM or TO", other, sql)),
    };
    match p.next() {
        Some(t) if t.is("STDIN") && direction == Direction::FromStdin => {}
        Some(t) if t.is("STDOUT") && direction == Direction::ToStdout => {}
        Some(t) if matches!(t.kind, Kind::Str(_)) || t.is("PROGRAM") => {
            return Err(unsupported(
                "COPY with a file or program on the server is not supported: use STDIN or STDOUT \
                 (psql's \\copy reads and writes files on the client)",
            ))
        }
        other => {
            let expected = if direction == Direction::FromStdin { "STDIN" } else { "STDOUT" };
            return Err(syntax(format!("COPY expects {expected}"), other, sql));
        }
    }
    if matches!(source, Source::Query(_)) && direction == Direction::FromStdin {
        return Err(syntax("COPY FROM needs a table, not a query", None, sql));
    }
    let given = p.options()?;
    let options = resolve(given, direction)?;
    Ok(CopyStatement { source, direction, options })
}

struct Parser<'a> {
    sql: &'a str,
    tokens: &'a [Token],
    i: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a Token> {
        self.tokens.get(self.i)
    }

    fn peek_is(&self, keyword: &str) -> bool {
        self.peek().is_some_and(|t| t.is(keyword))
    }

    fn next(&mut self) -> Option<&'a Token> {
        let token = self.tokens.get(self.i);
        self.i += 1;
        token
    }

    fn ident(&mut self, what: &str) -> Result<String, SqlError> {
        let token = self.next();
        token.and_then(Token::ident).ok_or_else(|| syntax(what.to_string(), token, self.sql))
    }

    fn string(&mut self, option: &str) -> Result<String, SqlError> {
        match self.next() {
            Some(Token { kind: Kind::Str(s), .. }) => Ok(s.clone()),
            other => Err(syntax(format!("COPY option {option} needs a quoted string"), other, self.sql)),
        }
    }

    /// `(a, b, ...)`
    fn column_list(&mut self) -> Result<Vec<String>, SqlError> {
        self.next();
        let mut columns = Vec::new();
        loop {
            columns.push(self.ident("a column name")?);
            match self.next() {
                Some(t) if t.is_punct(',') => {}
                Some(t) if t.is_punct(')') => return Ok(columns),
                other => return Err(syntax("expected , or ) in the column list", other, self.sql)),
            }
        }
    }

    /// A FORCE_* argument: `*`, `(a, b)` or (old syntax) `a, b`.
    fn column_set(&mut self) -> Result<ColumnSet, SqlError> {
        match self.peek() {
            Some(t) if t.is_punct('*') => {
                self.next();
                Ok(ColumnSet::All)
            }
            Some(t) if t.is_punct('(') => Ok(ColumnSet::Some(self.column_list()?)),
            _ => {
                let mut columns = vec![self.ident("a column name")?];
                while self.peek().is_some_and(|t| t.is_punct(',')) {
                    self.next();
                    columns.push(self.ident("a column name")?);
                }
                Ok(ColumnSet::Some(columns))
            }
        }
    }

    /// Everything after STDIN/STDOUT.
    fn options(&mut self) -> Result<GivenOptions, SqlError> {
        let mut given = GivenOptions::default();
        if self.peek_is("WITH") {
            self.next();
        }
        if self.peek().is_some_and(|t| t.is_punct('(')) {
            self.next();
            loop {
                self.new_option(&mut given)?;
                match self.next() {
                    Some(t) if t.is_punct(',') => {}
                    Some(t) if t.is_punct(')') => break,
                    other => return Err(syntax("expected , or ) in COPY's options", other, self.sql)),
                }
            }
        } else {
            while self.peek().is_some() {
                self.old_option(&mut given)?;
            }
        }
        if let Some(extra) = self.peek() {
            if extra.is("WHERE") {
                return Err(unsupported("COPY ... WHERE is not supported"));
            }
            return Err(syntax("unexpected text after COPY's options", Some(extra), self.sql));
        }
        Ok(given)
    }

    /// One option of `WITH (name value, ...)`.
    fn new_option(&mut self, given: &mut GivenOptions) -> Result<(), SqlError> {
        let name = self.ident("a COPY option name")?;
        // An option's value: a word, a string or nothing (booleans default to true).
        let value = match self.peek() {
            Some(t) if t.is_punct(',') || t.is_punct(')') => None,
            Some(Token { kind: Kind::Str(s), .. }) => {
                self.next();
                Some(s.clone())
            }
            Some(Token { kind: Kind::Word(w), .. }) if !name.starts_with("force_") => {
                self.next();
                Some(w.to_lowercase())
            }
            Some(Token { kind: Kind::Number(n), .. }) => {
                self.next();
                Some(n.clone())
            }
            _ => None,
        };
        let boolean = |value: &Option<String>| -> Result<bool, SqlError> {
            match value.as_deref() {
                None | Some("true" | "on" | "1") => Ok(true),
                Some("false" | "off" | "0") => Ok(false),
                Some(other) => {
                    Err(invalid_option(format!("{name} requires a Boolean value, not \"{other}\"")))
                }
            }
        };
        match name.as_str() {
            "format" => {
                given.format = Some(match value.as_deref() {
                    Some("text") => Format::Text,
                    Some("csv") => Format::Csv,
                    Some("binary") => {
                        return Err(unsupported("COPY in binary format is not supported (use text or csv)"))
                    }
                    other => {
                        return Err(invalid_option(format!(
                            "COPY format \"{}\" not recognized",
                            other.unwrap_or("")
                        )))
                    }
                })
            }
            "header" => {
                given.header = Some(if value.as_deref() == Some("match") {
                    Header::Match
                } else if boolean(&value)? {
                    Header::Skip
                } else {
                    Header::None
                })
            }
            "delimiter" => given.delimiter = Some(value.unwrap_or_default()),
            "null" => given.null = Some(value.unwrap_or_default()),
            "quote" => given.quote = Some(value.unwrap_or_default()),
            "escape" => given.escape = Some(value.unwrap_or_default()),
            "encoding" => check_encoding(value.as_deref().unwrap_or(""))?,
            "freeze" => {
                boolean(&value)?;
            }
            "force_quote" => given.force_quote = self.column_set()?,
            "force_not_null" => given.force_not_null = self.column_set()?,
            "force_null" => given.force_null = self.column_set()?,
            other => return Err(syntax(format!("option \"{other}\" not recognized"), None, self.sql)),
        }
        Ok(())
    }

    /// One option of the old syntax: `DELIMITER [AS] 'x'`, `NULL [AS] 'x'`, `CSV`,
    /// `HEADER`, `QUOTE [AS] 'x'`, `ESCAPE [AS] 'x'`, `FORCE QUOTE ...`,
    /// `FORCE NOT NULL ...`, `BINARY`, `ENCODING 'x'`, `FREEZE`.
    fn old_option(&mut self, given: &mut GivenOptions) -> Result<(), SqlError> {
        let token = self.next().expect("called with a token left");
        let string_after = |p: &mut Parser, option: &str| {
            if p.peek_is("AS") {
                p.next();
            }
            p.string(option)
        };
        if token.is("CSV") {
            given.format = Some(Format::Csv);
        } else if token.is("HEADER") {
            given.header = Some(Header::Skip);
        } else if token.is("BINARY") {
            return Err(unsupported("COPY in binary format is not supported (use text or csv)"));
        } else if token.is("FREEZE") {
        } else if token.is("DELIMITER") {
            given.delimiter = Some(string_after(self, "DELIMITER")?);
        } else if token.is("NULL") {
            given.null = Some(string_after(self, "NULL")?);
        } else if token.is("QUOTE") {
            given.quote = Some(string_after(self, "QUOTE")?);
        } else if token.is("ESCAPE") {
            given.escape = Some(string_after(self, "ESCAPE")?);
        } else if token.is("ENCODING") {
            check_encoding(&self.string("ENCODING")?)?;
        } else if token.is("FORCE") {
            if self.peek_is("QUOTE") {
                self.next();
                given.force_quote = self.column_set()?;
            } else if self.peek_is("NOT") {
                self.next();
                match self.next() {
                    Some(t) if t.is("NULL") => given.force_not_null = self.column_set()?,
                    other => return Err(syntax("expected FORCE NOT NULL", other, self.sql)),
                }
            } else {
                return Err(syntax("expected FORCE QUOTE or FORCE NOT NULL", self.peek(), self.sql));
            }
        } else {
            return Err(syntax("COPY option not recognized", Some(token), self.sql));
        }
        Ok(())
    }
}

fn check_encoding(name: &str) -> Result<(), SqlError> {
    match name.to_ascii_lowercase().replace('-', "").as_str() {
        "utf8" | "unicode" => Ok(()),
        _ => Err(invalid_option(format!("COPY encoding \"{name}\" is not supported (only UTF8)"))),
    }
}

/// One single-byte character option.
fn single_byte(option: &str, value: &str) -> Result<u8, SqlError> {
    match value.as_bytes() {
        [b] if b.is_ascii() => Ok(*b),
        _ => Err(invalid_option(format!("COPY {option} must be a single one-byte character"))),
    }
}

/// Fills in the format's defaults and checks the combination, as PostgreSQL does.
fn resolve(given: GivenOptions, direction: Direction) -> Result<CopyOptions, SqlError> {
    let format = given.format.unwrap_or(Format::Text);
    let csv = format == Format::Csv;
    let delimiter =
        single_byte("delimiter", given.delimiter.as_deref().unwrap_or(if csv { "," } else { "\t" }))?;
    let null = given.null.unwrap_or_else(|| if csv { String::new() } else { "\\N".to_string() });
    if !csv && (given.quote.is_some() || given.escape.is_some()) {
        return Err(unsupported("COPY QUOTE and ESCAPE are available only in CSV mode"));
    }
    let quote = single_byte("quote", given.quote.as_deref().unwrap_or("\""))?;
    let escape = match given.escape.as_deref() {
        Some(e) => single_byte("escape", e)?,
        None => quote,
    };
    if matches!(delimiter, b'\r' | b'\n') || (!csv && delimiter == b'\\') {
        return Err(invalid_option("COPY delimiter cannot be newline, carriage return or backslash"));
    }
    if null.contains(['\r', '\n']) {
        return Err(invalid_option("COPY null representation cannot use newline or carriage return"));
    }
    if null.as_bytes().contains(&delimiter) {
        return Err(invalid_option("COPY delimiter must not appear in the NULL specification"));
    }
    if csv && delimiter == quote {
        return Err(invalid_option("COPY delimiter and quote must be different"));
    }
    if !csv
        && (given.force_quote != ColumnSet::None
            || given.force_not_null != ColumnSet::None
            || given.force_null != ColumnSet::None)
    {
        return Err(unsupported("COPY FORCE options are available only in CSV mode"));
    }
    if direction == Direction::FromStdin && given.force_quote != ColumnSet::None {
        return Err(unsupported("COPY FORCE_QUOTE is only available using COPY TO"));
    }
    if direction == Direction::ToStdout
        && (given.force_not_null != ColumnSet::None || given.force_null != ColumnSet::None)
    {
        return Err(unsupported("COPY FORCE_NOT_NULL and FORCE_NULL are only available using COPY FROM"));
    }
    let header = given.header.unwrap_or(Header::None);
    if header == Header::Match && direction == Direction::ToStdout {
        return Err(unsupported("cannot use \"match\" with HEADER in COPY TO"));
    }
    Ok(CopyOptions {
        format,
        delimiter,
        null,
        header,
        quote,
        escape,
        force_quote: given.force_quote,
        force_not_null: given.force_not_null,
        force_null: given.force_null,
    })
}

/// Checks that the FORCE_* columns are among those copied.
pub fn check_force_columns(options: &CopyOptions, copied: &[String]) -> Result<(), SqlError> {
    for (option, set) in [
        ("FORCE_QUOTE", &options.force_quote),
        ("FORCE_NOT_NULL", &options.force_not_null),
        ("FORCE_NULL", &options.force_null),
    ] {
        if let Some(missing) = set.names().iter().find(|c| !copied.contains(c)) {
            return Err(SqlError::new(
                "42P10",
                format!("{option} column \"{missing}\" is not referenced by COPY"),
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Decoding (COPY FROM STDIN)
// ---------------------------------------------------------------------------------------

/// A record that could not be decoded.
#[derive(Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub line: u64,
    pub sqlstate: &'static str,
    pub message: String,
}

/// A decoded row: the table's full width, NULL in the columns not copied.
#[derive(Debug, PartialEq)]
pub struct DecodedRow {
    pub line: u64,
    pub values: Vec<Value>,
}

/// Turns COPY data into rows, across CopyData messages.
pub struct Decoder {
    options: CopyOptions,
    /// Names of the copied columns, in data order.
    names: Vec<String>,
    /// Index in the table of each copied column.
    targets: Vec<usize>,
    /// The table's number of columns.
    width: usize,
    force_not_null: Vec<bool>,
    force_null: Vec<bool>,
    /// Bytes received and not yet decoded (the start of an incomplete record).
    pending: Vec<u8>,
    /// How far `pending` has been scanned for the end of its record.
    scanned: usize,
    in_quotes: bool,
    after_backslash: bool,
    /// Records seen (the line number of the last one).
    line: u64,
    /// The end-of-data line `\.` was seen: the rest is ignored.
    ended: bool,
}

impl Decoder {
    /// `names[i]` is copied into column `targets[i]` of a table of `width` columns.
    pub fn new(options: CopyOptions, names: Vec<String>, targets: Vec<usize>, width: usize) -> Decoder {
        assert_eq!(names.len(), targets.len(), "one target per copied column");
        let force_not_null = names.iter().map(|n| options.force_not_null.contains(n)).collect();
        let force_null = names.iter().map(|n| options.force_null.contains(n)).collect();
        Decoder {
            options,
            names,
            targets,
            width,
            force_not_null,
            force_null,
            pending: Vec::new(),
            scanned: 0,
            in_quotes: false,
            after_backslash: false,
            line: 0,
            ended: false,
        }
    }

    /// Decodes the records completed by `data`, appending them to `rows`; stops at the
    /// first bad record.
    pub fn feed(&mut self, data: &[u8], rows: &mut Vec<DecodedRow>) -> Result<(), DecodeError> {
        if self.ended {
            return Ok(());
        }
        self.pending.extend_from_slice(data);
        let mut start = 0;
        let result = loop {
            match self.find_record_end() {
                Some(end) => {
                    let record = std::mem::take(&mut self.pending);
                    let outcome = self.record(&record[start..end], rows);
                    self.pending = record;
                    start = end + 1;
                    self.scanned = start;
                    if let Err(e) = outcome {
                        break Err(e);
                    }
                    if self.ended {
                        break Ok(());
                    }
                }
                None => break Ok(()),
            }
        };
        self.pending.drain(..start.min(self.pending.len()));
        self.scanned -= start.min(self.scanned);
        result
    }

    /// The data ended (CopyDone): decodes a last record that had no newline.
    pub fn finish(&mut self, rows: &mut Vec<DecodedRow>) -> Result<(), DecodeError> {
        if self.ended || self.pending.is_empty() {
            return Ok(());
        }
        if self.in_quotes {
            return Err(self.error("22P04", "unterminated CSV quoted field".into(), self.line + 1));
        }
        let record = std::mem::take(&mut self.pending);
        self.record(&record, rows)
    }

    /// Scans `pending` from where the last scan stopped for a newline that ends a record.
    fn find_record_end(&mut self) -> Option<usize> {
        let csv = self.options.format == Format::Csv;
        let (quote, escape) = (self.options.quote, self.options.escape);
        while self.scanned < self.pending.len() {
            let b = self.pending[self.scanned];
            let at = self.scanned;
            self.scanned += 1;
            if self.after_backslash {
                self.after_backslash = false;
                continue;
            }
            if csv {
                if self.in_quotes && escape != quote && b == escape {
                    self.after_backslash = true;
                } else if b == quote {
                    self.in_quotes = !self.in_quotes;
                } else if b == b'\n' && !self.in_quotes {
                    return Some(at);
                }
            } else if b == b'\\' {
                self.after_backslash = true;
            } else if b == b'\n' {
                return Some(at);
            }
        }
        None
    }

    fn error(&self, sqlstate: &'static str, message: String, line: u64) -> DecodeError {
        DecodeError { line, sqlstate, message }
    }

    /// Decodes one record (without its newline).
    fn record(&mut self, record: &[u8], rows: &mut Vec<DecodedRow>) -> Result<(), DecodeError> {
        self.line += 1;
        let record = record.strip_suffix(b"\r").unwrap_or(record);
        if record == b"\\." {
            self.ended = true;
            return Ok(());
        }
        if self.line == 1 && self.options.header != Header::None {
            if self.options.header == Header::Match {
                self.check_header(record)?;
            }
            return Ok(());
        }
        let fields = match self.options.format {
            Format::Text => self.text_fields(record)?,
            Format::Csv => self.csv_fields(record)?,
        };
        let mut values = vec![Value::Null; self.width];
        for (value, &target) in fields.into_iter().zip(&self.targets) {
            values[target] = value;
        }
        rows.push(DecodedRow { line: self.line, values });
        Ok(())
    }

    fn check_header(&mut self, record: &[u8]) -> Result<(), DecodeError> {
        let fields = match self.options.format {
            Format::Text => self.text_fields(record)?,
            Format::Csv => self.csv_fields(record)?,
        };
        for (i, (field, name)) in fields.iter().zip(&self.names).enumerate() {
            let matches = matches!(field, Value::Text(t) if t == name);
            if !matches {
                return Err(self.error(
                    "22P04",
                    format!(
                        "column name mismatch in header line field {}: got \"{}\", expected \"{name}\"",
                        i + 1,
                        field
                    ),
                    self.line,
                ));
            }
        }
        Ok(())
    }

    fn count_error(&self, got: usize) -> DecodeError {
        if got > self.names.len() {
            self.error("22P04", "extra data after last expected column".into(), self.line)
        } else {
            self.error("22P04", format!("missing data for column \"{}\"", self.names[got]), self.line)
        }
    }

    fn utf8(&self, bytes: Vec<u8>) -> Result<String, DecodeError> {
        String::from_utf8(bytes).map_err(|e| {
            let bad = e.as_bytes()[e.utf8_error().valid_up_to()];
            self.error(
                "22021",
                format!("invalid byte sequence for encoding \"UTF8\": 0x{bad:02x}"),
                self.line,
            )
        })
    }

    fn text_fields(&self, record: &[u8]) -> Result<Vec<Value>, DecodeError> {
        let delimiter = self.options.delimiter;
        let null = self.options.null.as_bytes();
        let mut fields = Vec::with_capacity(self.names.len());
        let mut start = 0;
        let mut i = 0;
        loop {
            // Find the end of this field: the next delimiter not after a backslash.
            while i < record.len() && record[i] != delimiter {
                i += if record[i] == b'\\' { 2 } else { 1 };
            }
            let end = i.min(record.len());
            let raw = &record[start..end];
            if fields.len() == self.names.len() {
                return Err(self.count_error(fields.len() + 1));
            }
            fields.push(if raw == null { Value::Null } else { Value::Text(self.utf8(unescape_text(raw))?) });
            if end >= record.len() {
                break;
            }
            i = end + 1;
            start = i;
        }
        if fields.len() < self.names.len() {
            return Err(self.count_error(fields.len()));
        }
        Ok(fields)
    }

    fn csv_fields(&self, record: &[u8]) -> Result<Vec<Value>, DecodeError> {
        let CopyOptions { delimiter, quote, escape, .. } = self.options;
        let null = self.options.null.as_bytes();
        let mut fields = Vec::with_capacity(self.names.len());
        let mut i = 0;
        loop {
            let mut value = Vec::new();
            let mut saw_quote = false;
            let mut in_quotes = false;
            while i < record.len() {
                let b = record[i];
                if in_quotes {
                    // A doubled quote, or (with another ESCAPE) the escape before a quote
                    // or itself, stands for the character after it.
                    let next = record.get(i + 1).copied();
                    let escaped = if escape == quote {
                        b == quote && next == Some(quote)
                    } else {
                        b == escape && (next == Some(quote) || next == Some(escape))
                    };
                    if escaped {
                        value.push(record[i + 1]);
                        i += 2;
                        continue;
                    }
                    if b == quote {
                        in_quotes = false;
                    } else {
                        value.push(b);
                    }
                } else if b == quote {
                    in_quotes = true;
                    saw_quote = true;
                } else if b == delimiter {
                    break;
                } else {
                    value.push(b);
                }
                i += 1;
            }
            if in_quotes {
                return Err(self.error("22P04", "unterminated CSV quoted field".into(), self.line));
            }
            let column = fields.len();
            if column == self.names.len() {
                return Err(self.count_error(column + 1));
            }
            let is_null = if saw_quote {
                self.force_null[column] && value == null
            } else {
                value == null && !self.force_not_null[column]
            };
            fields.push(if is_null { Value::Null } else { Value::Text(self.utf8(value)?) });
            if i >= record.len() {
                break;
            }
            i += 1;
        }
        if fields.len() < self.names.len() {
            return Err(self.count_error(fields.len()));
        }
        Ok(fields)
    }
}

/// Text format's backslash escapes.
fn unescape_text(raw: &[u8]) -> Vec<u8> {
    if !raw.contains(&b'\\') {
        return raw.to_vec();
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        i += 1;
        if b != b'\\' || i == raw.len() {
            out.push(b);
            continue;
        }
        let c = raw[i];
        i += 1;
        match c {
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let mut value = u32::from(c - b'0');
                for _ in 0..2 {
                    match raw.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push((value & 0xff) as u8);
            }
            b'x' if raw.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                let mut value = 0u8;
                for _ in 0..2 {
                    match raw.get(i) {
                        Some(d) if d.is_ascii_hexdigit() => {
                            value = value * 16 + (*d as char).to_digit(16).expect("a hex digit") as u8;
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(value);
            }
            other => out.push(other),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Encoding (COPY TO STDOUT)
// ---------------------------------------------------------------------------------------

/// Writes rows in a COPY format.
pub struct Encoder {
    options: CopyOptions,
    force_quote: Vec<bool>,
    /// The columns' types (a CHAR(n) is written blank-padded).
    types: Vec<Option<db::DataType>>,
    scratch: Vec<u8>,
}

impl Encoder {
    pub fn new(options: CopyOptions, columns: &[String], types: Vec<Option<db::DataType>>) -> Encoder {
        let force_quote = columns.iter().map(|c| options.force_quote.contains(c)).collect();
        Encoder { options, force_quote, types, scratch: Vec::new() }
    }

    /// The header line (column names), when HEADER was asked for.
    pub fn header(&mut self, columns: &[String], out: &mut Vec<u8>) {
        let values: Vec<Value> = columns.iter().map(|c| Value::Text(c.clone())).collect();
        let types = std::mem::take(&mut self.types);
        self.row(&values, out);
        self.types = types;
    }

    /// One row, with its newline.
    pub fn row(&mut self, values: &[Value], out: &mut Vec<u8>) {
        for (i, value) in values.iter().enumerate() {
            if i > 0 {
                out.push(self.options.delimiter);
            }
            let ty = self.types.get(i).copied().flatten();
            match self.options.format {
                Format::Text => self.text_field(value, ty, out),
                Format::Csv => {
                    self.csv_field(value, ty, self.force_quote.get(i).copied().unwrap_or(false), out)
                }
            }
        }
        out.push(b'\n');
    }

    fn text_field(&mut self, value: &Value, ty: Option<db::DataType>, out: &mut Vec<u8>) {
        if value.is_null() {
            out.extend_from_slice(self.options.null.as_bytes());
            return;
        }
        self.scratch.clear();
        crate::types::write_text_as(value, ty, &mut self.scratch);
        for &b in &self.scratch {
            match b {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' if self.options.delimiter == b'\t' => out.extend_from_slice(b"\\t"),
                8 => out.extend_from_slice(b"\\b"),
                12 => out.extend_from_slice(b"\\f"),
                11 => out.extend_from_slice(b"\\v"),
                b if b == self.options.delimiter => {
                    out.push(b'\\');
                    out.push(b);
                }
                b => out.push(b),
            }
        }
    }

    fn csv_field(&mut self, value: &Value, ty: Option<db::DataType>, force_quote: bool, out: &mut Vec<u8>) {
        if value.is_null() {
            out.extend_from_slice(self.options.null.as_bytes());
            return;
        }
        self.scratch.clear();
        crate::types::write_text_as(value, ty, &mut self.scratch);
        let CopyOptions { delimiter, quote, escape, .. } = self.options;
        let needs_quotes = force_quote
            || self.scratch == self.options.null.as_bytes()
            || self.scratch.iter().any(|&b| b == delimiter || b == quote || b == b'\n' || b == b'\r')
            || self.scratch.starts_with(b"\\.");
        if !needs_quotes {
            out.extend_from_slice(&self.scratch);
            return;
        }
        out.push(quote);
        for &b in &self.scratch {
            if b == quote || b == escape {
                out.push(escape);
            }
            out.push(b);
        }
        out.push(quote);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(sql: &str) -> CopyStatement {
        match parse(sql) {
            Some(Ok(s)) => s,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn both_option_syntaxes_are_understood() {
        let s = statement("COPY t (a, \"B\") FROM STDIN WITH (FORMAT csv, HEADER, DELIMITER ';', NULL 'x')");
        assert_eq!(
            s.source,
            Source::Table { schema: None, name: "t".into(), columns: vec!["a".into(), "B".into()] }
        );
        assert_eq!(s.direction, Direction::FromStdin);
        assert_eq!(s.options.format, Format::Csv);
        assert_eq!(s.options.header, Header::Skip);
        assert_eq!((s.options.delimiter, s.options.null.as_str()), (b';', "x"));
        let s = statement("copy public.t from stdin with csv header delimiter as ',' null ''");
        assert_eq!(
            s.source,
            Source::Table { schema: Some("public".into()), name: "t".into(), columns: vec![] }
        );
        assert_eq!(
            (s.options.format, s.options.header, s.options.delimiter),
            (Format::Csv, Header::Skip, b',')
        );
        let s = statement("COPY t FROM STDIN");
        assert_eq!(
            (s.options.format, s.options.delimiter, s.options.null.as_str()),
            (Format::Text, b'\t', "\\N")
        );
        let s = statement("COPY t FROM STDIN DELIMITER ','");
        assert_eq!(s.options.delimiter, b',');
        let s = statement("COPY (SELECT k FROM t WHERE (k > 1)) TO STDOUT (FORMAT csv, FORCE_QUOTE *)");
        assert_eq!(s.source, Source::Query("SELECT k FROM t WHERE (k > 1)".into()));
        assert_eq!(s.options.force_quote, ColumnSet::All);
        let s = statement("COPY t FROM STDIN (FORMAT csv, HEADER match, FORCE_NOT_NULL (a), FORCE_NULL (b))");
        assert_eq!(s.options.header, Header::Match);
        assert_eq!(s.options.force_not_null, ColumnSet::Some(vec!["a".into()]));

        let error = |sql: &str| parse(sql).unwrap().unwrap_err().sqlstate;
        assert_eq!(error("COPY t FROM '/etc/passwd'"), "0A000");
        assert_eq!(error("COPY t FROM STDIN (FORMAT binary)"), "0A000");
        assert_eq!(error("COPY BINARY t FROM STDIN"), "0A000");
        assert_eq!(error("COPY t FROM STDIN (DELIMITER ',,')"), "22023");
        assert_eq!(error("COPY t FROM STDIN (QUOTE '\"')"), "0A000");
        assert_eq!(error("COPY t FROM STDOUT"), "42601");
        assert_eq!(error("COPY (SELECT 1) FROM STDIN"), "42601");
        assert_eq!(error("COPY t FROM STDIN (BOGUS 1)"), "42601");
        // A schema is looked up when the COPY runs (3F000 if it does not exist then).
        assert_eq!(
            statement("COPY other.t FROM STDIN").source,
            Source::Table { schema: Some("other".into()), name: "t".into(), columns: vec![] }
        );
        assert!(parse("SELECT 1").is_none());
    }

    fn decoder(sql: &str, columns: &[&str]) -> Decoder {
        let s = statement(sql);
        let names: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        let targets = (0..names.len()).collect();
        Decoder::new(s.options, names, targets, columns.len())
    }

    fn text(s: &str) -> Value {
        Value::Text(s.into())
    }

    fn decode_in_pieces(d: &mut Decoder, data: &[u8], piece: usize) -> Result<Vec<DecodedRow>, DecodeError> {
        let mut rows = Vec::new();
        for chunk in data.chunks(piece) {
            d.feed(chunk, &mut rows)?;
        }
        d.finish(&mut rows)?;
        Ok(rows)
    }

    #[test]
    fn text_format_unescapes_and_knows_null() {
        let data = b"1\ta\\tb\\\\c\\nd\t\\N\n2\t\\101\\x41\\q\t\r\n3\tend\\\tx\tlast";
        for piece in [1, 2, 3, 7, data.len()] {
            let mut d = decoder("COPY t FROM STDIN", &["k", "v", "w"]);
            let rows = decode_in_pieces(&mut d, data, piece).unwrap();
            let values: Vec<&Vec<Value>> = rows.iter().map(|r| &r.values).collect();
            assert_eq!(values[0], &vec![text("1"), text("a\tb\\c\nd"), Value::Null], "{piece}");
            assert_eq!(values[1], &vec![text("2"), text("AAq"), text("")]);
            assert_eq!(values[2], &vec![text("3"), text("end\tx"), text("last")]);
            assert_eq!(rows.iter().map(|r| r.line).collect::<Vec<_>>(), [1, 2, 3]);
        }
        let mut d = decoder("COPY t FROM STDIN", &["k", "v"]);
        let e = decode_in_pieces(&mut d, b"1\tx\n2\n", 100).unwrap_err();
        assert_eq!((e.line, e.sqlstate, e.message.as_str()), (2, "22P04", "missing data for column \"v\""));
        let mut d = decoder("COPY t FROM STDIN", &["k", "v"]);
        let e = decode_in_pieces(&mut d, b"1\tx\ty\n", 100).unwrap_err();
        assert_eq!(e.message, "extra data after last expected column");
        let mut d = decoder("COPY t FROM STDIN", &["k", "v"]);
        let e = decode_in_pieces(&mut d, b"1\t\\xff\n", 100).unwrap_err();
        assert_eq!(e.sqlstate, "22021");
        // The end-of-data line ends the data; a header line is skipped but counted.
        let mut d = decoder("COPY t FROM STDIN (HEADER)", &["k"]);
        let rows = decode_in_pieces(&mut d, b"k\n1\n2\n\\.\nignored\n", 4).unwrap();
        assert_eq!(
            rows.iter().map(|r| (r.line, r.values[0].clone())).collect::<Vec<_>>(),
            [(2, text("1")), (3, text("2"))]
        );
    }

    #[test]
    fn csv_quotes_span_lines_and_keep_empty_apart_from_null() {
        let data = b"k,v,w\n1,\"a,b\",\n2,\"\",\"say \"\"hi\"\"\"\n3,\"two\nlines\",x\r\n";
        for piece in [1, 2, 5, data.len()] {
            let mut d = decoder("COPY t FROM STDIN WITH CSV HEADER", &["k", "v", "w"]);
            let rows = decode_in_pieces(&mut d, data, piece).unwrap();
            assert_eq!(rows.len(), 3);
            assert_eq!(rows[0].values, vec![text("1"), text("a,b"), Value::Null]);
            assert_eq!(rows[1].values, vec![text("2"), text(""), text("say \"hi\"")]);
            assert_eq!(rows[2].values, vec![text("3"), text("two\nlines"), text("x")]);
            assert_eq!(rows[2].line, 4);
        }
        let mut d =
            decoder("COPY t FROM STDIN (FORMAT csv, FORCE_NOT_NULL (v), FORCE_NULL (w))", &["k", "v", "w"]);
        let rows = decode_in_pieces(&mut d, b"1,,\"\"\n", 100).unwrap();
        assert_eq!(rows[0].values, vec![text("1"), text(""), Value::Null]);
        let mut d = decoder("COPY t FROM STDIN (FORMAT csv, ESCAPE '\\')", &["k", "v"]);
        let rows = decode_in_pieces(&mut d, b"1,\"a\\\"b\\\\\"\n", 3).unwrap();
        assert_eq!(rows[0].values, vec![text("1"), text("a\"b\\")]);
        let mut d = decoder("COPY t FROM STDIN (FORMAT csv)", &["k", "v"]);
        let e = decode_in_pieces(&mut d, b"1,\"open\n", 100).unwrap_err();
        assert_eq!(e.message, "unterminated CSV quoted field");
        let mut d = decoder("COPY t FROM STDIN (FORMAT csv, HEADER match)", &["k", "v"]);
        assert!(decode_in_pieces(&mut d, b"k,x\n", 100).is_err());
    }

    #[test]
    fn encoded_rows_decode_to_the_same_values() {
        let columns = vec!["k".to_string(), "v".to_string()];
        let rows = vec![
            vec![Value::Int(1), text("tab\there, comma \"q\" \\ nl\n")],
            vec![Value::Int(2), Value::Null],
            vec![Value::Int(3), text("")],
            vec![Value::Int(4), text("\\.")],
        ];
        for sql in ["COPY t TO STDOUT", "COPY t TO STDOUT (FORMAT csv, HEADER)"] {
            let s = statement(sql);
            let mut out = Vec::new();
            let mut encoder = Encoder::new(s.options.clone(), &columns, Vec::new());
            if s.options.header == Header::Skip {
                encoder.header(&columns, &mut out);
            }
            for row in &rows {
                encoder.row(row, &mut out);
            }
            let mut d = Decoder::new(s.options, columns.clone(), vec![0, 1], 2);
            let decoded = decode_in_pieces(&mut d, &out, 5).unwrap();
            let expected: Vec<Vec<Value>> = rows
                .iter()
                .map(|r| {
                    r.iter().map(|v| if v.is_null() { Value::Null } else { text(&v.to_string()) }).collect()
                })
                .collect();
            assert_eq!(decoded.into_iter().map(|r| r.values).collect::<Vec<_>>(), expected, "{sql}");
        }
    }
}
