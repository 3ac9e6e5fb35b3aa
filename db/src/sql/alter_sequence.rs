//! `ALTER SEQUENCE [IF EXISTS] name option ...`: PostgreSQL's options (`AS type`,
//! `INCREMENT [BY] n`, `MINVALUE n | NO MINVALUE`, `MAXVALUE n | NO MAXVALUE`, `START
//! [WITH] n`, `RESTART [[WITH] n]`, `CACHE n`, `[NO] CYCLE`) and Oracle's words for them,
//! in any order. sqlparser has no ALTER SEQUENCE: the options other than RESTART are
//! read as those of a `CREATE SEQUENCE` of the same text (one reading of the options for
//! both statements), RESTART here.
//!
//! An option given replaces the sequence's; one not given stays. The new definition is
//! logged as the sequence's new schema (a DDL, committed as one), so sessions reload it
//! at their next `nextval`; values they had cached and not handed out are skipped, as
//! in Oracle. `RESTART` then sets the sequence's next value, durably, as `setval(name,
//! n, false)` does (n: the START value when none is given).

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

use crate::change::Change;
use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::schema::{SequenceDef, TableSchema};
use crate::sql::QueryResult;

/// A parsed ALTER SEQUENCE.
#[derive(Clone, Debug)]
pub(crate) struct AlterSequence {
    name: ast::ObjectName,
    if_exists: bool,
    data_type: Option<ast::DataType>,
    options: Vec<ast::SequenceOptions>,
    /// `RESTART` (Some(None)) or `RESTART WITH n` (Some(Some(n))).
    restart: Option<Option<ast::Expr>>,
}

/// `Some` for a statement that begins `ALTER SEQUENCE`.
pub(crate) fn parse(sql: &str) -> Option<DbResult<AlterSequence>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let words: Vec<&Token> =
        tokens.iter().filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon)).collect();
    let is_word = |t: Option<&&Token>, w: &str| matches!(t, Some(Token::Word(word)) if word.quote_style.is_none() && word.value.eq_ignore_ascii_case(w));
    if !(is_word(words.first(), "ALTER") && is_word(words.get(1), "SEQUENCE")) {
        return None;
    }
    Some(parse_tokens(&tokens))
}

fn syntax(message: String) -> DbError {
    DbError::Syntax { message, position: 0 }
}

fn parse_tokens(tokens: &[Token]) -> DbResult<AlterSequence> {
    // The statement's tokens without whitespace and comments, `ALTER SEQUENCE` dropped.
    let mut rest: Vec<Token> = tokens
        .iter()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
        .skip(2)
        .cloned()
        .collect();
    let is_word = |t: Option<&Token>, w: &str| matches!(t, Some(Token::Word(word)) if word.quote_style.is_none() && word.value.eq_ignore_ascii_case(w));
    let if_exists = is_word(rest.first(), "IF") && is_word(rest.get(1), "EXISTS");
    if if_exists {
        rest.drain(..2);
    }
    // The name (`name` or `schema.name`), then the options: the other forms of ALTER
    // SEQUENCE are not here.
    let mut after_name = 1;
    while matches!(rest.get(after_name), Some(Token::Period)) {
        after_name += 2;
    }
    for refused in ["RENAME", "OWNER", "SET", "OWNED"] {
        if is_word(rest.get(after_name), refused) {
            return Err(DbError::Unsupported(format!("ALTER SEQUENCE ... {refused}")));
        }
    }
    // RESTART [[WITH] n], taken out; the other options stay for CREATE SEQUENCE to read.
    let mut restart = None;
    if let Some(at) = rest.iter().position(|t| is_word(Some(t), "RESTART")) {
        let mut end = at + 1;
        if is_word(rest.get(end), "WITH") {
            end += 1;
        }
        let value_start = end;
        if matches!(rest.get(end), Some(Token::Minus | Token::Plus)) {
            end += 1;
        }
        if matches!(rest.get(end), Some(Token::Number(..))) {
            end += 1;
        }
        let value: String = rest[value_start..end].iter().map(|t| t.to_string()).collect();
        if end == value_start && end != at + 1 {
            return Err(syntax("RESTART WITH takes a number".into()));
        }
        restart = Some(if value.is_empty() {
            None
        } else {
            Some(
                Parser::new(&PostgreSqlDialect {})
                    .try_with_sql(&value)
                    .and_then(|mut p| p.parse_expr())
                    .map_err(|e| syntax(format!("in RESTART WITH: {e}")))?,
            )
        });
        rest.drain(at..end);
        if rest.iter().any(|t| is_word(Some(t), "RESTART")) {
            return Err(syntax("conflicting or redundant options: RESTART".into()));
        }
    }
    let text: String = rest
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(&Token::Whitespace(Whitespace::Space).to_string());
    let create = format!("CREATE SEQUENCE {text}");
    let create = crate::sql::oracle::standard_sequence_options(&create).unwrap_or(create);
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, &create)
        .map_err(|e| syntax(format!("in ALTER SEQUENCE: {e}")))?;
    match statements.pop() {
        Some(ast::Statement::CreateSequence {
            name, data_type, sequence_options, owned_by: None, ..
        }) if statements.is_empty() => {
            Ok(AlterSequence { name, if_exists, data_type, options: sequence_options, restart })
        }
        Some(ast::Statement::CreateSequence { owned_by: Some(_), .. }) => {
            Err(DbError::Unsupported("ALTER SEQUENCE ... OWNED BY".into()))
        }
        _ => Err(syntax("ALTER SEQUENCE name [option ...]".into())),
    }
}

impl Session {
    pub(crate) fn alter_sequence_statement(&mut self, alter: &AlterSequence) -> DbResult<QueryResult> {
        let name = self.relation_name(&alter.name)?;
        let schema = match self.db.sequence_schema(&name) {
            Err(DbError::UnknownTable(_)) if alter.if_exists => {
                self.notice("00000", format!("relation \"{name}\" does not exist, skipping"));
                return Ok(QueryResult::command("ALTER SEQUENCE", 0));
            }
            Err(DbError::UnknownTable(_)) => return Err(DbError::UnknownTable(name)),
            other => other?,
        };
        let old = schema.sequence.clone().expect("a sequence's schema has its definition");
        let def = self.altered_definition(&old, alter)?;
        if def != old {
            let mut changed = TableSchema::clone(&schema);
            changed.sequence = Some(def.clone());
            self.ddl(&name, |_| Ok(Change::AlterTable(changed.validated()?)))?;
        }
        if let Some(restart) = &alter.restart {
            let value = match restart {
                None => def.start,
                Some(e) => self.constant_int(e)?,
            };
            if value < def.min || value > def.max {
                let (bound, than, limit) = if value < def.min {
                    ("MINVALUE", "less", def.min)
                } else {
                    ("MAXVALUE", "greater", def.max)
                };
                return Err(DbError::InvalidParameterValue {
                    parameter: "sequence".into(),
                    value: format!("RESTART value ({value}) cannot be {than} than {bound} ({limit})"),
                    allowed: "a RESTART value within MINVALUE .. MAXVALUE".into(),
                });
            }
            self.db.setval(&name, value, false)?;
        }
        Ok(QueryResult::command("ALTER SEQUENCE", 0))
    }

    /// `old` with the options `alter` gives, checked as CREATE SEQUENCE checks them.
    fn altered_definition(&self, old: &SequenceDef, alter: &AlterSequence) -> DbResult<SequenceDef> {
        use ast::SequenceOptions as O;
        let type_max = match &alter.data_type {
            Some(_) => crate::sql::ddl::sequence_type_max(alter.data_type.as_ref())?,
            None => i64::MAX,
        };
        let (mut increment, mut min, mut max, mut start, mut cache, mut cycle) =
            (old.increment, Some(old.min), Some(old.max), Some(old.start), old.cache, old.cycle);
        if alter.data_type.is_some() {
            // A new type: bounds at the old type's limits follow it (PostgreSQL's rule).
            if max.is_some_and(|m| m > type_max) || old.max == i64::MAX {
                max = None;
            }
            if min.is_some_and(|m| m < -type_max - 1) || old.min == i64::MIN {
                min = None;
            }
        }
        for option in &alter.options {
            match option {
                O::IncrementBy(e, _) => increment = self.constant_int(e)?,
                O::MinValue(e) => min = e.as_ref().map(|e| self.constant_int(e)).transpose()?,
                O::MaxValue(e) => max = e.as_ref().map(|e| self.constant_int(e)).transpose()?,
                O::StartWith(e, _) => start = Some(self.constant_int(e)?),
                O::Cache(e) => cache = self.constant_int(e)?,
                O::Cycle(no) => cycle = !*no,
            }
        }
        let mut def =
            crate::sequences::definition(type_max, Some(increment), min, max, start, Some(cache), cycle)?;
        def.owned_by = old.owned_by.clone();
        Ok(def)
    }
}
