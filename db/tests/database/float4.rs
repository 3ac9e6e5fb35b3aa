//! REAL (float4) through `Session::execute` (issue 20): single-precision values,
//! PostgreSQL's float4 arithmetic and its float4/float8 operators, casts, text output,
//! aggregates, errors, and what a table of REALs stores surviving a checkpoint image and
//! the redo after it. Every expected text is PostgreSQL 15's (psql, `-A -t`).

use crate::common::{cells, fails, one, open, pipe_rows, run};

#[test]
fn real_values_compute_and_print_as_postgres_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let cases = [
        ("SELECT 0.1::real", "0.1"),
        ("SELECT 0.1::real * 3", "0.30000000447034836"),
        ("SELECT 0.1::real * 3::real", "0.3"),
        ("SELECT 0.1::real + 0.2::real", "0.3"),
        ("SELECT 0.1::real + 0.2::float8", "0.30000000149011613"),
        ("SELECT 0.1::real::float8", "0.10000000149011612"),
        ("SELECT 1234567::float4", "1.234567e+06"),
        ("SELECT 123456::float4", "123456"),
        ("SELECT 0.0001::float4", "0.0001"),
        ("SELECT 0.00001::float4", "1e-05"),
        ("SELECT 'NaN'::float4", "NaN"),
        ("SELECT 'Infinity'::float4", "Infinity"),
        ("SELECT '-Infinity'::real", "-Infinity"),
        ("SELECT '-0'::float4", "-0"),
        ("SELECT 16777217::real", "1.6777216e+07"),
        ("SELECT 123456789::real", "1.2345679e+08"),
        ("SELECT 0.000123456789::real", "0.00012345679"),
        ("SELECT 3.4028235e38::real", "3.4028235e+38"),
        ("SELECT 1.4e-45::real", "1e-45"),
        ("SELECT '1.17549435e-39'::real", "1.175495e-39"),
        ("SELECT 1e20::real", "1e+20"),
        ("SELECT -1.5::real", "-1.5"),
        ("SELECT 2.5::real::int", "2"),
        ("SELECT 3.5::real::bigint", "4"),
        ("SELECT 0.1::real::numeric", "0.1"),
        ("SELECT 1234567::real::numeric", "1234570"),
        ("SELECT 1.5::real::numeric(5,2)", "1.50"),
        ("SELECT 0.1::real::text", "0.1"),
        ("SELECT 'x' || 0.1::real", "x0.1"),
        ("SELECT 0.1::real = 0.1::float8", "false"),
        ("SELECT 0.1::real = 0.1", "false"),
        ("SELECT 0.1::real = 0.1::real", "true"),
        ("SELECT 0.1::real = '0.1'", "true"),
        ("SELECT 1::real = 1", "true"),
        ("SELECT 1.1::real > 1.1", "true"),
        ("SELECT 1.1::real < 1.1::float8", "false"),
        // An IN list of constants takes the REAL's type; one double makes it doubles.
        ("SELECT 0.1::real IN (0.1, 0.2)", "true"),
        ("SELECT 0.1::real IN (0.1::float8, 0.2)", "false"),
        // SQL's float order: -0 equals 0, NaN equals NaN and is above every number.
        ("SELECT '-0'::real = '0'::real", "true"),
        ("SELECT '-0'::float8 = 0::float8", "true"),
        ("SELECT 'NaN'::real > 1e30::real", "true"),
        ("SELECT pg_typeof(sign(-2::real))", "double precision"),
        ("SELECT 1::real / 3::real", "0.33333334"),
        ("SELECT 1::real / 3", "0.3333333333333333"),
        ("SELECT 2::real - 0.5::real", "1.5"),
        ("SELECT -(0.1::real)", "-0.1"),
        ("SELECT abs(-0.1::real)", "0.1"),
        ("SELECT round(2.5::real)", "2"),
        ("SELECT floor(0.1::real)", "0"),
        ("SELECT sqrt(2::real)", "1.4142135623730951"),
        ("SELECT 0.1::real + '0.2'", "0.3"),
        ("SELECT coalesce(NULL::real, 0.1::real)", "0.1"),
        ("SELECT greatest(0.1::real, 0.2::real)", "0.2"),
        ("SELECT pg_typeof(0.1::real)", "real"),
        ("SELECT pg_typeof(0.1::real + 0.2::real)", "real"),
        ("SELECT pg_typeof(0.1::real + 1)", "double precision"),
        ("SELECT pg_typeof(0.1::real * 0.2::float8)", "double precision"),
        ("SELECT pg_typeof(-(0.1::real))", "real"),
        ("SELECT pg_typeof(abs(0.1::real))", "real"),
        ("SELECT pg_typeof(round(0.1::real))", "double precision"),
        ("SELECT pg_typeof(CAST(1 AS float(10)))", "real"),
        ("SELECT pg_typeof(CAST(1 AS float(30)))", "double precision"),
        ("SELECT format_type(700, NULL)", "real"),
        ("SELECT format_type(1021, NULL)", "real[]"),
        ("SELECT ARRAY[0.1::real, 1e10::real]", "{0.1,1e+10}"),
        ("SELECT ARRAY[0.1, 2.5]::real[]", "{0.1,2.5}"),
        ("SELECT pg_typeof(ARRAY[1::real])", "real[]"),
        ("SELECT (ARRAY[0.1::real, 2])[1]", "0.1"),
        ("SELECT to_json(0.1::real)", "0.1"),
        ("SELECT to_jsonb(1234567::real)", "1234567"),
        ("SELECT sum(x) FROM (VALUES (0.1::real), (0.2::real), (0.7::real)) v(x)", "1"),
        ("SELECT avg(x) FROM (VALUES (0.1::real), (0.2::real), (0.7::real)) v(x)", "0.3333333308498065"),
        ("SELECT min(x) FROM (VALUES (0.1::real), (0.2::real), (0.7::real)) v(x)", "0.1"),
        ("SELECT max(x) FROM (VALUES (0.1::real), (0.2::real), (0.7::real)) v(x)", "0.7"),
        ("SELECT stddev(x) FROM (VALUES (0.1::real), (0.2::real), (0.7::real)) v(x)", "0.32145501740876287"),
        (
            "SELECT variance(x) FROM (VALUES (0.1::real), (0.2::real), (0.7::real)) v(x)",
            "0.10333332821726805",
        ),
        ("SELECT var_pop(x) FROM (VALUES (0.1::real), (0.2::real), (0.7::real)) v(x)", "0.0688888854781787"),
        ("SELECT pg_typeof(sum(x)) FROM (VALUES (0.1::real)) v(x)", "real"),
        ("SELECT pg_typeof(avg(x)) FROM (VALUES (0.1::real)) v(x)", "double precision"),
        ("SELECT pg_typeof(stddev(x)) FROM (VALUES (0.1::real)) v(x)", "double precision"),
        ("SELECT pg_typeof(max(x)) FROM (VALUES (0.1::real)) v(x)", "real"),
    ];
    let mut wrong = Vec::new();
    for (sql, want) in cases {
        let got = one(&mut s, sql);
        if got != want {
            wrong.push(format!("{sql}: got {got}, PostgreSQL gives {want}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(pipe_rows(&mut s, "SELECT x FROM (VALUES (1::real), (2.5)) v(x) ORDER BY x"), ["1", "2.5"]);
    assert_eq!(pipe_rows(&mut s, "SELECT 0.1::real UNION ALL SELECT 2"), ["0.1", "2"]);
}

#[test]
fn real_arithmetic_and_input_fail_as_postgres_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let cases = [
        ("SELECT 3e38::real + 3e38::real", "22003", "value out of range: overflow"),
        ("SELECT 3e38::real * 10::real", "22003", "value out of range: overflow"),
        ("SELECT 1e-30::real * 1e-30::real", "22003", "value out of range: underflow"),
        ("SELECT 1e-38::real / 1e10::real", "22003", "value out of range: underflow"),
        ("SELECT 1e39::float8::real", "22003", "value out of range: overflow"),
        ("SELECT 1e-46::float8::real", "22003", "value out of range: underflow"),
        ("SELECT '1e39'::real", "22003", "\"1e39\" is out of range for type real"),
        ("SELECT '1e-46'::real", "22003", "\"1e-46\" is out of range for type real"),
        ("SELECT 1::real / 0::real", "22012", "division by zero"),
    ];
    for (sql, state, message) in cases {
        let e = fails(&mut s, sql);
        assert_eq!((e.sqlstate(), e.to_string().as_str()), (state, message), "{sql}");
    }
    assert_eq!(fails(&mut s, "SELECT 'abc'::real").sqlstate(), "22P02");
}

#[test]
fn real_columns_store_single_precision_and_survive_a_checkpoint_and_the_redo_after_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE TABLE m (id real PRIMARY KEY, r real, d float4, w double precision, a real[])");
        run(&mut s, "CREATE INDEX m_r ON m (r)");
        run(&mut s, "INSERT INTO m VALUES (0.1, 0.1, 1234567, 0.1, '{0.1,1e10}')");
        run(&mut s, "COMMIT");
        db.checkpoint().unwrap();
        run(&mut s, "INSERT INTO m VALUES (2.5, 1e-5, 'NaN', 16777217, ARRAY[1,2])");
        // A REAL times an integer is a double, rounded again where it is stored.
        run(&mut s, "UPDATE m SET r = r * 3 WHERE id = '0.1'");
        run(&mut s, "UPDATE m SET w = r WHERE id = 2.5");
        run(&mut s, "COMMIT");
        let e = fails(&mut s, "INSERT INTO m (id, r) VALUES (1, '1e39')");
        assert_eq!(e.to_string(), "\"1e39\" is out of range for type real");
        run(&mut s, "ROLLBACK");
    }
    let db = open(dir.path());
    db.snapshot().verify_indexes().unwrap();
    let mut s = db.session();
    // (`NULL` is how a value without text prints here; psql prints nothing.)
    assert_eq!(
        pipe_rows(&mut s, "SELECT id, r, d, w, a FROM m ORDER BY id"),
        ["0.1|0.3|1.234567e+06|0.1|{0.1,1e+10}", "2.5|1e-05|NaN|9.999999747378752e-06|{1,2}"]
    );
    // A REAL compared with a double or a decimal is widened: 0.1::real is not 0.1.
    assert_eq!(cells(&mut s, "SELECT id FROM m WHERE r = 0.3::real"), [["0.1"]]);
    assert!(cells(&mut s, "SELECT id FROM m WHERE r = 0.3").is_empty());
    assert!(cells(&mut s, "SELECT id FROM m WHERE id = 0.1").is_empty());
    assert_eq!(cells(&mut s, "SELECT id FROM m WHERE id = 2.5"), [["2.5"]]);
    assert_eq!(cells(&mut s, "SELECT id FROM m WHERE r > 0.001 ORDER BY id"), [["0.1"]]);
    assert_eq!(pipe_rows(&mut s, "SELECT sum(r), avg(r) FROM m"), ["0.30001003|0.15000500596033817"]);
    assert_eq!(
        pipe_rows(
            &mut s,
            "SELECT column_name, data_type, numeric_precision FROM information_schema.columns \
             WHERE table_name = 'm' ORDER BY ordinal_position"
        ),
        ["id|real|24", "r|real|24", "d|real|24", "w|double precision|53", "a|ARRAY|NULL"]
    );
    assert_eq!(
        pipe_rows(
            &mut s,
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
             WHERE attrelid = 'm'::regclass AND attnum > 0 ORDER BY attnum"
        ),
        ["real", "real", "real", "double precision", "real[]"]
    );
}
