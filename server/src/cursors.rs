//! SQL cursors: `DECLARE name [BINARY] [NO SCROLL] CURSOR [WITH HOLD | WITHOUT HOLD] FOR
//! query`, `FETCH` and `MOVE` forward, `CLOSE name | ALL`, parsed here and run by
//! `protocol` on protocol portals: a DECLAREd cursor IS the portal of that name, so a
//! client may Describe or Execute it (psycopg's server-side cursor declares through the
//! extended protocol, describes the portal, then sends `FETCH FORWARD n FROM "c"`).
//!
//! The db materialises a query's rows when it runs (`Session::query`), so a cursor sees
//! the rows as they were at DECLARE, as in PostgreSQL, and WITH HOLD costs nothing more:
//! its rows are already out of the transaction. Cursors only move forward (NO SCROLL):
//! backward and absolute moves are refused with PostgreSQL's 55000.

use crate::protocol::SqlError;
use crate::words::{tokenize, Kind, Token};

/// A DECLARE statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declare {
    pub name: String,
    /// The whole statement, as the client sent it (pg_cursors shows it).
    pub statement: String,
    /// Rows in binary format (DECLARE ... BINARY CURSOR).
    pub binary: bool,
    /// WITH HOLD: the cursor outlives the transaction that declared it (if it commits).
    pub hold: bool,
    /// The query, cut out of the statement.
    pub query: String,
    /// Byte offset of the query in the statement.
    pub query_offset: usize,
    /// Characters before the query in the statement (to place errors in it).
    pub query_position: usize,
}

/// How many rows a FETCH or MOVE asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    Rows(u64),
    All,
}

impl Count {
    pub fn limit(self) -> usize {
        match self {
            Count::Rows(n) => usize::try_from(n).unwrap_or(usize::MAX),
            Count::All => usize::MAX,
        }
    }
}

/// FETCH (rows returned) or MOVE (rows skipped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetch {
    pub name: String,
    pub count: Count,
    /// MOVE: the rows are skipped, only their number is reported.
    pub move_only: bool,
}

impl Fetch {
    pub fn tag(&self, rows: usize) -> String {
        format!("{} {rows}", if self.move_only { "MOVE" } else { "FETCH" })
    }
}

/// A cursor statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CursorStatement {
    Declare(Declare),
    Fetch(Fetch),
    /// CLOSE name; None for CLOSE ALL.
    Close(Option<String>),
}

fn syntax(message: impl Into<String>, token: Option<&Token>, sql: &str) -> SqlError {
    let mut error = SqlError::new("42601", message);
    let offset = token.map_or(sql.len(), |t| t.start);
    error.position = Some(sql[..offset].chars().count() + 1);
    error
}

fn backward() -> SqlError {
    SqlError::new(
        "55000",
        "cursor can only scan forward (redodb's cursors are NO SCROLL: FETCH NEXT, FORWARD n, n or ALL)",
    )
}

/// Recognises a cursor statement in `sql` (one statement without its `;`). None when it
/// is not one; an error when it is one we cannot run.
pub fn parse(sql: &str) -> Option<Result<CursorStatement, SqlError>> {
    let tokens = tokenize(sql);
    let first = tokens.first()?;
    if first.is("DECLARE") {
        Some(parse_declare(sql, &tokens).map(CursorStatement::Declare))
    } else if first.is("FETCH") || first.is("MOVE") {
        Some(parse_fetch(sql, &tokens, first.is("MOVE")).map(CursorStatement::Fetch))
    } else if first.is("CLOSE") {
        Some(match &tokens[1..] {
            [all] if all.is("ALL") => Ok(CursorStatement::Close(None)),
            [name] => match name.ident() {
                Some(name) => Ok(CursorStatement::Close(Some(name))),
                None => Err(syntax("CLOSE needs a cursor name or ALL", Some(name), sql)),
            },
            [] => Err(syntax("CLOSE needs a cursor name or ALL", None, sql)),
            [_, extra, ..] => Err(syntax("unexpected text after CLOSE's cursor name", Some(extra), sql)),
        })
    } else {
        None
    }
}

fn parse_declare(sql: &str, tokens: &[Token]) -> Result<Declare, SqlError> {
    let name = tokens
        .get(1)
        .and_then(Token::ident)
        .ok_or_else(|| syntax("DECLARE needs a cursor name", tokens.get(1), sql))?;
    let mut declare = Declare {
        name,
        statement: sql.to_string(),
        binary: false,
        hold: false,
        query: String::new(),
        query_offset: 0,
        query_position: 0,
    };
    let mut i = 2;
    // Options before CURSOR.
    loop {
        let token = tokens.get(i);
        match token {
            Some(t) if t.is("BINARY") => declare.binary = true,
            Some(t) if t.is("ASENSITIVE") || t.is("INSENSITIVE") => {}
            Some(t) if t.is("NO") && tokens.get(i + 1).is_some_and(|t| t.is("SCROLL")) => i += 1,
            Some(t) if t.is("SCROLL") => {
                return Err(SqlError::new(
                    "0A000",
                    "SCROLL cursors are not supported (redodb's cursors only move forward)",
                ))
            }
            Some(t) if t.is("CURSOR") => break,
            _ => return Err(syntax("DECLARE expects CURSOR", token, sql)),
        }
        i += 1;
    }
    i += 1;
    // WITH HOLD | WITHOUT HOLD, then FOR.
    loop {
        let token = tokens.get(i);
        match token {
            Some(t)
                if (t.is("WITH") || t.is("WITHOUT")) && tokens.get(i + 1).is_some_and(|t| t.is("HOLD")) =>
            {
                declare.hold = t.is("WITH");
                i += 2;
            }
            Some(t) if t.is("FOR") => break,
            _ => return Err(syntax("DECLARE ... CURSOR expects FOR and a query", token, sql)),
        }
    }
    let query = tokens.get(i + 1).ok_or_else(|| syntax("DECLARE ... FOR needs a query", None, sql))?;
    if query.is("UPDATE") || query.is("READ") {
        return Err(SqlError::new("0A000", "cursors FOR UPDATE / READ ONLY are not supported"));
    }
    declare.query_offset = query.start;
    declare.query_position = sql[..query.start].chars().count();
    declare.query = sql[query.start..].trim_end().to_string();
    Ok(declare)
}

fn parse_fetch(sql: &str, tokens: &[Token], move_only: bool) -> Result<Fetch, SqlError> {
    let verb = if move_only { "MOVE" } else { "FETCH" };
    let mut i = 1;
    let number = |t: &Token| match &t.kind {
        Kind::Number(n) => n.parse::<u64>().ok(),
        _ => None,
    };
    let count_after = |i: usize| -> Result<(Count, usize), SqlError> {
        // A count, ALL, or nothing (one row).
        match tokens.get(i) {
            Some(t) if t.is("ALL") => Ok((Count::All, i + 1)),
            Some(t) if t.is_punct('-') => Err(backward()),
            Some(t) if number(t).is_some() => Ok((Count::Rows(number(t).expect("a number")), i + 1)),
            _ => Ok((Count::Rows(1), i)),
        }
    };
    let (count, next) = match tokens.get(i) {
        Some(t) if t.is("NEXT") => (Count::Rows(1), i + 1),
        Some(t) if t.is("FORWARD") => count_after(i + 1)?,
        Some(t) if t.is("ALL") => (Count::All, i + 1),
        Some(t) if t.is_punct('-') => return Err(backward()),
        Some(t) if number(t).is_some() => (Count::Rows(number(t).expect("a number")), i + 1),
        Some(t) if t.is("PRIOR") || t.is("BACKWARD") || t.is("FIRST") || t.is("LAST") => {
            return Err(backward())
        }
        Some(t) if t.is("ABSOLUTE") || t.is("RELATIVE") => return Err(backward()),
        _ => (Count::Rows(1), i),
    };
    if count == Count::Rows(0) {
        return Err(SqlError::new(
            "0A000",
            format!("{verb} 0 (the current row again) is not supported: cursors only move forward"),
        ));
    }
    i = next;
    if tokens.get(i).is_some_and(|t| t.is("FROM") || t.is("IN")) {
        i += 1;
    }
    let name = tokens
        .get(i)
        .and_then(Token::ident)
        .ok_or_else(|| syntax(format!("{verb} needs a cursor name"), tokens.get(i), sql))?;
    if let Some(extra) = tokens.get(i + 1) {
        return Err(syntax(format!("unexpected text after {verb}'s cursor name"), Some(extra), sql));
    }
    Ok(Fetch { name, count, move_only })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetch(sql: &str) -> Fetch {
        match parse(sql) {
            Some(Ok(CursorStatement::Fetch(f))) => f,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn declare_takes_options_and_keeps_the_query() {
        let sql = "DECLARE \"C1\" BINARY NO SCROLL CURSOR WITH HOLD FOR SELECT * FROM t WHERE k > $1";
        let Some(Ok(CursorStatement::Declare(d))) = parse(sql) else { panic!() };
        assert_eq!(d.name, "C1");
        assert!(d.binary && d.hold);
        assert_eq!(d.query, "SELECT * FROM t WHERE k > $1");
        assert_eq!(&sql[d.query_offset..], d.query);
        let Some(Ok(CursorStatement::Declare(d))) = parse("declare c cursor without hold for values (1)")
        else {
            panic!()
        };
        assert_eq!((d.name.as_str(), d.hold, d.binary), ("c", false, false));
        assert_eq!(parse("DECLARE c SCROLL CURSOR FOR SELECT 1").unwrap().unwrap_err().sqlstate, "0A000");
        assert_eq!(parse("DECLARE c CURSOR SELECT 1").unwrap().unwrap_err().sqlstate, "42601");
        assert_eq!(parse("DECLARE c CURSOR FOR").unwrap().unwrap_err().sqlstate, "42601");
    }

    #[test]
    fn fetch_and_move_go_forward_only() {
        assert_eq!(
            fetch("FETCH FORWARD 10 FROM \"c\""),
            Fetch { name: "c".into(), count: Count::Rows(10), move_only: false }
        );
        assert_eq!(fetch("fetch c").count, Count::Rows(1));
        assert_eq!(fetch("FETCH NEXT IN c").count, Count::Rows(1));
        assert_eq!(fetch("FETCH ALL c").count, Count::All);
        assert_eq!(fetch("FETCH FORWARD ALL FROM c").count, Count::All);
        assert_eq!(fetch("FETCH FORWARD c").count, Count::Rows(1));
        assert_eq!(fetch("FETCH 2 FROM c").count, Count::Rows(2));
        let m = fetch("MOVE 5 IN c");
        assert!(m.move_only);
        assert_eq!(m.tag(3), "MOVE 3");
        for backward in
            ["FETCH PRIOR c", "FETCH BACKWARD 2 c", "FETCH -1 c", "FETCH ABSOLUTE 3 c", "MOVE LAST c"]
        {
            assert_eq!(parse(backward).unwrap().unwrap_err().sqlstate, "55000", "{backward}");
        }
        assert_eq!(parse("FETCH 0 c").unwrap().unwrap_err().sqlstate, "0A000");
        assert_eq!(parse("FETCH 2 FROM").unwrap().unwrap_err().sqlstate, "42601");
        assert_eq!(parse("CLOSE ALL"), Some(Ok(CursorStatement::Close(None))));
        assert_eq!(parse("close \"X\""), Some(Ok(CursorStatement::Close(Some("X".into())))));
        assert!(parse("SELECT 1").is_none());
    }
}
