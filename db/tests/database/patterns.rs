//! Pattern matching beyond LIKE through `Session::execute`: `SIMILAR TO` (PostgreSQL's
//! translation of SQL regular expressions, `similar_to_escape`) and `LIKE` / `ILIKE` with
//! `ANY` / `ALL` over an array, an `ARRAY[...]`, a subquery or a bind parameter, with
//! PostgreSQL's NULL rules. Every expected result is PostgreSQL 15's for the same query.

use crate::common::{cells, fails, open, pipe_rows, run};
use db::{Session, Value};

/// The rows as `psql -A` prints them: booleans as t and f, NULL as nothing.
fn psql_rows(s: &mut Session, sql: &str) -> Vec<String> {
    let shown = |cell: String| match cell.as_str() {
        "true" => "t".to_string(),
        "false" => "f".to_string(),
        "NULL" => String::new(),
        _ => cell,
    };
    cells(s, sql).into_iter().map(|row| row.into_iter().map(shown).collect::<Vec<_>>().join("|")).collect()
}

fn setup(s: &mut Session) {
    run(s, "CREATE TABLE fruit (id INT PRIMARY KEY, s TEXT)");
    run(s, "INSERT INTO fruit VALUES (1, 'apple'), (2, 'banana'), (3, 'cherry'), (4, NULL)");
    run(s, "COMMIT");
}

#[test]
fn similar_to_matches_whole_strings_as_postgresql_translates_its_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    for (sql, expected) in [
        // A `]` first in a bracket expression is a member; `_` matches a newline.
        ("SELECT ']' SIMILAR TO '[]]', 'a]' SIMILAR TO '[]a]+', E'a\\nb' SIMILAR TO 'a_b', 'abc' SIMILAR TO 'a%' ESCAPE ''", "t|t|t|t"),
        // `.` is no wildcard in SIMILAR TO.
        ("SELECT 'a.c' SIMILAR TO 'a.c', 'abc' SIMILAR TO 'a.c'", "t|f"),
        ("SELECT 'ab' SIMILAR TO '(a|b){2}', 'aaa' SIMILAR TO 'a{2,}', 'a' SIMILAR TO 'a?b?', 'a+' SIMILAR TO 'a#+' ESCAPE '#'", "t|t|t|t"),
        ("SELECT NULL SIMILAR TO 'a', 'a' SIMILAR TO NULL, 'a' NOT SIMILAR TO 'b', 'a' SIMILAR TO 'a' ESCAPE NULL", "||t|"),
        ("SELECT 'a$' SIMILAR TO 'a$', '^a' SIMILAR TO '^a'", "t|t"),
        // The whole string, not a part of it.
        ("SELECT 'abc' SIMILAR TO '%(b|d)%', 'abc' SIMILAR TO '(b|d)%', 'abc' NOT SIMILAR TO '%(b|d)%'", "t|f|f"),
        ("SELECT 'a\\b' SIMILAR TO 'a\\\\b', 'abc' SIMILAR TO 'a#\"b#\"c' ESCAPE '#'", "t|t"),
        ("SELECT 'abc' SIMILAR TO 'ABC', 'abc' SIMILAR TO '[a-c]*', 'abcd' SIMILAR TO '[a-c]*', 'ab1' SIMILAR TO '[[:alpha:]]+[[:digit:]]'", "f|t|f|t"),
        ("SELECT 'foo' SIMILAR TO 'f(o)*', '' SIMILAR TO '%', '' SIMILAR TO '_', 'ab' SIMILAR TO 'a|b', 'a|b' SIMILAR TO 'a\\|b'", "t|t|f|f|t"),
        ("SELECT 'xa' SIMILAR TO '[^x]%', 'x' SIMILAR TO 'x+|y*'", "f|t"),
        (
            "SELECT similar_to_escape('a#\"b#\"c', '#'), similar_to_escape('a%_(b|c)[]x]\\.$^'), similar_to_escape('[^]a]'), similar_to_escape('x', '')",
            "^(?:a){1,1}?(b){1,1}(?:c)$|^(?:a.*.(?:b|c)[]x]\\.\\$\\^)$|^(?:[^]a])$|^(?:x)$",
        ),
    ] {
        assert_eq!(psql_rows(&mut s, sql), [expected], "{sql}");
    }
    assert_eq!(
        pipe_rows(&mut s, "SELECT id FROM fruit WHERE s SIMILAR TO '%(an|rr)%' ORDER BY id"),
        ["2", "3"]
    );
    assert_eq!(pipe_rows(&mut s, "SELECT id FROM fruit WHERE s NOT SIMILAR TO '(a|c)%' ORDER BY id"), ["2"]);
    let e = fails(&mut s, "SELECT 'abc' SIMILAR TO 'a%' ESCAPE 'xy'");
    assert_eq!(
        (e.sqlstate(), e.to_string().as_str(), e.hint()),
        ("22025", "invalid escape string", Some("Escape string must be empty or one character."))
    );
    let e = fails(&mut s, "SELECT 'x' SIMILAR TO 'a#\"b#\"c#\"' ESCAPE '#'");
    assert_eq!(
        (e.sqlstate(), e.to_string().as_str()),
        ("2200C", "SQL regular expression may not contain more than two escape-double-quote separators")
    );
}

#[test]
fn like_and_ilike_any_and_all_quantify_over_an_array_of_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    for (sql, expected) in [
        (
            "SELECT 'abc' LIKE ANY (ARRAY['a%','x%']), 'abc' LIKE ALL (ARRAY['a%','%c']), 'abc' LIKE ALL (ARRAY['a%','x%']), \
             'abc' NOT LIKE ANY (ARRAY['a%','x%']), 'abc' NOT LIKE ALL (ARRAY['a%','x%'])",
            "t|t|f|t|f",
        ),
        (
            "SELECT 'ABC' ILIKE ANY (ARRAY['a%']), 'ABC' ILIKE ALL (ARRAY['a%','%C']), 'ABC' NOT ILIKE ALL (ARRAY['x%','y%']), \
             'ABC' LIKE ANY (ARRAY['a%'])",
            "t|t|t|f",
        ),
        // An empty array decides without the left side; NULLs as ANY and ALL treat them.
        (
            "SELECT 'abc' LIKE ANY (ARRAY[]::text[]), 'abc' LIKE ALL (ARRAY[]::text[]), NULL LIKE ANY (ARRAY[]::text[]), \
             NULL LIKE ALL (ARRAY[]::text[])",
            "f|t|f|t",
        ),
        (
            "SELECT NULL LIKE ANY (ARRAY['a%']), 'abc' LIKE ANY (ARRAY['a%', NULL]), 'abc' LIKE ANY (ARRAY['x%', NULL]), \
             'abc' LIKE ALL (ARRAY['a%', NULL]), 'abc' LIKE ALL (ARRAY['x%', NULL]), 'abc' LIKE ANY (NULL::text[])",
            "|t|||f|",
        ),
        ("SELECT 'abc' LIKE ANY ('{a%,b%}'), 'a_c' LIKE ANY (ARRAY['a\\_c']), 'abc' LIKE ANY (ARRAY['a\\_c'])", "t|t|f"),
        (
            "SELECT 'abc' LIKE ALL (SELECT 'a%'), 'abc' LIKE ALL (SELECT x FROM (VALUES ('a%'), ('z%')) v(x)), \
             'abc' LIKE ANY (SELECT x FROM (VALUES ('a%'), ('z%')) v(x))",
            "t|f|t",
        ),
    ] {
        assert_eq!(psql_rows(&mut s, sql), [expected], "{sql}");
    }
    assert_eq!(
        pipe_rows(&mut s, "SELECT id FROM fruit WHERE s LIKE ANY (ARRAY['a%', '%rr%']) ORDER BY id"),
        ["1", "3"]
    );
    assert_eq!(
        pipe_rows(&mut s, "SELECT id FROM fruit WHERE s NOT LIKE ALL (ARRAY['a%', 'b%']) ORDER BY id"),
        ["3"]
    );
    assert_eq!(
        pipe_rows(&mut s, "SELECT id FROM fruit WHERE s ILIKE ALL (ARRAY['%A%', '%N%']) ORDER BY id"),
        ["2"]
    );
    assert_eq!(
        psql_rows(&mut s, "SELECT id, s LIKE ANY (ARRAY['%e%', NULL]) FROM fruit ORDER BY id"),
        ["1|t", "2|", "3|t", "4|"]
    );
    // A bind parameter, as the array's text and cast.
    let bound = s
        .execute("SELECT id FROM fruit WHERE s LIKE ANY ($1) ORDER BY id", &[Value::Text("{%an%,c%}".into())])
        .unwrap();
    assert_eq!(bound.rows(), [vec![Value::Int(2)], vec![Value::Int(3)]]);
    let bound = s
        .execute(
            "SELECT id FROM fruit WHERE s NOT ILIKE ANY ($1::text[]) ORDER BY id",
            &[Value::Text("{%A%}".into())],
        )
        .unwrap();
    assert_eq!(bound.rows(), [vec![Value::Int(3)]]);
    let e = fails(&mut s, "SELECT 'abc' LIKE ANY (5)");
    assert_eq!(
        (e.sqlstate(), e.to_string().as_str()),
        ("42809", "op ANY/ALL (array) requires array on right side")
    );
    assert_eq!(fails(&mut s, "SELECT 'abc' LIKE ANY (ARRAY['a%']) ESCAPE '#'").sqlstate(), "42601");
}
