//! The exact and structured types through `Session::execute` (issue 20): NUMERIC /
//! DECIMAL / Oracle's NUMBER as exact decimals, each as a user writes it, with
//! PostgreSQL's results, result scales and errors, in keys and indexes, and what it
//! stores surviving a checkpoint image and the redo after it.

use crate::common::{cells, fails, one, open, run};

/// The rows of a query, each value as PostgreSQL's text would print it.
#[test]
fn numeric_values_compute_and_print_as_postgres_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let cases = [
        // Literals: the scale as written, never an exponent.
        ("SELECT 1.50", "1.50"),
        ("SELECT -1.50", "-1.50"),
        ("SELECT 1e3", "1000"),
        ("SELECT 1.5e-3", "0.0015"),
        ("SELECT 99999999999999999999 + 1", "100000000000000000000"),
        ("SELECT 0.000000000000000000000000000001", "0.000000000000000000000000000001"),
        // Exact arithmetic, with PostgreSQL's result scales.
        ("SELECT 0.1 + 0.2", "0.3"),
        ("SELECT 0.1 + 0.2 = 0.3", "true"),
        ("SELECT 2 + 0.50", "2.50"),
        ("SELECT 1.5 * 2.25", "3.375"),
        ("SELECT 10 / 4.0", "2.5000000000000000"),
        ("SELECT 1 / 3.0", "0.33333333333333333333"),
        ("SELECT 100000 / 3.0", "33333.333333333333"),
        ("SELECT 7.5 % 2", "1.5"),
        ("SELECT -7 % 2.50", "-2.00"),
        ("SELECT 12345678901234567890.5 * 10", "123456789012345678905.0"),
        // With a float: a float.
        ("SELECT 1.5 + 1::float8", "2.5"),
        ("SELECT 0.1 = 0.1::float8", "true"),
        // Casts and modifiers: rounding half away from zero.
        ("SELECT CAST(1.005 AS NUMERIC(5,2))", "1.01"),
        ("SELECT (-1.005)::numeric(5,2)", "-1.01"),
        ("SELECT 2.5::numeric(3,0)", "3"),
        ("SELECT '12.345'::numeric(6,2)", "12.35"),
        ("SELECT 7::decimal(5,2)", "7.00"),
        ("SELECT 1234.5::numeric(6,-2)", "1200"),
        ("SELECT CAST('  -0.50 ' AS DECIMAL)", "-0.50"),
        ("SELECT 0.1::float8::numeric", "0.1"),
        ("SELECT (1 / 3.0::float8)::numeric", "0.333333333333333"),
        ("SELECT 2.5::int", "3"),
        ("SELECT (-2.5)::bigint", "-3"),
        ("SELECT 1.25::float8", "1.25"),
        ("SELECT 12.50::text", "12.50"),
        ("SELECT 'x' || 12.50", "x12.50"),
        // Functions.
        ("SELECT round(2.5)", "3"),
        ("SELECT round(-2.5)", "-3"),
        ("SELECT round(1.2345, 2)", "1.23"),
        ("SELECT round(1.2, 3)", "1.200"),
        ("SELECT round(1250.5, -2)", "1300"),
        ("SELECT trunc(-1.99)", "-1"),
        ("SELECT trunc(1.999, 2)", "1.99"),
        ("SELECT abs(-1.50)", "1.50"),
        ("SELECT ceil(1.01)", "2"),
        ("SELECT floor(-1.01)", "-2"),
        ("SELECT mod(7.5, 2)", "1.5"),
        ("SELECT greatest(1, 2.50, 2)", "2.50"),
        // Comparisons across the number types.
        ("SELECT 1 = 1.0", "true"),
        ("SELECT 2 < 2.5", "true"),
        ("SELECT 3 BETWEEN 2.5 AND 3.5", "true"),
        ("SELECT 2.50 IN (1, 2.5)", "true"),
        ("SELECT '2.50' = 2.5", "true"),
        ("SELECT 9007199254740993 = 9007199254740993.0", "true"),
        ("SELECT 9007199254740993 > 9007199254740992.5", "true"),
        // A day and a half as a factor of an interval.
        ("SELECT INTERVAL '1 day' * 1.5", "1 day 12:00:00"),
    ];
    for (sql, expected) in cases {
        assert_eq!(one(&mut s, sql), expected, "{sql}");
    }
    // No exponent notation, however large.
    let big = one(&mut s, "SELECT 1e400");
    assert_eq!(big.len(), 401, "{big}");
    assert!(big.starts_with('1') && big[1..].bytes().all(|b| b == b'0'));
    let errors = [
        ("SELECT 'abc'::numeric", "22P02"),
        ("SELECT CAST('1.2.3' AS DECIMAL)", "22P02"),
        ("SELECT 1234.5::numeric(5,2)", "22003"),
        ("SELECT 1.0 / 0", "22012"),
        ("SELECT 1.5 % 0", "22012"),
        ("SELECT mod(1.5, 0.0)", "22012"),
        ("SELECT 1e400::float8", "22003"),
        ("SELECT 9223372036854775807.5::bigint", "22003"),
        ("SELECT 1::numeric(0)", "22023"),
        ("SELECT 1::numeric(1001, 0)", "22023"),
        ("SELECT 1e1001", "22P02"),
    ];
    for (sql, sqlstate) in errors {
        assert_eq!(fails(&mut s, sql).sqlstate(), sqlstate, "{sql}");
    }
    let overflow = fails(&mut s, "SELECT 1234.5::numeric(5,2)").to_string();
    assert!(overflow.contains("numeric field overflow") && overflow.contains("10^3"), "{overflow}");
}

#[test]
fn numeric_columns_round_to_their_scale_and_refuse_what_exceeds_their_precision() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(
        &mut s,
        "CREATE TABLE prices (id INT PRIMARY KEY, amount NUMERIC(10,2), rate DECIMAL(5,4), qty NUMBER(6), \
         free NUMERIC, ora NUMBER(8,3), whole INTEGER, f DOUBLE PRECISION)",
    );
    run(
        &mut s,
        "INSERT INTO prices VALUES (1, 12.345, 0.12345, 12.5, 1.50, '3.14159', 2.5, 0.1), \
         (2, 7, 1, -12.5, 1.5, 2, -2.5, 1.5), (3, '99999999.99', NULL, NULL, 0.000001, NULL, NULL, NULL)",
    );
    assert_eq!(
        cells(&mut s, "SELECT id, amount, rate, qty, free, ora, whole, f FROM prices ORDER BY id"),
        [
            ["1", "12.35", "0.1235", "13", "1.50", "3.142", "3", "0.1"],
            ["2", "7.00", "1.0000", "-13", "1.5", "2.000", "-3", "1.5"],
            ["3", "99999999.99", "NULL", "NULL", "0.000001", "NULL", "NULL", "NULL"],
        ]
    );
    // Beyond the precision, after rounding: 22003, and the row is not stored.
    for sql in [
        "INSERT INTO prices (id, amount) VALUES (4, 99999999.995)",
        "INSERT INTO prices (id, rate) VALUES (4, 10)",
        "INSERT INTO prices (id, qty) VALUES (4, 999999.5)",
        "UPDATE prices SET amount = amount * 10 WHERE id = 3",
    ] {
        assert_eq!(fails(&mut s, sql).sqlstate(), "22003", "{sql}");
    }
    assert_eq!(fails(&mut s, "INSERT INTO prices (id, amount) VALUES (4, 'twelve')").sqlstate(), "22P02");
    assert_eq!(one(&mut s, "SELECT count(*) FROM prices"), "3");
    // Assignment rounds what an expression computes.
    run(&mut s, "UPDATE prices SET amount = amount * 1.1, free = free / 3 WHERE id = 1");
    assert_eq!(
        cells(&mut s, "SELECT amount, free FROM prices WHERE id = 1"),
        [["13.59", "0.50000000000000000000"]]
    );
    // Expressions over columns: PostgreSQL's scales, exact comparisons with integers.
    let cases = [
        ("SELECT amount * 2 FROM prices WHERE id = 2", "14.00"),
        ("SELECT amount + qty FROM prices WHERE id = 2", "-6.00"),
        ("SELECT amount / 3 FROM prices WHERE id = 2", "2.3333333333333333"),
        ("SELECT -amount FROM prices WHERE id = 2", "-7.00"),
        ("SELECT id FROM prices WHERE amount = 7", "2"),
        ("SELECT id FROM prices WHERE amount > 13.5 AND amount < 100", "1"),
        ("SELECT id FROM prices WHERE rate = 0.1235", "1"),
        ("SELECT id FROM prices WHERE f = 0.1", "1"),
        ("SELECT id FROM prices WHERE amount = '7.000'", "2"),
        ("SELECT sum(amount) FROM prices", "100000020.58"),
        ("SELECT avg(rate) FROM prices", "0.56175000000000000000"),
        ("SELECT min(amount) FROM prices", "7.00"),
        ("SELECT max(qty) FROM prices", "13"),
        ("SELECT sum(whole) FROM prices", "0"),
        ("SELECT count(DISTINCT free) FROM prices", "3"),
    ];
    for (sql, expected) in cases {
        assert_eq!(one(&mut s, sql), expected, "{sql}");
    }
    // Equal values of different scales are one value to GROUP BY and DISTINCT.
    run(&mut s, "UPDATE prices SET free = 1.5 WHERE id = 1");
    assert_eq!(
        cells(&mut s, "SELECT free, count(*) FROM prices GROUP BY free ORDER BY free"),
        [["0.000001", "1"], ["1.5", "2"],]
    );
    // Ordering mixes the number types by value.
    assert_eq!(cells(&mut s, "SELECT id FROM prices ORDER BY amount DESC"), [["3"], ["1"], ["2"]],);
    // The declared types, as the catalog and the wire describe them.
    let schema = db.snapshot().table("prices").unwrap().schema.clone();
    let names: Vec<String> = schema.columns.iter().map(|c| c.ty.name()).collect();
    assert_eq!(
        names,
        [
            "BIGINT",
            "NUMERIC(10,2)",
            "NUMERIC(5,4)",
            "NUMERIC(6,0)",
            "NUMERIC",
            "NUMERIC(8,3)",
            "BIGINT",
            "DOUBLE PRECISION"
        ]
    );
    // The types of expressions: a modifier only where the value is the column's or a
    // cast's.
    let r = run(&mut s, "SELECT amount, amount + 1, round(amount, 1), amount::numeric(12,1), amount * 1.5::float8 FROM prices");
    let types: Vec<String> = r.columns().iter().map(|c| c.ty.map_or("?".into(), |t| t.name())).collect();
    assert_eq!(types, ["NUMERIC(10,2)", "NUMERIC", "NUMERIC", "NUMERIC(12,1)", "DOUBLE PRECISION"]);
    let r = run(&mut s, "SELECT sum(amount), avg(amount), sum(whole), avg(whole), max(amount) FROM prices");
    let types: Vec<String> = r.columns().iter().map(|c| c.ty.map_or("?".into(), |t| t.name())).collect();
    assert_eq!(types, ["NUMERIC", "NUMERIC", "BIGINT", "NUMERIC", "NUMERIC(10,2)"]);
}

#[test]
fn numeric_keys_and_indexes_find_values_by_value_whatever_their_scale() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE k (id NUMERIC(6,2) PRIMARY KEY, v TEXT)");
    run(&mut s, "INSERT INTO k VALUES (1.5, 'a'), (2, 'b'), (-0.25, 'c'), (10.125, 'd')");
    assert_eq!(fails(&mut s, "INSERT INTO k VALUES (1.50, 'dup')").sqlstate(), "23505");
    assert_eq!(fails(&mut s, "INSERT INTO k VALUES ('1.5000', 'dup')").sqlstate(), "23505");
    let cases = [
        ("SELECT v FROM k WHERE id = 1.5", "a"),
        ("SELECT v FROM k WHERE id = 1.500", "a"),
        ("SELECT v FROM k WHERE id = 2", "b"),
        ("SELECT v FROM k WHERE id = '-0.25'", "c"),
        ("SELECT v FROM k WHERE id = 10.13", "d"),
        ("SELECT count(*) FROM k WHERE id = 1.505", "0"),
        ("SELECT count(*) FROM k WHERE id > 1.5 AND id <= 10.13", "2"),
        ("SELECT count(*) FROM k WHERE id BETWEEN -1 AND 2", "3"),
    ];
    for (sql, expected) in cases {
        assert_eq!(one(&mut s, sql), expected, "{sql}");
    }
    let plan = cells(&mut s, "EXPLAIN SELECT v FROM k WHERE id = 1.5");
    assert!(plan.iter().flatten().any(|l| l.contains("Index") || l.contains("index")), "{plan:?}");
    assert_eq!(cells(&mut s, "SELECT id FROM k ORDER BY id"), [["-0.25"], ["1.50"], ["2.00"], ["10.13"]]);

    // An integer key compared with decimals: exact (2.0 finds 2, 2.5 finds nothing, a
    // bound of 2.5 includes 2).
    run(&mut s, "CREATE TABLE ik (id BIGINT PRIMARY KEY, amount NUMERIC(8,2))");
    run(&mut s, "CREATE INDEX ik_amount ON ik (amount)");
    run(&mut s, "INSERT INTO ik VALUES (1, 10.50), (2, 20), (3, 10.5), (4, NULL)");
    let cases = [
        ("SELECT count(*) FROM ik WHERE id = 2.0", "1"),
        ("SELECT count(*) FROM ik WHERE id = 2.5", "0"),
        ("SELECT count(*) FROM ik WHERE id < 2.5", "2"),
        ("SELECT count(*) FROM ik WHERE id > 2.5", "2"),
        ("SELECT count(*) FROM ik WHERE id IN (1.0, 3.5, 4)", "2"),
        ("SELECT count(*) FROM ik WHERE amount = 10.5", "2"),
        ("SELECT count(*) FROM ik WHERE amount = 20", "1"),
        ("SELECT count(*) FROM ik WHERE amount >= 10.500 AND amount < 20", "2"),
    ];
    for (sql, expected) in cases {
        assert_eq!(one(&mut s, sql), expected, "{sql}");
    }
    let plan = cells(&mut s, "EXPLAIN SELECT id FROM ik WHERE amount = 10.5");
    assert!(plan.iter().flatten().any(|l| l.contains("ik_amount")), "{plan:?}");
    db.snapshot().verify_indexes().unwrap();

    // Joins on numbers of different types match by value (a hash join).
    let joined = cells(&mut s, "SELECT ik.id, k.v FROM ik JOIN k ON ik.amount = k.id * 10 ORDER BY ik.id");
    assert_eq!(joined, [["2", "b"]]);
    let joined = cells(&mut s, "SELECT k.v, ik.id FROM k JOIN ik ON k.id = ik.id ORDER BY k.v");
    assert_eq!(joined, [["b", "2"]]);
    run(&mut s, "CREATE TABLE fk (x DOUBLE PRECISION)");
    run(&mut s, "INSERT INTO fk VALUES (1.5), (10.125), (2.0)");
    let joined = cells(&mut s, "SELECT k.v FROM k JOIN fk ON k.id = fk.x ORDER BY k.v");
    assert_eq!(joined, [["a"], ["b"]]);
}

#[test]
fn numeric_values_survive_a_checkpoint_and_the_redo_after_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE TABLE acct (id INT PRIMARY KEY, balance NUMERIC(12,2) NOT NULL, note NUMERIC)");
        run(&mut s, "CREATE INDEX acct_balance ON acct (balance)");
        run(&mut s, "INSERT INTO acct VALUES (1, 100, 1.50), (2, 0.1, -0.000000000000000000000001)");
        run(&mut s, "COMMIT");
        db.checkpoint().unwrap();
        run(&mut s, "INSERT INTO acct VALUES (3, 1234567890.125, 123456789012345678901234567890.5)");
        run(&mut s, "UPDATE acct SET balance = balance - 0.05 WHERE id = 1");
        run(&mut s, "COMMIT");
        // A type change logged as a rewrite: each value converted as the statement did.
        run(&mut s, "ALTER TABLE acct ALTER COLUMN note TYPE NUMERIC(40,1)");
        assert_eq!(
            fails(&mut s, "ALTER TABLE acct ALTER COLUMN balance TYPE NUMERIC(5,2)").sqlstate(),
            "22003"
        );
    }
    let db = open(dir.path());
    db.snapshot().verify_indexes().unwrap();
    let mut s = db.session();
    assert_eq!(
        cells(&mut s, "SELECT id, balance, note FROM acct ORDER BY id"),
        [
            ["1", "99.95", "1.5"],
            ["2", "0.10", "0.0"],
            ["3", "1234567890.13", "123456789012345678901234567890.5"],
        ]
    );
    assert_eq!(one(&mut s, "SELECT id FROM acct WHERE balance = 99.95"), "1");
    assert_eq!(one(&mut s, "SELECT sum(balance) FROM acct"), "1234567990.18");
}

#[test]
fn bytea_values_read_both_input_forms_and_print_as_hex() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let cases = [
        (r"SELECT '\x0102FF'::bytea", r"\x0102ff"),
        (r"SELECT '\x01 02'::bytea", r"\x0102"),
        ("SELECT 'abc'::bytea", r"\x616263"),
        (r"SELECT 'a\000b\\'::bytea", r"\x6100625c"),
        (r"SELECT CAST('' AS BYTEA)", r"\x"),
        (r"SELECT length('\x0102ff'::bytea)", "3"),
        (r"SELECT octet_length('\x0102ff'::bytea)", "3"),
        ("SELECT octet_length('héllo')", "6"),
        ("SELECT length('héllo')", "5"),
        (r"SELECT '\x01'::bytea || '\x02'::bytea", r"\x0102"),
        (r"SELECT '\x01'::bytea < '\x0100'::bytea", "true"),
        (r"SELECT '\x02'::bytea > '\x0100'::bytea", "true"),
        (r"SELECT '\x0102'::bytea = '\x0102'", "true"),
        (r"SELECT encode('\x68656c6c6f'::bytea, 'base64')", "aGVsbG8="),
        ("SELECT decode('aGVsbG8=', 'base64')", r"\x68656c6c6f"),
        ("SELECT encode('hello'::bytea, 'hex')", "68656c6c6f"),
        ("SELECT decode('01FF', 'hex')", r"\x01ff"),
        (r"SELECT encode('\x615c01'::bytea, 'escape')", r"a\\\001"),
        (r"SELECT '\x0102'::bytea::text", r"\x0102"),
        (r"SELECT 'x' || '\x0102'::bytea", r"x\x0102"),
    ];
    for (sql, expected) in cases {
        assert_eq!(one(&mut s, sql), expected, "{sql}");
    }
    let errors = [
        (r"SELECT '\x123'::bytea", "22023"),
        (r"SELECT '\xzz'::bytea", "22023"),
        (r"SELECT 'a\b'::bytea", "22P02"),
        (r"SELECT encode('\x01'::bytea, 'rot13')", "22023"),
        ("SELECT decode('%%', 'base64')", "22023"),
        (r"SELECT '\x01'::bytea = 1", "42804"),
    ];
    for (sql, sqlstate) in errors {
        assert_eq!(fails(&mut s, sql).sqlstate(), sqlstate, "{sql}");
    }
}

#[test]
fn uuid_values_read_postgresqls_forms_and_generate_random_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let standard = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
    for form in [
        "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
        "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
        "a0eebc999c0b4ef8bb6d6bb9bd380a11",
        "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
    ] {
        assert_eq!(one(&mut s, &format!("SELECT '{form}'::uuid")), standard, "{form}");
        assert_eq!(one(&mut s, &format!("SELECT CAST('{standard}' AS UUID) = '{form}'")), "true");
    }
    assert_eq!(one(&mut s, "SELECT length(gen_random_uuid()::text)"), "36");
    assert_eq!(one(&mut s, "SELECT gen_random_uuid() = gen_random_uuid()"), "false");
    assert_eq!(
        one(&mut s, &format!("SELECT '{standard}'::uuid < 'b0eebc99-0000-0000-0000-000000000000'")),
        "true"
    );
    for bad in ["SELECT 'xyz'::uuid", "SELECT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1'::uuid"] {
        assert_eq!(fails(&mut s, bad).sqlstate(), "22P02", "{bad}");
    }
}

#[test]
fn bytea_and_uuid_columns_are_keys_indexed_and_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let fixed = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
    let generated: Vec<Vec<String>>;
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE TABLE users (id UUID PRIMARY KEY DEFAULT gen_random_uuid(), name TEXT NOT NULL)");
        run(
            &mut s,
            "CREATE TABLE files (id INT PRIMARY KEY, owner UUID, data BYTEA NOT NULL, raw RAW(16), b BLOB)",
        );
        run(&mut s, "CREATE INDEX files_data ON files (data)");
        // Each row its own random key.
        run(&mut s, "INSERT INTO users (name) VALUES ('ann'), ('bob'), ('cy')");
        assert_eq!(one(&mut s, "SELECT count(DISTINCT id) FROM users"), "3");
        run(&mut s, &format!("INSERT INTO users VALUES ('{fixed}', 'dee')"));
        assert_eq!(
            fails(&mut s, "INSERT INTO users VALUES ('{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}', 'dup')")
                .sqlstate(),
            "23505"
        );
        assert_eq!(fails(&mut s, "INSERT INTO users VALUES ('not-a-uuid', 'x')").sqlstate(), "22P02");
        run(
            &mut s,
            &format!(
                r"INSERT INTO files VALUES (1, '{fixed}', '\x0102', 'raw', NULL), (2, NULL, 'abc', NULL, '\xff'), (3, '{fixed}', '\x', NULL, NULL)"
            ),
        );
        run(&mut s, "COMMIT");
        db.checkpoint().unwrap();
        run(&mut s, r"INSERT INTO files VALUES (4, NULL, '\x00ff00', '\x01', '\x02')");
        run(&mut s, r"UPDATE files SET data = data || '\x03'::bytea WHERE id = 1");
        run(&mut s, "UPDATE users SET name = 'ann2' WHERE name = 'ann'");
        run(&mut s, "COMMIT");
        generated = cells(&mut s, "SELECT id, name FROM users ORDER BY id");
    }
    let db = open(dir.path());
    db.snapshot().verify_indexes().unwrap();
    let mut s = db.session();
    assert_eq!(cells(&mut s, "SELECT id, name FROM users ORDER BY id"), generated);
    assert_eq!(generated.len(), 4);
    assert_eq!(
        cells(&mut s, "SELECT id, owner, data, raw, b FROM files ORDER BY id"),
        [
            ["1", fixed, r"\x010203", r"\x726177", "NULL"],
            ["2", "NULL", r"\x616263", "NULL", r"\xff"],
            ["3", fixed, r"\x", "NULL", "NULL"],
            ["4", "NULL", r"\x00ff00", r"\x01", r"\x02"],
        ]
    );
    // Keys and indexes find values by text in any accepted form.
    assert_eq!(one(&mut s, &format!("SELECT name FROM users WHERE id = '{}'", fixed.to_uppercase())), "dee");
    let plan = cells(&mut s, &format!("EXPLAIN SELECT name FROM users WHERE id = '{fixed}'"));
    assert!(plan.iter().flatten().any(|l| l.contains("Index") || l.contains("index")), "{plan:?}");
    assert_eq!(one(&mut s, r"SELECT id FROM files WHERE data = '\x616263'"), "2");
    assert_eq!(one(&mut s, "SELECT id FROM files WHERE data = 'abc'"), "2");
    let plan = cells(&mut s, r"EXPLAIN SELECT id FROM files WHERE data = '\x616263'");
    assert!(plan.iter().flatten().any(|l| l.contains("files_data")), "{plan:?}");
    assert_eq!(
        cells(&mut s, r"SELECT id FROM files WHERE data > '\x00' ORDER BY data"),
        [["4"], ["1"], ["2"]]
    );
    // Joins and grouping on uuids.
    assert_eq!(
        cells(&mut s, "SELECT u.name, count(*) FROM users u JOIN files f ON f.owner = u.id GROUP BY u.name"),
        [["dee", "2"]]
    );
    assert_eq!(one(&mut s, "SELECT count(*) FROM users WHERE name LIKE 'ann%'"), "1");
}

#[test]
fn json_is_kept_as_given_and_jsonb_normalized_with_postgresqls_operators() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let doc = r#"'{"b": [1, 2, {"c": "x"}], "a": 1, "a": 2.50, "s": "é\n", "n": null}'"#;
    let cases = [
        // json keeps its text; jsonb prints PostgreSQL's normal form.
        (
            format!("SELECT {doc}::json"),
            r#"{"b": [1, 2, {"c": "x"}], "a": 1, "a": 2.50, "s": "é\n", "n": null}"#,
        ),
        (format!("SELECT {doc}::jsonb"), r#"{"a": 2.50, "b": [1, 2, {"c": "x"}], "n": null, "s": "é\n"}"#),
        (
            r#"SELECT '{"b":1,"aa":[1,2],"a":{"y":true,"x":1e3}}'::jsonb"#.into(),
            r#"{"a": {"x": 1000, "y": true}, "b": 1, "aa": [1, 2]}"#,
        ),
        (r#"SELECT '  [1,  "two" ,null]  '::json"#.into(), r#"  [1,  "two" ,null]  "#),
        // -> and ->> by key and index (negative from the end); missing is NULL.
        (format!("SELECT {doc}::jsonb -> 'b'"), r#"[1, 2, {"c": "x"}]"#),
        (format!("SELECT {doc}::json -> 'a'"), "2.50"),
        (format!("SELECT {doc}::jsonb -> 'b' -> 2 ->> 'c'"), "x"),
        (format!("SELECT {doc}::jsonb -> 'b' -> -1"), r#"{"c": "x"}"#),
        (format!("SELECT {doc}::jsonb ->> 's'"), "é\n"),
        (format!("SELECT {doc}::jsonb -> 's'"), r#""é\n""#),
        (format!("SELECT {doc}::jsonb ->> 'n'"), "NULL"),
        (format!("SELECT {doc}::jsonb -> 'n'"), "null"),
        (format!("SELECT {doc}::jsonb -> 'nope'"), "NULL"),
        (format!("SELECT {doc}::jsonb -> 'b' -> 9"), "NULL"),
        (r#"SELECT '{"a": [1,  2]}'::json -> 'a'"#.into(), "[1,  2]"),
        // Paths.
        (format!("SELECT {doc}::jsonb #> '{{b,2,c}}'"), r#""x""#),
        (format!("SELECT {doc}::jsonb #>> '{{b,2,c}}'"), "x"),
        (format!("SELECT {doc}::json #>> '{{b,0}}'"), "1"),
        // Containment and keys.
        (format!(r#"SELECT {doc}::jsonb @> '{{"b": [{{"c": "x"}}]}}'"#), "true"),
        (format!(r#"SELECT {doc}::jsonb @> '{{"a": 2.5}}'"#), "true"),
        (format!(r#"SELECT {doc}::jsonb @> '{{"a": 1}}'"#), "false"),
        (r#"SELECT '{"a": 1}'::jsonb <@ '{"a": 1, "b": 2}'::jsonb"#.into(), "true"),
        (format!("SELECT {doc}::jsonb ? 'b'"), "true"),
        (format!("SELECT {doc}::jsonb ? 'c'"), "false"),
        // Equality by value.
        (r#"SELECT '{"a": 1.0, "b": [1]}'::jsonb = '{"b": [1], "a": 1.00}'::jsonb"#.into(), "true"),
        (r#"SELECT '{"a": 1}'::jsonb = '{"a": 2}'"#.into(), "false"),
        (r#"SELECT '[1, 2]'::jsonb < '{}'::jsonb"#.into(), "true"),
        // || and -.
        (r#"SELECT '{"a": 1}'::jsonb || '{"b": 2, "a": 3}'::jsonb"#.into(), r#"{"a": 3, "b": 2}"#),
        (r#"SELECT '[1]'::jsonb || '[2, 3]'::jsonb"#.into(), "[1, 2, 3]"),
        (r#"SELECT '{"a": 1, "b": 2}'::jsonb - 'a'"#.into(), r#"{"b": 2}"#),
        (r#"SELECT '[1, 2, 3]'::jsonb - 0"#.into(), "[2, 3]"),
        // Functions.
        (format!("SELECT jsonb_typeof({doc}::jsonb -> 'b')"), "array"),
        (format!("SELECT json_typeof({doc}::json -> 'n')"), "null"),
        (format!("SELECT jsonb_array_length({doc}::jsonb -> 'b')"), "3"),
        ("SELECT to_json('a \"q\"'::text)".into(), r#""a \"q\"""#),
        ("SELECT to_jsonb(1.50)".into(), "1.50"),
        ("SELECT to_json(TIMESTAMP '2024-06-15 07:30')".into(), r#""2024-06-15T07:30:00""#),
        (
            "SELECT json_build_object('a', 1, 'b', 'x', 'c', NULL)".into(),
            r#"{"a" : 1, "b" : "x", "c" : null}"#,
        ),
        ("SELECT jsonb_build_object('b', 1, 'a', true)".into(), r#"{"a": true, "b": 1}"#),
        ("SELECT jsonb_build_array(1, 'two', NULL, 2.5)".into(), r#"[1, "two", null, 2.5]"#),
        ("SELECT json_build_array()".into(), "[]"),
        (r#"SELECT '{"a": 1}'::jsonb::text"#.into(), r#"{"a": 1}"#),
        (r#"SELECT '{"a":1}'::json::jsonb"#.into(), r#"{"a": 1}"#),
    ];
    for (sql, expected) in &cases {
        assert_eq!(one(&mut s, sql), *expected, "{sql}");
    }
    let errors = [
        ("SELECT '{\"a\": }'::json", "22P02"),
        ("SELECT '{a: 1}'::jsonb", "22P02"),
        ("SELECT '[1, 2'::json", "22P02"),
        ("SELECT 'nul'::jsonb", "22P02"),
        ("SELECT '\"\\u0000\"'::jsonb", "22P05"),
        ("SELECT '[1]'::json = '[1]'::json", "42804"),
        ("SELECT jsonb_array_length('{}'::jsonb)", "22023"),
        ("SELECT '1'::jsonb - 'a'", "22023"),
        ("SELECT json_build_object('a')", "22023"),
        ("SELECT '{\"a\": 1}'::jsonb + 1", "42804"),
    ];
    for (sql, sqlstate) in errors {
        assert_eq!(fails(&mut s, sql).sqlstate(), sqlstate, "{sql}");
    }
    let deep = format!("SELECT '{}{}'::jsonb", "[".repeat(5000), "]".repeat(5000));
    assert_eq!(fails(&mut s, &deep).sqlstate(), "22P02", "nested too deep: refused, not a stack overflow");
}

#[test]
fn json_columns_are_queried_by_path_and_recovered() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE TABLE events (id INT PRIMARY KEY, raw JSON, doc JSONB NOT NULL)");
        run(
            &mut s,
            r#"INSERT INTO events VALUES
               (1, '{"kind":"click", "kind":"tap"}', '{"kind": "click", "at": {"x": 1, "y": 2}, "tags": ["a", "b"]}'),
               (2, '[1,2]', '{"kind": "view", "n": 1.50}'),
               (3, NULL, '{"tags": ["b"], "kind": "click"}')"#,
        );
        run(&mut s, "COMMIT");
        db.checkpoint().unwrap();
        run(&mut s, r#"INSERT INTO events VALUES (4, 'true', '{"kind": "view", "n": 2}')"#);
        run(&mut s, r#"UPDATE events SET doc = doc || '{"seen": true}' WHERE id = 2"#);
        run(&mut s, "COMMIT");
        assert_eq!(fails(&mut s, "INSERT INTO events VALUES (5, '{', '{}')").sqlstate(), "22P02");
        assert_eq!(fails(&mut s, "INSERT INTO events VALUES (5, '{}', '{,}')").sqlstate(), "22P02");
    }
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(
        cells(&mut s, "SELECT id, raw, doc FROM events ORDER BY id"),
        [
            [
                "1",
                r#"{"kind":"click", "kind":"tap"}"#,
                r#"{"at": {"x": 1, "y": 2}, "kind": "click", "tags": ["a", "b"]}"#
            ],
            ["2", "[1,2]", r#"{"n": 1.50, "kind": "view", "seen": true}"#],
            ["3", "NULL", r#"{"kind": "click", "tags": ["b"]}"#],
            ["4", "true", r#"{"n": 2, "kind": "view"}"#],
        ]
    );
    let cases = [
        ("SELECT count(*) FROM events WHERE doc ->> 'kind' = 'click'", "2"),
        (r#"SELECT count(*) FROM events WHERE doc @> '{"tags": ["b"]}'"#, "2"),
        ("SELECT count(*) FROM events WHERE doc ? 'seen'", "1"),
        ("SELECT raw ->> 'kind' FROM events WHERE id = 1", "tap"),
        ("SELECT sum((doc ->> 'n')::numeric) FROM events", "3.50"),
        ("SELECT (doc #>> '{at,y}')::int + 1 FROM events WHERE id = 1", "3"),
        (r#"SELECT id FROM events WHERE doc = '{"kind": "view", "n": 2.0}'"#, "4"),
    ];
    for (sql, expected) in cases {
        assert_eq!(one(&mut s, sql), expected, "{sql}");
    }
    assert_eq!(
        cells(&mut s, "SELECT doc ->> 'kind', count(*) FROM events GROUP BY doc ->> 'kind' ORDER BY 1"),
        [["click", "2"], ["view", "2"]]
    );
    // Joins on jsonb values compare them by value.
    run(&mut s, r#"CREATE TABLE kinds (k JSONB, label TEXT)"#);
    run(&mut s, r#"INSERT INTO kinds VALUES ('{"n": 2.00}', 'two')"#);
    assert_eq!(
        cells(&mut s, "SELECT e.id, k.label FROM events e JOIN kinds k ON (e.doc - 'kind') = k.k"),
        [["4", "two"]]
    );
}

#[test]
fn char_n_is_blank_padded_and_its_trailing_blanks_insignificant() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(
            &mut s,
            "CREATE TABLE codes (code CHAR(5) PRIMARY KEY, flag CHARACTER, name NCHAR(4), v VARCHAR(5))",
        );
        run(&mut s, "CREATE INDEX codes_name ON codes (name)");
        run(&mut s, "INSERT INTO codes VALUES ('ab', 'y', 'xy', 'ab'), ('abc  ', 'n', 'z   ', 'ab  '), ('abcde   ', NULL, NULL, NULL)");
        // Too long unless the excess is blanks: 22001.
        assert_eq!(fails(&mut s, "INSERT INTO codes VALUES ('abcdef', 'y', NULL, NULL)").sqlstate(), "22001");
        assert_eq!(fails(&mut s, "INSERT INTO codes (code, flag) VALUES ('q', 'yes')").sqlstate(), "22001");
        // Trailing blanks are no part of the value: a duplicate key.
        assert_eq!(fails(&mut s, "INSERT INTO codes (code) VALUES ('ab   ')").sqlstate(), "23505");
        run(&mut s, "COMMIT");
        db.checkpoint().unwrap();
        run(&mut s, "UPDATE codes SET name = 'w ' WHERE code = 'abc'");
        run(&mut s, "COMMIT");
    }
    let db = open(dir.path());
    db.snapshot().verify_indexes().unwrap();
    let mut s = db.session();
    let cases = [
        // Comparisons with literals ignore their trailing blanks; keys are found so.
        ("SELECT count(*) FROM codes WHERE code = 'ab'", "1"),
        ("SELECT count(*) FROM codes WHERE code = 'ab   '", "1"),
        ("SELECT count(*) FROM codes WHERE code IN ('abc ', 'zz')", "1"),
        ("SELECT count(*) FROM codes WHERE code > 'ab '", "2"),
        ("SELECT count(*) FROM codes WHERE name = 'w'", "1"),
        // Compared with a text column, the CHAR's blanks are gone (PostgreSQL's cast to
        // text) and the text's count.
        ("SELECT count(*) FROM codes WHERE code = v", "1"),
        // length() counts no trailing blanks; concatenation drops them.
        ("SELECT length(code) FROM codes WHERE code = 'abc'", "3"),
        ("SELECT code || '|' FROM codes WHERE code = 'ab'", "ab|"),
        // Casts: an explicit CHAR(n) cuts a longer text.
        ("SELECT 'abcdef'::char(3)", "abc"),
        ("SELECT CAST('ab   ' AS CHAR(5)) = 'ab'", "true"),
        ("SELECT 'a'::bpchar = 'a  '", "true"),
    ];
    for (sql, expected) in cases {
        assert_eq!(one(&mut s, sql), expected, "{sql}");
    }
    assert_eq!(
        cells(&mut s, "SELECT code, flag, name, v FROM codes ORDER BY code"),
        [["ab", "y", "xy", "ab"], ["abc", "n", "w", "ab  "], ["abcde", "NULL", "NULL", "NULL"]]
    );
    let plan = cells(&mut s, "EXPLAIN SELECT code FROM codes WHERE name = 'xy  '");
    assert!(plan.iter().flatten().any(|l| l.contains("codes_name")), "{plan:?}");
    let schema = db.snapshot().table("codes").unwrap().schema.clone();
    let names: Vec<String> = schema.columns.iter().map(|c| c.ty.name()).collect();
    assert_eq!(names, ["CHAR(5)", "CHAR(1)", "CHAR(4)", "VARCHAR(5)"]);
    assert_eq!(fails(&mut s, "SELECT 'a'::char(0)").sqlstate(), "42601");
}

/// 9999-12-31 23:59:59.999999 at a zone west of UTC is an instant in the year 10000 in
/// UTC, inside PostgreSQL's range (to 294276 AD) though past the calendar library's:
/// PgJDBC sends one for `OffsetDateTime.of(9999, 12, 31, ...)` at -08:00.
#[test]
fn a_timestamptz_at_the_end_of_9999_west_of_utc_is_stored_compared_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "SET TIME ZONE 'America/Los_Angeles'");
    run(&mut s, "CREATE TABLE tt (k INT PRIMARY KEY, tstz TIMESTAMPTZ)");
    run(
        &mut s,
        "INSERT INTO tt VALUES (1, '9999-12-31 23:59:59.999999-08'), (2, '9999-12-31 23:59:59.999999+05:30')",
    );
    run(&mut s, "COMMIT");
    // PostgreSQL 15, the same statements.
    let rows: Vec<String> = cells(
        &mut s,
        "SELECT k, tstz, tstz - '9999-12-31 00:00:00+00'::timestamptz, extract(hour from tstz), \
         tstz AT TIME ZONE 'America/Los_Angeles', tstz > '9999-12-31 00:00:00+00' FROM tt ORDER BY k",
    )
    .into_iter()
    .map(|row| row.join("|"))
    .collect();
    assert_eq!(
        rows,
        [
            "1|9999-12-31 23:59:59.999999-08|1 day 07:59:59.999999|23|9999-12-31 23:59:59.999999|true",
            "2|9999-12-31 10:29:59.999999-08|18:29:59.999999|10|9999-12-31 10:29:59.999999|true",
        ]
    );
    assert_eq!(
        one(&mut s, "SELECT '9999-12-31 23:59:59.999999'::timestamp AT TIME ZONE 'America/Los_Angeles'"),
        "9999-12-31 23:59:59.999999-08"
    );
    // East of UTC the same instants' local times are in the year 10000, shown as
    // PostgreSQL 15 shows them.
    run(&mut s, "SET TIME ZONE 'Pacific/Kiritimati'");
    assert_eq!(one(&mut s, "SELECT '9999-12-31 23:00:00+00'::timestamptz"), "10000-01-01 13:00:00+14");
    assert_eq!(one(&mut s, "SELECT tstz FROM tt WHERE k = 1"), "10000-01-01 21:59:59.999999+14");
}
