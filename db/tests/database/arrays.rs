//! Arrays: the type as a column and a value, its literals and text form, the operators
//! and functions over it, and array columns through a checkpoint and recovery. Every
//! expected result below was checked against PostgreSQL 15 (`psql -At`, whose text these
//! tests print values as: booleans `t`/`f`, NULL as nothing).

use crate::common::{fails, open, run};
use db::value::{Array, ElemType};
use db::Value;

/// A value as `psql -At` prints it.
fn pg_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => if *b { "t" } else { "f" }.into(),
        other => other.to_string(),
    }
}

/// The one value `sql` gives (with `params`), as psql prints it.
fn value(s: &mut db::Session, sql: &str, params: &[Value]) -> String {
    let result = s.execute(sql, params).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let rows = result.rows();
    assert_eq!(rows.len(), 1, "{sql}: {rows:?}");
    pg_text(&rows[0][0])
}

/// Every row of `sql`, each as its values joined by `|` (psql's -A form).
fn table(s: &mut db::Session, sql: &str) -> Vec<String> {
    run(s, sql).rows().iter().map(|row| row.iter().map(pg_text).collect::<Vec<_>>().join("|")).collect()
}

#[test]
fn array_expressions_give_postgresqls_results() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let cases: &[(&str, &str)] = &[
        ("SELECT ARRAY[1,2,3]", "{1,2,3}"),
        ("SELECT ARRAY[1,2.5]", "{1,2.5}"),
        ("SELECT ARRAY['a','b c',NULL,'']", "{a,\"b c\",NULL,\"\"}"),
        ("SELECT ARRAY[1,'2']", "{1,2}"),
        ("SELECT '{1,2,NULL}'::int[]", "{1,2,NULL}"),
        ("SELECT '{ a , \"b\\\"c\" , \"NULL\" , null }'::text[]", "{a,\"b\\\"c\",\"NULL\",NULL}"),
        ("SELECT '{}'::int[]", "{}"),
        ("SELECT (ARRAY[10,20,30])[2]", "20"),
        ("SELECT (ARRAY[10,20,30])[4] IS NULL", "t"),
        ("SELECT (ARRAY[10,20,30])[0] IS NULL", "t"),
        ("SELECT (ARRAY[10,20,30])[2:3]", "{20,30}"),
        ("SELECT (ARRAY[10,20,30])[:2]", "{10,20}"),
        ("SELECT (ARRAY[10,20,30])[2:]", "{20,30}"),
        ("SELECT (ARRAY[10,20,30])[3:2]", "{}"),
        ("SELECT (ARRAY[10,20,30])[0:10]", "{10,20,30}"),
        ("SELECT ARRAY[1,2] || ARRAY[3]", "{1,2,3}"),
        ("SELECT ARRAY[1,2] || 3", "{1,2,3}"),
        ("SELECT 0 || ARRAY[1,2]", "{0,1,2}"),
        ("SELECT ARRAY[1,2] || NULL::int", "{1,2,NULL}"),
        ("SELECT ARRAY[1] || '{2,3}'", "{1,2,3}"),
        ("SELECT '{0}' || ARRAY[1]", "{0,1}"),
        ("SELECT ARRAY['a'] || 'b'::text", "{a,b}"),
        ("SELECT NULL || ARRAY[1]", "{1}"),
        ("SELECT ARRAY[1,2] || NULL", "{1,2}"),
        ("SELECT to_json(ARRAY[1,NULL])", "[1,null]"),
        ("SELECT to_jsonb(ARRAY['a'])", "[\"a\"]"),
        ("SELECT ARRAY['a'] || ARRAY['b','c']", "{a,b,c}"),
        ("SELECT array_length(ARRAY[1,2,3], 1)", "3"),
        ("SELECT array_length('{}'::int[], 1) IS NULL", "t"),
        ("SELECT array_length(ARRAY[1,2,3], 2) IS NULL", "t"),
        ("SELECT cardinality(ARRAY[1,2,3])", "3"),
        ("SELECT cardinality('{}'::int[])", "0"),
        ("SELECT array_position(ARRAY['a','b','c','b'], 'b')", "2"),
        ("SELECT array_position(ARRAY['a','b','c','b'], 'b', 3)", "4"),
        ("SELECT array_position(ARRAY[1,NULL,3], NULL)", "2"),
        ("SELECT array_position(ARRAY[1,2], 5) IS NULL", "t"),
        ("SELECT array_append(ARRAY[1,2], 3)", "{1,2,3}"),
        ("SELECT array_append(ARRAY[1,2], NULL)", "{1,2,NULL}"),
        ("SELECT array_prepend(0, ARRAY[1,2])", "{0,1,2}"),
        ("SELECT array_cat(ARRAY[1,2], ARRAY[3,4])", "{1,2,3,4}"),
        ("SELECT array_cat(NULL::int[], ARRAY[3,4])", "{3,4}"),
        ("SELECT array_remove(ARRAY[1,2,1,3], 1)", "{2,3}"),
        ("SELECT array_to_string(ARRAY[1,NULL,3], ',')", "1,3"),
        ("SELECT array_to_string(ARRAY[1,NULL,3], ',', '*')", "1,*,3"),
        ("SELECT array_to_string(ARRAY['a b','c'], '-')", "a b-c"),
        ("SELECT string_to_array('a,b,,c', ',')", "{a,b,\"\",c}"),
        ("SELECT string_to_array('a,b,x,c', ',', 'x')", "{a,b,NULL,c}"),
        ("SELECT string_to_array('abc', NULL)", "{a,b,c}"),
        ("SELECT string_to_array('abc', '')", "{abc}"),
        ("SELECT cardinality(string_to_array('', ','))", "0"),
        ("SELECT 2 = ANY(ARRAY[1,2,3])", "t"),
        ("SELECT 5 = ANY(ARRAY[1,2,3])", "f"),
        ("SELECT 5 = ANY(ARRAY[1,NULL,3]) IS NULL", "t"),
        ("SELECT 1 = ANY(ARRAY[1,NULL,3])", "t"),
        ("SELECT 5 <> ALL(ARRAY[1,2,3])", "t"),
        ("SELECT 5 <> ALL(ARRAY[1,NULL,3]) IS NULL", "t"),
        ("SELECT 2 <> ALL(ARRAY[1,NULL,3])", ""),
        ("SELECT 5 > ALL(ARRAY[1,2,3])", "t"),
        ("SELECT 2 > SOME(ARRAY[1,2,3])", "t"),
        ("SELECT 1 = ANY('{}'::int[])", "f"),
        ("SELECT 1 = ALL('{}'::int[])", "t"),
        ("SELECT NULL::int = ANY(ARRAY[1]) IS NULL", "t"),
        ("SELECT NULL::int = ANY('{}'::int[])", "f"),
        ("SELECT 1 = ANY(NULL::int[]) IS NULL", "t"),
        ("SELECT 'b' = ANY('{a,b}'::text[])", "t"),
        ("SELECT 2 = ANY('{1,2}')", "t"),
        ("SELECT ARRAY[1,2,3] @> ARRAY[3,1]", "t"),
        ("SELECT ARRAY[1,2,3] @> ARRAY[4]", "f"),
        ("SELECT ARRAY[1,2] <@ ARRAY[1,2,3]", "t"),
        ("SELECT ARRAY[1,NULL] @> ARRAY[NULL::int]", "f"),
        ("SELECT ARRAY[1,2] && ARRAY[2,3]", "t"),
        ("SELECT ARRAY[1,2] && ARRAY[3,4]", "f"),
        ("SELECT ARRAY[1,2,3] = ARRAY[1,2,3]", "t"),
        ("SELECT ARRAY[1,NULL] = ARRAY[1,NULL]", "t"),
        ("SELECT ARRAY[1,2] < ARRAY[1,3]", "t"),
        ("SELECT ARRAY[1,2] < ARRAY[1,2,0]", "t"),
        ("SELECT ARRAY[2] > ARRAY[1,9]", "t"),
        ("SELECT ARRAY[1,NULL] > ARRAY[1,5]", "t"),
        ("SELECT ARRAY[1,2] = '{1,2}'", "t"),
        ("SELECT ARRAY[true,false]", "{t,f}"),
        ("SELECT ARRAY[1.5::float8, 'NaN'::float8]", "{1.5,NaN}"),
        ("SELECT ARRAY['2024-01-02'::date]", "{2024-01-02}"),
        ("SELECT ARRAY['2024-01-02 03:04:05'::timestamp]", "{\"2024-01-02 03:04:05\"}"),
        ("SELECT ARRAY['a\"b', 'c\\d', 'e,f', '{g}']", "{\"a\\\"b\",\"c\\\\d\",\"e,f\",\"{g}\"}"),
        ("SELECT '{\"a\\\\b\"}'::text[]", "{\"a\\\\b\"}"),
        ("SELECT ARRAY[NULL]", "{NULL}"),
        ("SELECT '{1,2}'::int[]::text", "{1,2}"),
        ("SELECT CAST(ARRAY[1,2] AS numeric[])", "{1,2}"),
        ("SELECT '{1.5,2}'::numeric[]", "{1.5,2}"),
        (
            "SELECT ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid]",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
        ),
        ("SELECT array_upper(ARRAY[5,6,7], 1)", "3"),
        ("SELECT array_lower(ARRAY[5,6,7], 1)", "1"),
        ("SELECT '{1,2}'::int ARRAY", "{1,2}"),
    ];
    let mut wrong = Vec::new();
    for (sql, expected) in cases {
        match s.execute(sql, &[]) {
            Ok(r) if r.rows().len() == 1 && pg_text(&r.rows()[0][0]) == *expected => {}
            Ok(r) => wrong.push(format!("{sql}: got {:?}, PostgreSQL gives {expected:?}", r.rows())),
            Err(e) => wrong.push(format!("{sql}: failed with {e}, PostgreSQL gives {expected:?}")),
        }
    }
    assert!(wrong.is_empty(), "{} of {} differ:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
}

#[test]
fn array_errors_carry_postgresqls_sqlstates_and_messages() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let cases: &[(&str, &str, &str)] = &[
        ("SELECT '{1,2'::int[]", "22P02", "malformed array literal: \"{1,2\""),
        ("SELECT ARRAY['sql'] || 'new'", "22P02", "malformed array literal: \"new\""),
        ("SELECT '1,2'::int[]", "22P02", "malformed array literal: \"1,2\""),
        ("SELECT '{1,,2}'::int[]", "22P02", "malformed array literal: \"{1,,2}\""),
        ("SELECT '{a}'::int[]", "22P02", "a"),
        ("SELECT ARRAY[1, true]", "42804", "ARRAY types bigint and boolean cannot be matched"),
        ("SELECT (1)[1]", "42804", "cannot subscript type bigint because it does not support subscripting"),
        ("SELECT 1 = ANY(1)", "42809", "op ANY/ALL (array) requires array on right side"),
        // One dimension only: PostgreSQL would take these; refused, not flattened.
        ("SELECT '{{1,2},{3,4}}'::int[]", "0A000", "multidimensional"),
        ("SELECT ARRAY[ARRAY[1,2]]", "0A000", "multidimensional"),
        ("CREATE TABLE m (a int[][])", "0A000", "multidimensional"),
        ("SELECT '[0:1]={1,2}'::int[]", "0A000", "bounds"),
    ];
    for (sql, sqlstate, message) in cases {
        let e = fails(&mut s, sql);
        assert_eq!(e.sqlstate(), *sqlstate, "{sql}: {e}");
        assert!(e.to_string().contains(message), "{sql}: {e} (wanted {message:?})");
    }
}

#[test]
fn array_columns_are_stored_queried_and_updated() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(
        &mut s,
        "CREATE TABLE posts (id int PRIMARY KEY, tags text[], scores integer ARRAY, ratios float8[])",
    );
    run(&mut s, "INSERT INTO posts VALUES (1, ARRAY['rust','db'], '{3,1,2}', '{0.5}'), (2, '{sql}', ARRAY[7], NULL), (3, '{}', '{}', '{}')");
    run(&mut s, "COMMIT");
    assert_eq!(
        table(&mut s, "SELECT id, tags, scores FROM posts ORDER BY id"),
        ["1|{rust,db}|{3,1,2}", "2|{sql}|{7}", "3|{}|{}"]
    );
    assert_eq!(table(&mut s, "SELECT id FROM posts WHERE 'db' = ANY(tags)"), ["1"]);
    assert_eq!(table(&mut s, "SELECT id FROM posts WHERE tags @> ARRAY['sql']"), ["2"]);
    assert_eq!(table(&mut s, "SELECT id FROM posts WHERE tags && '{db,sql}' ORDER BY id"), ["1", "2"]);
    assert_eq!(
        table(&mut s, "SELECT id, scores[1], cardinality(scores) FROM posts ORDER BY id"),
        ["1|3|3", "2|7|1", "3||0"]
    );
    assert_eq!(table(&mut s, "SELECT id FROM posts WHERE id = ANY(ARRAY[1,3]) ORDER BY id"), ["1", "3"]);
    assert_eq!(table(&mut s, "SELECT id FROM posts ORDER BY scores DESC"), ["2", "1", "3"]);
    run(&mut s, "UPDATE posts SET tags = tags || 'new'::text, scores = array_append(scores, 9) WHERE id = 2");
    assert_eq!(table(&mut s, "SELECT tags, scores FROM posts WHERE id = 2"), ["{sql,new}|{7,9}"]);
    run(&mut s, "ALTER TABLE posts ADD COLUMN days date[]");
    run(&mut s, "UPDATE posts SET days = '{2024-01-02,NULL}' WHERE id = 1");
    assert_eq!(table(&mut s, "SELECT days FROM posts WHERE id = 1"), ["{2024-01-02,NULL}"]);
    // A value of the wrong type for an array column is the element type's error.
    assert_eq!(fails(&mut s, "INSERT INTO posts (id, scores) VALUES (9, '{1,x}')").sqlstate(), "22P02");
    assert_eq!(fails(&mut s, "INSERT INTO posts (id, scores) VALUES (9, 5)").sqlstate(), "22P02");
}

#[test]
fn array_agg_collects_values_with_nulls_in_the_order_asked() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE g (id int, grp text, v int)");
    run(&mut s, "INSERT INTO g VALUES (1,'a',3),(2,'a',NULL),(3,'a',1),(4,'b',2),(5,'b',2)");
    let by_group = |s: &mut db::Session, agg: &str| {
        table(s, &format!("SELECT grp, {agg} FROM g GROUP BY grp ORDER BY grp"))
    };
    assert_eq!(by_group(&mut s, "array_agg(v)"), ["a|{3,NULL,1}", "b|{2,2}"]);
    assert_eq!(by_group(&mut s, "array_agg(v ORDER BY v)"), ["a|{1,3,NULL}", "b|{2,2}"]);
    assert_eq!(by_group(&mut s, "array_agg(v ORDER BY v DESC)"), ["a|{NULL,3,1}", "b|{2,2}"]);
    assert_eq!(by_group(&mut s, "array_agg(v ORDER BY v NULLS FIRST)"), ["a|{NULL,1,3}", "b|{2,2}"]);
    assert_eq!(by_group(&mut s, "array_agg(DISTINCT v)"), ["a|{1,3,NULL}", "b|{2}"]);
    assert_eq!(table(&mut s, "SELECT array_agg(id ORDER BY grp DESC, id) FROM g"), ["{4,5,1,2,3}"]);
    assert_eq!(table(&mut s, "SELECT array_agg(v) IS NULL FROM g WHERE id > 10"), ["t"]);
    assert_eq!(table(&mut s, "SELECT array_agg(grp ORDER BY id) FROM g"), ["{a,a,a,b,b}"]);
    assert_eq!(
        table(
            &mut s,
            "SELECT cardinality(array_agg(id)), array_to_string(array_agg(grp ORDER BY id DESC), ',') FROM g"
        ),
        ["5|b,b,a,a,a"]
    );
}

#[test]
fn arrays_are_bind_parameters_as_values_and_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE t (id int PRIMARY KEY, v text[])");
    run(&mut s, "INSERT INTO t VALUES (1, '{a}'), (2, '{b}'), (3, '{c}')");
    run(&mut s, "COMMIT");
    let ids = Array::new(ElemType::Int, vec![Value::Int(1), Value::Int(3)]).into_value();
    assert_eq!(value(&mut s, "SELECT count(*) FROM t WHERE id = ANY($1)", std::slice::from_ref(&ids)), "2");
    assert_eq!(value(&mut s, "SELECT count(*) FROM t WHERE id <> ALL($1)", &[ids]), "1");
    // A parameter of no declared type, sent as text, is read as an array of the left
    // side's type.
    assert_eq!(
        value(&mut s, "SELECT count(*) FROM t WHERE id = ANY($1)", &[Value::Text("{2,3}".into())]),
        "2"
    );
    let tags = Array::new(ElemType::Text, vec![Value::Text("x y".into()), Value::Null]).into_value();
    run_with(&mut s, "INSERT INTO t VALUES (4, $1)", &[tags]);
    assert_eq!(value(&mut s, "SELECT v FROM t WHERE id = 4", &[]), "{\"x y\",NULL}");
    run_with(&mut s, "UPDATE t SET v = $1 WHERE id = 1", &[Value::Text("{p,q}".into())]);
    assert_eq!(value(&mut s, "SELECT v[2] FROM t WHERE id = 1", &[]), "q");
}

fn run_with(s: &mut db::Session, sql: &str, params: &[Value]) {
    s.execute(sql, params).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

#[test]
fn array_columns_survive_a_checkpoint_and_the_redo_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let all_types = "CREATE TABLE a (id int PRIMARY KEY, i int[], b bigint[], s smallint[], t text[], \
                     vc varchar[], bo bool[], f float8[], n numeric[], u uuid[], d date[], ts timestamp[], \
                     tz timestamptz[])";
    let row1 =
        "INSERT INTO a VALUES (1, '{1,NULL}', '{9000000000}', '{-3}', '{\"a b\",\"\"}', '{v}', '{t,f}', \
                '{1.5,-0}', '{1.25,NULL}', '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}', '{2024-02-29}', \
                '{\"2024-01-02 03:04:05.5\"}', '{\"2024-01-02 03:04:05+00\"}')";
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "SET TIME ZONE 'UTC'");
        run(&mut s, all_types);
        run(&mut s, row1);
        run(&mut s, "INSERT INTO a (id, i) VALUES (2, '{}')");
        run(&mut s, "COMMIT");
        db.checkpoint().unwrap();
        // After the checkpoint: in the redo only.
        run(&mut s, "INSERT INTO a (id, t) VALUES (3, ARRAY['after', NULL])");
        run(&mut s, "UPDATE a SET i = i || 7 WHERE id = 1");
        run(&mut s, "COMMIT");
        // A schema change in the redo: the array column's type in the logged schema.
        run(&mut s, "ALTER TABLE a ADD COLUMN extra numeric[]");
        run(&mut s, "UPDATE a SET extra = ARRAY[1.50, NULL] WHERE id = 2");
        run(&mut s, "COMMIT");
    }
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "SET TIME ZONE 'UTC'");
    assert_eq!(table(&mut s, "SELECT extra FROM a ORDER BY id"), ["", "{1.50,NULL}", ""]);
    run(&mut s, "ALTER TABLE a DROP COLUMN extra");
    assert_eq!(
        table(&mut s, "SELECT * FROM a ORDER BY id"),
        [
            "1|{1,NULL,7}|{9000000000}|{-3}|{\"a b\",\"\"}|{v}|{t,f}|{1.5,-0}|{1.25,NULL}|\
             {a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}|{2024-02-29}|{\"2024-01-02 03:04:05.5\"}|\
             {\"2024-01-02 03:04:05+00\"}",
            "2|{}|||||||||||",
            "3||||{after,NULL}||||||||",
        ]
    );
}

#[test]
fn set_returning_functions_in_from_give_postgresqls_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE posts (id int primary key, tags text[])");
    run(&mut s, "INSERT INTO posts VALUES (1, '{a,b}'), (2, '{c}'), (3, '{}')");
    let cases: &[(&str, &[&str])] = &[
        ("SELECT * FROM generate_series(1,3)", &["1", "2", "3"]),
        ("SELECT array_to_string(array_agg(g), ',') FROM generate_series(10, 1, -3) g", &["10,7,4,1"]),
        ("SELECT array_to_string(array_agg(n), ',') FROM generate_series(1, 2, 0.5) AS t(n)", &["1,1.5,2.0"]),
        (
            "SELECT array_to_string(array_agg(g), ',') FROM generate_series('2024-01-01'::timestamp, '2024-01-02', '12 hours') g",
            &["2024-01-01 00:00:00,2024-01-01 12:00:00,2024-01-02 00:00:00"],
        ),
        ("SELECT * FROM unnest(ARRAY['a','b']) WITH ORDINALITY", &["a|1", "b|2"]),
        ("SELECT * FROM unnest(ARRAY[1,2,3], ARRAY['x']) AS u(n, s)", &["1|x", "2|", "3|"]),
        ("SELECT x FROM unnest('{5,6}'::int[]) AS x", &["5", "6"]),
        ("SELECT id, tag FROM posts, unnest(posts.tags) AS tag ORDER BY id, tag", &["1|a", "1|b", "2|c"]),
        (
            "SELECT p.id, t.tag, t.n FROM posts p CROSS JOIN LATERAL unnest(p.tags) WITH ORDINALITY AS t(tag, n) ORDER BY 1, 3",
            &["1|a|1", "1|b|2", "2|c|1"],
        ),
        (
            "SELECT p.id, t FROM posts p LEFT JOIN LATERAL unnest(p.tags) AS t ON true ORDER BY 1, 2",
            &["1|a", "1|b", "2|c", "3|"],
        ),
        ("SELECT count(*) FROM generate_series(1, 10) g WHERE g % 2 = 0", &["5"]),
        ("SELECT * FROM generate_series(3, 1)", &[]),
    ];
    let mut wrong = Vec::new();
    for (sql, expected) in cases {
        match s.execute(sql, &[]) {
            Ok(r) => {
                let got: Vec<String> = r
                    .rows()
                    .iter()
                    .map(|row| row.iter().map(pg_text).collect::<Vec<_>>().join("|"))
                    .collect();
                if got != *expected {
                    wrong.push(format!("{sql}: got {got:?}, PostgreSQL gives {expected:?}"));
                }
            }
            Err(e) => wrong.push(format!("{sql}: failed with {e}")),
        }
    }
    assert!(wrong.is_empty(), "{} of {} differ:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
    let e = fails(&mut s, "SELECT * FROM generate_series(1, 3, 0)");
    assert_eq!((e.sqlstate(), e.to_string().as_str()), ("22023", "step size cannot equal zero"));
    // A parameter array unnested.
    let ids = Array::new(ElemType::Int, vec![Value::Int(4), Value::Null]).into_value();
    let got = s.execute("SELECT count(*), count(u) FROM unnest($1) AS u", &[ids]).unwrap();
    assert_eq!(got.rows()[0].iter().map(pg_text).collect::<Vec<_>>(), ["2", "1"]);
    // EXPLAIN shows the function as a scan of its own.
    let plan = table(&mut s, "EXPLAIN SELECT id, tag FROM posts, unnest(posts.tags) AS tag").join("\n");
    assert!(plan.contains("Function Scan on unnest tag"), "{plan}");
}

#[test]
fn set_returning_functions_in_the_select_list_give_a_row_per_value() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE posts (id int primary key, tags text[])");
    run(&mut s, "INSERT INTO posts VALUES (1, '{a,b}'), (2, '{c}'), (3, '{}')");
    let cases: &[(&str, &[&str])] = &[
        ("SELECT generate_series(1,3)", &["1", "2", "3"]),
        ("SELECT unnest(ARRAY[1,2])", &["1", "2"]),
        ("SELECT id, unnest(tags) FROM posts ORDER BY 1, 2", &["1|a", "1|b", "2|c"]),
        ("SELECT *, unnest(tags) AS tag FROM posts ORDER BY 1, 3", &["1|{a,b}|a", "1|{a,b}|b", "2|{c}|c"]),
        ("SELECT unnest(ARRAY[1,2,3]), unnest(ARRAY['a','b'])", &["1|a", "2|b", "3|"]),
        (
            "SELECT generate_series(1, id) AS n, id FROM posts ORDER BY id, n",
            &["1|1", "1|2", "2|2", "1|3", "2|3", "3|3"],
        ),
    ];
    for (sql, expected) in cases {
        assert_eq!(table(&mut s, sql), *expected, "{sql}");
    }
    let names = |s: &mut db::Session, sql: &str| {
        run(s, sql).columns().iter().map(|c| c.name.clone()).collect::<Vec<_>>()
    };
    assert_eq!(names(&mut s, "SELECT generate_series(1, 2)"), ["generate_series"]);
    assert_eq!(names(&mut s, "SELECT id, unnest(tags) AS u FROM posts"), ["id", "u"]);
    // Set-returning functions side by side in the select list run in step, the shorter
    // padded with NULLs (PostgreSQL 15's answer).
    assert_eq!(
        run(&mut s, "SELECT generate_series(1, 2), unnest(ARRAY[1])").rows(),
        [vec![Value::Int(1), Value::Int(1)], vec![Value::Int(2), Value::Null]]
    );
    // Inside an expression (PostgreSQL takes it) and beside GROUP BY: refused, not wrong.
    assert_eq!(fails(&mut s, "SELECT unnest(ARRAY[1,2]) + 1").sqlstate(), "0A000");
    assert_eq!(fails(&mut s, "SELECT id, unnest(tags) FROM posts GROUP BY id").sqlstate(), "0A000");
}

#[test]
fn update_sets_one_element_of_an_array_as_postgresql_does() {
    // Expected values: PostgreSQL 15 on the same rows (bigint[] for INT[]).
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE ta (id INT PRIMARY KEY, a INT[], t TEXT[])");
    run(&mut s, "INSERT INTO ta VALUES (1, '{1,2,3}', '{x}'), (2, NULL, NULL), (3, '{}', '{}')");
    run(&mut s, "COMMIT");
    run(&mut s, "UPDATE ta SET a[2] = 20, t[3] = 'z' WHERE id = 1");
    // A NULL array assigned its first element is an array of it.
    run(&mut s, "UPDATE ta SET a[1] = 7 WHERE id = 2");
    run(&mut s, "COMMIT");
    assert_eq!(
        crate::common::cells(&mut s, "SELECT id, a, t FROM ta ORDER BY id"),
        [["1", "{1,20,3}", "{x,NULL,z}"], ["2", "{7}", "NULL"], ["3", "{}", "{}"]]
    );
    // Past the end: NULLs between; the element coerced to the array's type.
    assert_eq!(
        crate::common::one(&mut s, "UPDATE ta SET a[5] = '9' WHERE id = 1 RETURNING a"),
        "{1,20,3,NULL,9}"
    );
    let e = fails(&mut s, "UPDATE ta SET a[NULL] = 1 WHERE id = 1");
    assert_eq!(
        (e.sqlstate(), e.to_string().as_str()),
        ("22004", "array subscript in assignment must not be null")
    );
    // PostgreSQL would give `[0:5]={1,1,20,3,NULL,9}`: a lower bound arrays here do not
    // have, so it is refused rather than renumbered.
    let e = fails(&mut s, "UPDATE ta SET a[0] = 1 WHERE id = 1");
    assert_eq!(e.sqlstate(), "0A000", "{e}");
    let e = fails(&mut s, "UPDATE ta SET a[1:2] = '{1,2}' WHERE id = 1");
    assert_eq!(e.sqlstate(), "0A000", "{e}");
    // With bind parameters, as a driver sends it: an empty array takes element 1.
    let sql = "UPDATE ta SET a[$1] = $2 WHERE id = $3";
    s.execute(sql, &[Value::Int(1), Value::Int(5), Value::Int(3)]).unwrap();
    assert_eq!(crate::common::one(&mut s, "SELECT a FROM ta WHERE id = 3"), "{5}");
}

/// `ARRAY(SELECT ...)`: the subquery's one column as an array in the subquery's order,
/// empty (not NULL) without a row, correlated or not, typed by the column (psql's
/// `\du` builds the roles' memberships so). Expected results from PostgreSQL 15.
#[test]
fn an_array_is_built_from_a_subquery() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE g (k INT PRIMARY KEY, name TEXT, price NUMERIC(6,2))");
    run(&mut s, "INSERT INTO g VALUES (1, 'b', 1.50), (2, 'a', NULL), (3, 'c', 3)");
    run(&mut s, "COMMIT");
    let cases: &[(&str, &str)] = &[
        ("SELECT ARRAY(SELECT name FROM g ORDER BY k)", "{b,a,c}"),
        ("SELECT ARRAY(SELECT name FROM g WHERE k > 9)", "{}"),
        ("SELECT ARRAY(SELECT price FROM g ORDER BY k DESC)", "{3.00,NULL,1.50}"),
        ("SELECT ARRAY(SELECT k FROM g ORDER BY k) = '{1,2,3}'::int[]", "t"),
        ("SELECT cardinality(ARRAY(SELECT generate_series(1, 5)))", "5"),
        ("SELECT array_to_string(ARRAY(SELECT name FROM g ORDER BY 1), ',')", "a,b,c"),
    ];
    for (sql, expected) in cases {
        assert_eq!(value(&mut s, sql, &[]), *expected, "{sql}");
    }
    assert_eq!(
        table(&mut s, "SELECT k, ARRAY(SELECT g2.k FROM g g2 WHERE g2.k < g.k ORDER BY 1) FROM g ORDER BY k"),
        ["1|{}", "2|{1}", "3|{1,2}"]
    );
    let error = fails(&mut s, "SELECT ARRAY(SELECT k, name FROM g)");
    assert_eq!(error.sqlstate(), "42601", "{error}");
    assert!(error.to_string().contains("subquery must return only one column"), "{error}");
}

#[test]
fn a_subscript_of_a_qualified_column_reads_that_relations_column() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE tq (k INT PRIMARY KEY, a INT[])");
    run(&mut s, "INSERT INTO tq VALUES (1, '{4,5,6}')");
    run(&mut s, "COMMIT");
    // PostgreSQL 15: 5|6|{4,5}.
    assert_eq!(table(&mut s, "SELECT tq.a[2], public.tq.a[3], tq.a[1:2] FROM tq"), ["5|6|{4,5}"]);
    // A subscript from another relation of the FROM clause, as PgJDBC's foreign-key
    // query pairs each key's columns by position (`con.confkey[pos.n]`).
    assert_eq!(
        table(
            &mut s,
            "SELECT pos.n, t.a[pos.n] FROM tq t, generate_series(1, 4) pos(n) WHERE t.a[pos.n] > 4 ORDER BY pos.n"
        ),
        ["2|5", "3|6"]
    );
    // A name before the column that names no relation is an error, as PostgreSQL's.
    assert_eq!(fails(&mut s, "SELECT nosuch.a[1] FROM tq").sqlstate(), "42P01");
}

#[test]
fn bitwise_operators_of_integers_give_postgresqls_results() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    // PostgreSQL 15: 8|15|6|16|64.
    assert_eq!(table(&mut s, "SELECT 12 & 10, 12 | 3, 12 # 10, 1 << 4, 256 >> 2"), ["8|15|6|16|64"]);
    // An array's element and a smallint (PgJDBC's getIndexInfo reads the DESC bit of
    // pg_index.indoption so: `catalog::pgjdbcs_metadata_queries_give_postgresqls_rows`).
    assert_eq!(table(&mut s, "SELECT (ARRAY[1,0])[1] & 1::smallint, (ARRAY[1,0])[2] & 1::smallint"), ["1|0"]);
    assert_eq!(fails(&mut s, "SELECT 1.5 & 1").sqlstate(), "42883");
}
