#!/usr/bin/env python3
"""psycopg 3 (unmodified, from PyPI) against `redodb serve`.

Run by cli/tests/server/client_psycopg.rs as `python3 psycopg_test.py --port N` against a
fresh server. Each check is a function named check_*, run on its own connections and
its own tables; every check runs even after one fails, the failures are printed with
their tracebacks, the last line says how many checks ran and passed, and the exit status
is 1 if any failed or none ran. A check that hangs is cut by
the connections' statement timeout on the client side (psycopg's own timeouts).
"""

import argparse
import math
import struct
import sys
import threading
import time
import traceback
import uuid
from decimal import Decimal

import psycopg
from psycopg import errors, pq

PORT = None


def connect(autocommit=False, **kwargs):
    return psycopg.connect(
        host="127.0.0.1",
        port=PORT,
        user="psycopg",
        dbname="redodb",
        autocommit=autocommit,
        connect_timeout=10,
        **kwargs,
    )


def expect_error(kind, sqlstate, run):
    """Runs `run`, which must raise psycopg error class `kind` with `sqlstate`."""
    try:
        run()
    except kind as e:
        assert e.sqlstate == sqlstate, f"{kind.__name__}: sqlstate {e.sqlstate}, expected {sqlstate}: {e}"
        return e
    except psycopg.Error as e:
        raise AssertionError(f"expected {kind.__name__} ({sqlstate}), got {type(e).__name__} ({e.sqlstate}): {e}")
    raise AssertionError(f"expected {kind.__name__} ({sqlstate}), nothing was raised")


def create_table(conn, definition):
    """CREATE TABLE `definition` (the name and columns), dropping an older one first so
    that the script can run again against the same server."""
    name = definition.split()[0]
    conn.execute(f"DROP TABLE IF EXISTS {name}")
    conn.execute(f"CREATE TABLE {definition}")


def mystat(conn, name):
    """The session's statistic `name` from v$mystat (read in autocommit or not alike)."""
    row = conn.execute("SELECT value FROM v$mystat WHERE name = %s", (name,)).fetchone()
    assert row is not None, f"no statistic {name!r} in v$mystat"
    return row[0]


def sysstat(conn, name):
    row = conn.execute("SELECT value FROM v$sysstat WHERE name = %s", (name,)).fetchone()
    assert row is not None, f"no statistic {name!r} in v$sysstat"
    return row[0]


# ---------------------------------------------------------------------------------------


def check_startup_reports_what_psycopg_reads():
    with connect(autocommit=True) as conn:
        assert conn.info.server_version >= 160000, conn.info.server_version
        assert conn.info.parameter_status("server_encoding") == "UTF8"
        assert conn.info.parameter_status("client_encoding") == "UTF8"
        assert conn.info.parameter_status("standard_conforming_strings") == "on"
        assert conn.info.encoding == "utf-8", conn.info.encoding
        assert conn.info.backend_pid != 0
        assert conn.execute("SELECT 1").fetchone() == (1,)


def check_parameters_of_each_type():
    with connect(autocommit=True) as conn:
        create_table(conn, "ptypes (k BIGINT PRIMARY KEY, i BIGINT, f DOUBLE PRECISION,"
            " s VARCHAR(40), t TEXT, b BOOLEAN)"
        )
        # psycopg sends each Python int in binary as the smallest type that holds it:
        # int2, int4, int8; floats as float8; str as unspecified text; bool as bool.
        rows = [
            (1, 7, 1.5, "small", "x", True),
            (2, -40000, -0.25, "int4", "it's", False),
            (3, 1 << 40, 1e300, "int8", "ünïcödé ✓", True),
            (4, -(1 << 62), float("inf"), 'quote " and \\ backslash', "tab\tnl\n", False),
            (5, None, None, None, None, None),
        ]
        for row in rows:
            cur = conn.execute("INSERT INTO ptypes VALUES (%s, %s, %s, %s, %s, %s)", row)
            assert cur.rowcount == 1, cur.rowcount
            assert cur.statusmessage == "INSERT 0 1", cur.statusmessage
        # What psycopg sent for the last row but one: int2/int4/int8 and float8 in binary.
        cur = conn.execute("SELECT k FROM ptypes WHERE i = %s OR i = %s OR i = %s OR f = %s", (7, -40000, 1 << 40, 0.5))
        assert cur._query.types == (21, 23, 20, 701), cur._query.types
        assert all(f == pq.Format.BINARY for f in cur._query.formats), cur._query.formats
        assert sorted(cur.fetchall()) == [(1,), (2,), (3,)]
        # The same explicitly in binary (%b) and in text (%t).
        conn.execute("INSERT INTO ptypes VALUES (%b, %b, %b, %b, %b, %b)", (6, 300, 2.5, "bin", "b", True))
        conn.execute("INSERT INTO ptypes VALUES (%t, %t, %t, %t, %t, %t)", (7, 70000, 3.5, "txt", "t", False))

        got = conn.execute("SELECT k, i, f, s, t, b FROM ptypes WHERE k <= 5 ORDER BY k").fetchall()
        assert got == rows, got
        # Results in binary too, with the Python types intact.
        with conn.cursor(binary=True) as cur:
            got = cur.execute("SELECT k, i, f, s, t, b FROM ptypes WHERE k <= 5 ORDER BY k").fetchall()
            assert got == rows, got
            types = [c.type_code for c in cur.description]
            assert types == [20, 20, 701, 1043, 25, 16], types
        assert conn.execute("SELECT i, f, s, b FROM ptypes WHERE k = 6").fetchone() == (300, 2.5, "bin", True)
        assert conn.execute("SELECT i, f, s, b FROM ptypes WHERE k = 7").fetchone() == (70000, 3.5, "txt", False)

        # Parameters in WHERE of every type, each int width.
        for small_or_large, expected in ((7, 1), (-40000, 2), (1 << 40, 3)):
            got = conn.execute("SELECT k FROM ptypes WHERE i = %s", (small_or_large,)).fetchall()
            assert got == [(expected,)], (small_or_large, got)
        assert conn.execute("SELECT k FROM ptypes WHERE f > %s ORDER BY k", (2.0,)).fetchall() == [
            (3,),
            (4,),
            (6,),
            (7,),
        ]
        assert conn.execute("SELECT k FROM ptypes WHERE s = %s", ("ünïcödé ✓",)).fetchall() == []
        assert conn.execute("SELECT k FROM ptypes WHERE t = %s", ("ünïcödé ✓",)).fetchall() == [(3,)]
        assert conn.execute("SELECT count(*) FROM ptypes WHERE b = %s", (True,)).fetchone() == (3,)
        assert conn.execute("SELECT count(*) FROM ptypes WHERE i IS NULL").fetchone() == (1,)
        # A parameter in the select list: its value comes back.
        assert conn.execute("SELECT %s, %s, %s", (5, "five", True)).fetchone() == (5, "five", True)
        # UPDATE and DELETE with parameters give their row counts.
        cur = conn.execute("UPDATE ptypes SET s = %s WHERE k >= %s", ("many", 6))
        assert cur.rowcount == 2 and cur.statusmessage == "UPDATE 2", cur.statusmessage
        cur = conn.execute("DELETE FROM ptypes WHERE k = %s", (7,))
        assert cur.rowcount == 1 and cur.statusmessage == "DELETE 1", cur.statusmessage
        # Decimals go as numeric, in text by default and in binary with %b, and so do ints
        # beyond int8: read exactly, as the column's type.
        conn.execute("UPDATE ptypes SET f = %s, i = %s WHERE k = 6", (Decimal("-0.000125"), Decimal("12")))
        assert conn.execute("SELECT f, i FROM ptypes WHERE k = 6").fetchone() == (-0.000125, 12)
        conn.execute("UPDATE ptypes SET f = %b, i = %b WHERE k = 6", (Decimal("1234.5678"), Decimal("-90071992547")))
        assert conn.execute("SELECT f, i FROM ptypes WHERE k = 6").fetchone() == (1234.5678, -90071992547)
        conn.execute("UPDATE ptypes SET f = %b WHERE k = 6", (Decimal("NaN"),))
        assert math.isnan(conn.execute("SELECT f FROM ptypes WHERE k = 6").fetchone()[0])
        conn.execute("UPDATE ptypes SET f = %s WHERE k = 6", (-(10**20),))
        assert conn.execute("SELECT f FROM ptypes WHERE k = 6").fetchone() == (-1e20,)
        expect_error(
            errors.NumericValueOutOfRange,
            "22003",
            lambda: conn.execute("UPDATE ptypes SET i = %s WHERE k = 6", (1 << 63,)),
        )
        # A value that does not fit the column's type is the statement's error.
        expect_error(
            errors.InvalidTextRepresentation,
            "22P02",
            lambda: conn.execute("INSERT INTO ptypes (k, b) VALUES (%s, %s)", (8, "maybe")),
        )


def check_exact_numerics_in_text_and_binary():
    """NUMERIC(p, s) as Decimal both ways: parameters sent as numeric in text (%s, %t)
    and binary (%b), results read in text and binary (a binary cursor), the scale kept,
    rounding to the column's scale, 22003 past its precision, exact arithmetic."""
    with connect(autocommit=True) as conn:
        create_table(conn, "money (k BIGINT PRIMARY KEY, amount NUMERIC(10,2), exact NUMERIC, qty NUMBER(6))")
        rows = [
            (1, Decimal("12.345"), Decimal("0.1000000000000000000000000000001"), 7),
            (2, Decimal("-0.005"), Decimal("123456789012345678901234567890.5"), Decimal("12.5")),
            (3, Decimal("99999999.99"), Decimal("-1E-30"), None),
        ]
        conn.execute("INSERT INTO money VALUES (%s, %s, %s, %s)", rows[0])
        conn.execute("INSERT INTO money VALUES (%b, %b, %b, %b)", rows[1])
        conn.execute("INSERT INTO money VALUES (%t, %t, %t, %t)", rows[2])
        expected = [
            (1, Decimal("12.35"), Decimal("0.1000000000000000000000000000001"), Decimal("7")),
            (2, Decimal("-0.01"), Decimal("123456789012345678901234567890.5"), Decimal("13")),
            (3, Decimal("99999999.99"), Decimal("-0.000000000000000000000000000001"), None),
        ]

        def same(got, want):
            # Decimal("1.50") == Decimal("1.5"): compare the text too, where the scale shows.
            assert got == want and [str(v) for v in got] == [str(v) for v in want], (got, want)

        query = "SELECT k, amount, exact, qty FROM money ORDER BY k"
        for got, want in zip(conn.execute(query).fetchall(), expected):
            same(got, want)
        with conn.cursor(binary=True) as cur:
            for got, want in zip(cur.execute(query).fetchall(), expected):
                same(got, want)
            types = [c.type_code for c in cur.description]
            assert types == [20, 1700, 1700, 1700], types
            # The column's typmod: precision and scale, as psycopg reads them.
            assert (cur.description[1].precision, cur.description[1].scale) == (10, 2), cur.description[1]
            assert cur.description[2].precision is None, cur.description[2]
        # Arithmetic in the database is exact, with PostgreSQL's scales.
        got = conn.execute("SELECT amount * 3, amount / 3, exact + 1 FROM money WHERE k = 1")
        same(got.fetchone(), (Decimal("37.05"), Decimal("4.1166666666666667"), Decimal("1.1000000000000000000000000000001")))
        with conn.cursor(binary=True) as cur:
            same(cur.execute("SELECT sum(amount), avg(qty), sum(exact) FROM money").fetchone(), (
                Decimal("100000012.33"),
                Decimal("10.0000000000000000"),
                Decimal("123456789012345678901234567890.5999999999999999999999999999991"),
            ))
        # A Decimal parameter compared with the column, in either format.
        assert conn.execute("SELECT k FROM money WHERE amount = %s", (Decimal("12.350"),)).fetchall() == [(1,)]
        assert conn.execute("SELECT k FROM money WHERE amount < %b ORDER BY k", (Decimal("0"),)).fetchall() == [(2,)]
        # A Decimal in the select list comes back as it went.
        same(conn.execute("SELECT %s, %b", (Decimal("1.50"), Decimal("-0.0012"))).fetchone(), (Decimal("1.50"), Decimal("-0.0012")))
        expect_error(
            errors.NumericValueOutOfRange,
            "22003",
            lambda: conn.execute("UPDATE money SET amount = %s WHERE k = 1", (Decimal("123456789"),)),
        )
        expect_error(
            errors.InvalidTextRepresentation,
            "22P02",
            lambda: conn.execute("SELECT 'ten'::numeric"),
        )
        expect_error(errors.DivisionByZero, "22012", lambda: conn.execute("SELECT amount / 0 FROM money"))
        assert conn.execute("SELECT amount FROM money WHERE k = 1").fetchone() == (Decimal("12.35"),)


def check_reals_as_float4_in_text_and_binary():
    """REAL columns as float4 (OID 700, real[] 1021): Float4 parameters in text and binary
    (4 bytes), Python floats (float8) rounded where a REAL column stores them, results
    in text (float4out's shortest digits) and binary (the 4 bytes: a float4 widened),
    single-precision arithmetic, and a float8 parameter compared as a double."""
    from psycopg.types.numeric import Float4

    def widened(x):
        # The double a float4 widens to, as a binary result carries it.
        return struct.unpack(">f", struct.pack(">f", x))[0]

    with connect(autocommit=True) as conn:
        create_table(conn, "reals (k BIGINT PRIMARY KEY, r REAL, rs REAL[])")
        conn.execute("INSERT INTO reals VALUES (%s, %s, %s)", (1, 0.1, [0.1, 1e10]))
        conn.execute("INSERT INTO reals VALUES (%b, %b, %b)", (2, Float4(1234567.0), [Float4(2.5), None]))
        conn.execute("INSERT INTO reals VALUES (%t, %t, %t)", (3, Float4(1e-05), None))
        query = "SELECT k, r, rs FROM reals ORDER BY k"
        cur = conn.execute(query)
        assert [c.type_code for c in cur.description] == [20, 700, 1021], cur.description
        assert cur.fetchall() == [(1, 0.1, [0.1, 1e10]), (2, 1234567.0, [2.5, None]), (3, 1e-05, None)]
        with conn.cursor(binary=True) as cur:
            got = cur.execute(query).fetchall()
            assert [c.type_code for c in cur.description] == [20, 700, 1021], cur.description
            want = [(1, widened(0.1), [widened(0.1), 1e10]), (2, 1234567.0, [2.5, None]), (3, widened(1e-05), None)]
            assert got == want, got
        # Text as PostgreSQL's float4out writes it.
        texts = conn.execute("SELECT r::text, (r * 3::real)::text FROM reals ORDER BY k").fetchall()
        assert texts == [("0.1", "0.3"), ("1.234567e+06", "3.703701e+06"), ("1e-05", "3e-05")], texts
        # A float4 parameter equals the stored REAL; a float8 one is compared as a double.
        assert conn.execute("SELECT k FROM reals WHERE r = %b", (Float4(0.1),)).fetchall() == [(1,)]
        assert conn.execute("SELECT k FROM reals WHERE r = %s", (Float4(0.1),)).fetchall() == [(1,)]
        assert conn.execute("SELECT k FROM reals WHERE r = %b", (0.1,)).fetchall() == []
        assert conn.execute("SELECT k FROM reals WHERE r = %b", (widened(0.1),)).fetchall() == [(1,)]
        row = conn.execute("SELECT sum(r), avg(r), pg_typeof(sum(r))::text FROM reals WHERE k < 3").fetchone()
        assert row == (1234567.1, 617283.5500000007, "real"), row
        expect_error(
            errors.NumericValueOutOfRange,
            "22003",
            lambda: conn.execute("INSERT INTO reals VALUES (4, %b)", (1e39,)),
        )


def check_bytea_and_uuid_in_text_and_binary():
    """bytes as bytea and uuid.UUID as uuid, both ways in both formats; a uuid key made
    by gen_random_uuid() and found again by the UUID psycopg read."""
    with connect(autocommit=True) as conn:
        create_table(conn, "blobs (id UUID PRIMARY KEY DEFAULT gen_random_uuid(), data BYTEA, tag UUID)")
        payloads = [b"", b"\x00\x01\xff", bytes(range(256)) * 40, "ünï".encode()]
        fixed = uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
        ids = []
        for i, data in enumerate(payloads):
            form = ["%s", "%b", "%t", "%s"][i]
            row = conn.execute(f"INSERT INTO blobs (data, tag) VALUES ({form}, {form}) RETURNING id", (data, fixed)).fetchone()
            assert isinstance(row[0], uuid.UUID) and row[0].version == 4, row
            ids.append(row[0])
        assert len(set(ids)) == len(ids), ids
        for binary in (False, True):
            with conn.cursor(binary=binary) as cur:
                for id_, data in zip(ids, payloads):
                    got = cur.execute("SELECT data, tag, length(data) FROM blobs WHERE id = %s", (id_,)).fetchone()
                    assert got == (data, fixed, len(data)), (binary, got[1:], len(got[0]))
                types = [c.type_code for c in cur.execute("SELECT id, data FROM blobs LIMIT 1").description]
                assert types == [2950, 17], types
        # Text of both, as PostgreSQL prints them.
        assert conn.execute("SELECT data::text, tag::text FROM blobs WHERE id = %s", (ids[1],)).fetchone() == (
            "\\x0001ff",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        )
        assert conn.execute("SELECT count(*) FROM blobs WHERE tag = %s", (str(fixed).upper(),)).fetchone() == (4,)
        expect_error(errors.InvalidTextRepresentation, "22P02", lambda: conn.execute("SELECT 'nope'::uuid"))
        expect_error(errors.InvalidParameterValue, "22023", lambda: conn.execute("SELECT '\\x123'::bytea"))


def check_json_and_jsonb_with_psycopgs_adapters():
    """Json and Jsonb wrappers as parameters (text and binary), results loaded into
    Python objects by psycopg's json loaders in both formats; jsonb normalized, json as
    given; the operators from Python."""
    from psycopg.types.json import Json, Jsonb

    with connect(autocommit=True) as conn:
        create_table(conn, "docs (k BIGINT PRIMARY KEY, raw JSON, doc JSONB NOT NULL)")
        value = {"name": "ünï", "tags": ["a", "b"], "n": 1.5, "nested": {"ok": True, "none": None}}
        conn.execute("INSERT INTO docs VALUES (%s, %s, %s)", (1, Json(value), Jsonb(value)))
        conn.execute("INSERT INTO docs VALUES (%b, %b, %b)", (2, Json([1, 2]), Jsonb({"b": 1, "a": 2})))
        conn.execute("INSERT INTO docs VALUES (%t, %t, %t)", (3, Json(None), Jsonb("text")))
        expected = [(1, value, value), (2, [1, 2], {"a": 2, "b": 1}), (3, None, "text")]
        for binary in (False, True):
            with conn.cursor(binary=binary) as cur:
                got = cur.execute("SELECT k, raw, doc FROM docs ORDER BY k").fetchall()
                assert got == expected, (binary, got)
                assert [c.type_code for c in cur.description] == [20, 114, 3802], cur.description
        # The text: json as psycopg sent it, jsonb in PostgreSQL's normal form.
        raw, doc = conn.execute("SELECT raw::text, doc::text FROM docs WHERE k = 2").fetchone()
        assert doc == '{"a": 2, "b": 1}', doc
        assert raw.replace(" ", "") == "[1,2]", raw
        assert conn.execute("SELECT doc ->> 'name', doc -> 'tags' -> 1, doc #>> '{nested,ok}' FROM docs WHERE k = 1").fetchone() == ("ünï", "b", "true")
        assert conn.execute("SELECT k FROM docs WHERE doc @> %s ORDER BY k", (Jsonb({"tags": ["b"]}),)).fetchall() == [(1,)]
        assert conn.execute("SELECT count(*) FROM docs WHERE doc ? %s", ("a",)).fetchone() == (1,)
        expect_error(errors.InvalidTextRepresentation, "22P02", lambda: conn.execute("SELECT %s::jsonb", ("{bad",)))


def check_whole_rows_and_row_to_json_as_json_apis_send_them():
    """Whole-row references as JSON APIs write them: row_to_json and json_agg of a
    table's rows (loaded into dicts by psycopg's json loader, in text and binary), of a
    subquery's, with a bind parameter; a record's text (record_out's quoting), ROW() as
    psycopg's record loader reads it, and pg_typeof's regtype as its name."""
    with connect(autocommit=True) as conn:
        create_table(conn, "people (id INT PRIMARY KEY, name TEXT, born DATE, score NUMERIC(4,1))")
        conn.execute("INSERT INTO people VALUES (1, 'Ann, \"A\"', '1990-05-06', 9.5), (2, '', NULL, NULL)")
        expected = [
            {"id": 1, "name": 'Ann, "A"', "born": "1990-05-06", "score": 9.5},
            {"id": 2, "name": "", "born": None, "score": None},
        ]
        for binary in (False, True):
            with conn.cursor(binary=binary) as cur:
                got = cur.execute("SELECT row_to_json(p) FROM people p ORDER BY id").fetchall()
                assert got == [(e,) for e in expected], (binary, got)
                got = cur.execute("SELECT json_agg(p ORDER BY p.id) FROM people p").fetchone()
                assert got == (expected,), (binary, got)
                got = cur.execute("SELECT row_to_json(p.*) FROM people p WHERE id = %s", (2,)).fetchone()
                assert got == (expected[1],), (binary, got)
        got = conn.execute("SELECT json_agg(s) FROM (SELECT id, upper(name) AS up FROM people WHERE id = 1) s").fetchone()
        assert got == ([{"id": 1, "up": 'ANN, "A"'}],), got
        got = conn.execute("SELECT p::text FROM people p ORDER BY id").fetchall()
        assert got == [('(1,"Ann, ""A""",1990-05-06,9.5)',), ('(2,"",,)',)], got
        got = conn.execute("SELECT ROW(1, 'a b', NULL), pg_typeof(1), pg_typeof('x'::varchar)").fetchone()
        assert got == (("1", "a b", None), "integer", "character varying"), got


def check_arrays_as_python_lists_in_text_and_binary():
    """Python lists as int[] and text[] parameters in each format (psycopg picks the
    array OID from the elements), with NULLs, quoting and empty lists; results loaded
    back as lists from text and binary; `= ANY(%s)` with a list; array OIDs described."""
    with connect(autocommit=True) as conn:
        create_table(conn, "arr (id INT PRIMARY KEY, nums INT[], tags TEXT[])")
        rows = [
            (1, [1, 2, None], ["a", "b c", None, ""]),
            (2, [], []),
            (3, [2**40, -7], ['x"y\\z', "NULL", "{}", "é"]),
        ]
        for (id_, nums, tags), form in zip(rows, ["%s", "%b", "%t"]):
            conn.execute(f"INSERT INTO arr VALUES ({form}, {form}, {form})", (id_, nums, tags))
        for binary in (False, True):
            with conn.cursor(binary=binary) as cur:
                got = cur.execute("SELECT id, nums, tags FROM arr ORDER BY id").fetchall()
                assert got == rows, (binary, got)
                types = [c.type_code for c in cur.description]
                assert types == [20, 1016, 1009], types
                got = cur.execute("SELECT ARRAY[1.5, 2], ARRAY[true, NULL], '{2024-01-02}'::date[]").fetchone()
                assert got == ([Decimal("1.5"), Decimal("2")], [True, None], [__import__("datetime").date(2024, 1, 2)]), (binary, got)
        for form in ("%s", "%b", "%t"):
            got = conn.execute(f"SELECT id FROM arr WHERE id = ANY({form}) ORDER BY id", ([1, 3, 99],)).fetchall()
            assert got == [(1,), (3,)], (form, got)
            got = conn.execute(f"SELECT id FROM arr WHERE tags && {form} ORDER BY id", (["b c", "é"],)).fetchall()
            assert got == [(1,), (3,)], (form, got)
        got = conn.execute("SELECT nums[2], tags[2:3], cardinality(tags) FROM arr WHERE id = 1").fetchone()
        assert got == (2, ["b c", None], 4), got
        conn.execute("UPDATE arr SET nums = nums || %s WHERE id = 2", ([5, 6],))
        assert conn.execute("SELECT nums FROM arr WHERE id = 2").fetchone() == ([5, 6],)
        expect_error(errors.InvalidTextRepresentation, "22P02", lambda: conn.execute("SELECT '{1,2'::int[]"))


def check_char_n_is_blank_padded():
    """CHAR(n) values come back blank-padded in both formats, parameters compare without
    their trailing blanks, a value too long is 22001."""
    with connect(autocommit=True) as conn:
        create_table(conn, "codes (code CHAR(5) PRIMARY KEY, v VARCHAR(5))")
        conn.execute("INSERT INTO codes VALUES (%s, %s), (%b, %b)", ("ab", "ab", "abc  ", "x"))
        for binary in (False, True):
            with conn.cursor(binary=binary) as cur:
                got = cur.execute("SELECT code, v FROM codes ORDER BY code").fetchall()
                assert got == [("ab   ", "ab"), ("abc  ", "x")], (binary, got)
                assert cur.description[0].type_code == 1042, cur.description[0]
        assert conn.execute("SELECT v FROM codes WHERE code = %s", ("abc",)).fetchone() == ("x",)
        assert conn.execute("SELECT v FROM codes WHERE code = %s", ("ab   ",)).fetchone() == ("ab",)
        expect_error(errors.StringDataRightTruncation, "22001", lambda: conn.execute("INSERT INTO codes VALUES (%s, 'x')", ("abcdef",)))


def check_executemany_pipelines_with_row_counts():
    with connect() as conn:
        create_table(conn, "many (k BIGINT PRIMARY KEY, v TEXT, n BIGINT)")
        conn.commit()
        rows = [(k, f"row {k}", k * 10) for k in range(1, 201)]
        with conn.cursor() as cur:
            trips = mystat(conn, "SQL*Net roundtrips to/from client")
            cur.executemany("INSERT INTO many VALUES (%s, %s, %s)", rows)
            assert cur.rowcount == 200, cur.rowcount
            # Pipeline mode: the 200 Bind/Execute pairs went in a few round trips, not 200.
            trips = mystat(conn, "SQL*Net roundtrips to/from client") - trips
            assert trips <= 10, f"{trips} round trips for executemany of 200 rows"
            conn.commit()
            # UPDATE in a batch: each statement's count adds up, one that matches nothing
            # adds 0.
            cur.executemany("UPDATE many SET n = n + 1 WHERE k <= %s", [(10,), (5,), (0,)])
            assert cur.rowcount == 15, cur.rowcount
            # returning=True keeps each statement's results.
            cur.executemany("DELETE FROM many WHERE k = %s", [(199,), (200,), (1000,)], returning=True)
            counts = []
            while True:
                counts.append(cur.rowcount)
                if not cur.nextset():
                    break
            assert counts == [1, 1, 0], counts
            conn.commit()
            assert cur.execute("SELECT count(*), sum(n) FROM many").fetchone() == (198, sum(range(10, 1990, 10)) + 15)
        # Explicit pipeline mode: several statements, results read at the end.
        with conn.pipeline():
            c1 = conn.execute("INSERT INTO many VALUES (%s, %s, %s)", (500, "p", 1))
            c2 = conn.execute("SELECT v FROM many WHERE k = %s", (500,))
            c3 = conn.execute("UPDATE many SET n = 2 WHERE k = %s", (500,))
        assert c1.rowcount == 1 and c3.rowcount == 1
        assert c2.fetchone() == ("p",)
        conn.commit()
        # A failing row in a batch fails the whole batch, in an explicit transaction.
        expect_error(
            errors.UniqueViolation,
            "23505",
            lambda: conn.cursor().executemany("INSERT INTO many VALUES (%s, 'x', 0)", [(900,), (901,), (1,)]),
        )
        conn.rollback()
        assert conn.execute("SELECT count(*) FROM many WHERE k >= 900").fetchone() == (0,)


def check_server_side_cursor_fetches_in_portions():
    with connect() as conn:
        create_table(conn, "big (k BIGINT PRIMARY KEY, v TEXT)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO big VALUES (%s, %s)", [(k, f"v{k}") for k in range(1, 51)])
        conn.commit()

        with conn.cursor("portions") as cur:
            cur.itersize = 7
            cur.execute("SELECT k, v FROM big WHERE k > %s ORDER BY k", (0,))
            assert [d.name for d in cur.description] == ["k", "v"], cur.description
            before = mystat(conn, "fetch calls")
            keys = [k for k, _ in cur]
            after = mystat(conn, "fetch calls")
        assert keys == list(range(1, 51)), keys
        # 50 rows, 7 at a time: 8 FETCH FORWARD 7 (the last returns 1 row), plus the
        # v$mystat query that reads the second value.
        assert after - before == 9, f"fetch calls {before} -> {after}"

        with conn.cursor("manual") as cur:
            cur.execute("SELECT k FROM big ORDER BY k")
            assert len(cur.fetchmany(20)) == 20
            assert cur.fetchone() == (21,)
            cur.scroll(5)
            assert cur.fetchone() == (27,)
            assert len(cur.fetchall()) == 23
            assert cur.fetchone() is None
        conn.commit()

        # WITH HOLD: the cursor outlives its transaction's commit.
        with conn.cursor("held", withhold=True) as cur:
            cur.execute("SELECT k FROM big ORDER BY k")
            conn.commit()
            assert cur.fetchmany(3) == [(1,), (2,), (3,)]
        conn.commit()

    # In autocommit mode a named cursor needs WITH HOLD (as in PostgreSQL).
    with connect(autocommit=True) as conn:
        with conn.cursor("ac", withhold=True) as cur:
            cur.itersize = 16
            cur.execute("SELECT k FROM big ORDER BY k")
            assert sum(1 for _ in cur) == 50
        with conn.cursor("noblock") as cur:
            expect_error(errors.NoActiveSqlTransaction, "25P01", lambda: cur.execute("SELECT k FROM big"))


def check_transactions_commit_rollback_and_autocommit():
    with connect() as conn, connect(autocommit=True) as other:
        create_table(conn, "tx (k BIGINT PRIMARY KEY, v TEXT)")
        conn.commit()
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE

        conn.execute("INSERT INTO tx VALUES (1, 'rolled back')")
        assert conn.info.transaction_status == pq.TransactionStatus.INTRANS
        assert other.execute("SELECT count(*) FROM tx").fetchone() == (0,), "uncommitted rows are not seen"
        conn.rollback()
        assert conn.execute("SELECT count(*) FROM tx").fetchone() == (0,)
        conn.rollback()

        conn.execute("INSERT INTO tx VALUES (1, 'committed')")
        conn.execute("INSERT INTO tx VALUES (2, 'committed')")
        conn.commit()
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE
        assert other.execute("SELECT count(*) FROM tx").fetchone() == (2,)

        # Transaction blocks and savepoint-less nesting through conn.transaction().
        with conn.transaction():
            conn.execute("UPDATE tx SET v = 'in block' WHERE k = 1")
        assert other.execute("SELECT v FROM tx WHERE k = 1").fetchone() == ("in block",)
        try:
            with conn.transaction():
                conn.execute("UPDATE tx SET v = 'undone' WHERE k = 1")
                raise KeyError("leave the block")
        except KeyError:
            pass
        assert other.execute("SELECT v FROM tx WHERE k = 1").fetchone() == ("in block",)
        conn.commit()

        # Isolation: READ COMMITTED (or READ UNCOMMITTED, the same) is what every
        # transaction gets; stronger levels are refused, not silently weakened.
        for level in (psycopg.IsolationLevel.READ_COMMITTED, psycopg.IsolationLevel.READ_UNCOMMITTED):
            conn.isolation_level = level
            conn.execute("SELECT 1")
            assert conn.execute("SHOW transaction_isolation").fetchone() == ("read committed",)
            conn.commit()
        conn.isolation_level = psycopg.IsolationLevel.SERIALIZABLE
        expect_error(errors.FeatureNotSupported, "0A000", lambda: conn.execute("SELECT 1"))
        conn.rollback()
        conn.isolation_level = None
        conn.read_only = True
        assert conn.execute("SELECT count(*) FROM tx").fetchone() == (2,)
        conn.commit()
        conn.read_only = None

        # Autocommit: each statement commits at once.
        conn.autocommit = True
        conn.execute("INSERT INTO tx VALUES (3, 'autocommit')")
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE
        assert other.execute("SELECT v FROM tx WHERE k = 3").fetchone() == ("autocommit",)
        with conn.transaction():
            conn.execute("INSERT INTO tx VALUES (4, 'block in autocommit')")
            assert other.execute("SELECT count(*) FROM tx WHERE k = 4").fetchone() == (0,)
        assert other.execute("SELECT count(*) FROM tx WHERE k = 4").fetchone() == (1,)

        # A row held by an open transaction is waited for; its commit releases it.
        conn.autocommit = False
        conn.execute("UPDATE tx SET v = 'locked' WHERE k = 2")
        done = []
        waiter = threading.Thread(
            target=lambda: done.append(other.execute("UPDATE tx SET v = 'after' WHERE k = 2").rowcount)
        )
        waiter.start()
        time.sleep(0.3)
        assert done == [], "the update waits for the row lock"
        conn.commit()
        waiter.join(10)
        assert done == [1], done
        assert conn.execute("SELECT v FROM tx WHERE k = 2").fetchone() == ("after",)
        conn.commit()


def check_nested_transactions_are_savepoints():
    with connect(autocommit=True) as conn, connect(autocommit=True) as other:
        create_table(conn, "nest (k BIGINT PRIMARY KEY, v TEXT)")
        with conn.transaction():
            conn.execute("INSERT INTO nest VALUES (1, 'outer')")
            # An error inside an inner block rolls back to its savepoint: the outer
            # transaction goes on (psycopg sends ROLLBACK TO in the failed block).
            try:
                with conn.transaction():
                    conn.execute("INSERT INTO nest VALUES (2, 'inner, undone')")
                    conn.execute("INSERT INTO nest VALUES (1, 'duplicate')")
            except errors.UniqueViolation:
                pass
            assert conn.info.transaction_status == pq.TransactionStatus.INTRANS
            with conn.transaction():
                conn.execute("INSERT INTO nest VALUES (3, 'inner, kept')")
                with conn.transaction():
                    conn.execute("INSERT INTO nest VALUES (4, 'innermost, kept')")
            try:
                with conn.transaction():
                    conn.execute("UPDATE nest SET v = 'undone' WHERE k = 1")
                    raise KeyError("leave the inner block")
            except KeyError:
                pass
            assert other.execute("SELECT count(*) FROM nest").fetchone() == (0,), "nothing committed yet"
        rows = other.execute("SELECT k, v FROM nest ORDER BY k").fetchall()
        assert rows == [(1, "outer"), (3, "inner, kept"), (4, "innermost, kept")], rows

    # Without autocommit, conn.transaction() inside the open transaction is a savepoint.
    with connect() as conn:
        conn.execute("INSERT INTO nest VALUES (5, 'five')")
        try:
            with conn.transaction():
                conn.execute("DELETE FROM nest")
                conn.execute("SELECT 1 / 0")
        except errors.DivisionByZero:
            pass
        assert conn.execute("SELECT count(*) FROM nest").fetchone() == (4,)
        conn.commit()


def check_returning_rows_come_with_their_commands_tag():
    with connect(autocommit=True) as conn:
        create_table(conn, "ret (k BIGINT PRIMARY KEY, v TEXT)")
        cur = conn.cursor()
        cur.execute("INSERT INTO ret VALUES (%s, %s) RETURNING k, v", (1, "one"))
        assert cur.fetchall() == [(1, "one")]
        assert (cur.rowcount, cur.statusmessage) == (1, "INSERT 0 1"), (cur.rowcount, cur.statusmessage)
        assert [d.name for d in cur.description] == ["k", "v"]
        # executemany in pipeline mode, each statement's RETURNING a result set of its own.
        cur.executemany(
            "INSERT INTO ret VALUES (%s, %s) RETURNING k * 10 AS ten", [(2, "a"), (3, "b")], returning=True
        )
        results = []
        while True:
            results.append(cur.fetchall())
            if not cur.nextset():
                break
        assert results == [[(20,)], [(30,)]], results
        # Prepared by name after a few runs (psycopg's _pg3_N): still the right rows and tag.
        for k in range(10, 17):
            cur.execute("UPDATE ret SET v = %s WHERE k <= %s RETURNING k", ("x", k))
            assert cur.fetchall() == [(1,), (2,), (3,)]
            assert cur.statusmessage == "UPDATE 3"
        cur.execute("DELETE FROM ret WHERE k >= %s RETURNING *", (2,))
        assert cur.fetchall() == [(2, "x"), (3, "x")]
        assert cur.statusmessage == "DELETE 2"


def check_data_modifying_with_and_pattern_operators_with_bind_values():
    with connect(autocommit=True) as conn:
        create_table(conn, "dmw_src (k BIGINT PRIMARY KEY, v TEXT)")
        create_table(conn, "dmw_dst (k BIGINT PRIMARY KEY, v TEXT)")
        cur = conn.cursor()
        cur.executemany("INSERT INTO dmw_src VALUES (%s, %s)", [(k, f"v{k}") for k in range(1, 11)])
        # Prepared by name (Parse, Describe, Bind, Execute): describing it must not run it.
        cur.execute(
            "WITH moved AS (DELETE FROM dmw_src WHERE k <= %s RETURNING *) INSERT INTO dmw_dst SELECT * FROM moved",
            (3,),
            prepare=True,
        )
        assert (cur.rowcount, cur.statusmessage, cur.description) == (3, "INSERT 0 3", None), cur.statusmessage
        cur.execute("SELECT count(*) FROM dmw_src")
        assert cur.fetchone() == (7,)
        cur.execute(
            "WITH u AS (UPDATE dmw_dst SET v = v || %s RETURNING k) "
            "SELECT count(*) AS n, array_agg(k ORDER BY k) AS ks, (SELECT count(*) FROM dmw_dst WHERE v LIKE %s) AS seen "
            "FROM u",
            ("!", "%!"),
            prepare=True,
        )
        assert cur.fetchall() == [(3, [1, 2, 3], 0)]
        assert [d.name for d in cur.description] == ["n", "ks", "seen"]
        # A list as the array of LIKE ANY; SIMILAR TO with a bound pattern.
        cur.execute("SELECT k FROM dmw_src WHERE v LIKE ANY (%s) ORDER BY k", (["v1%", "v5"],))
        assert cur.fetchall() == [(5,), (10,)]
        cur.execute("SELECT k FROM dmw_src WHERE v ILIKE ALL (%s::text[]) ORDER BY k", (["V%", "%9"],))
        assert cur.fetchall() == [(9,)]
        cur.execute("SELECT k FROM dmw_src WHERE v SIMILAR TO %s ORDER BY k", ("v(4|6)",))
        assert cur.fetchall() == [(4,), (6,)]
        expect_error(
            errors.FeatureNotSupported,
            "0A000",
            lambda: cur.execute("SELECT * FROM (WITH d AS (DELETE FROM dmw_src RETURNING *) SELECT * FROM d) s"),
        )
    # A server-side cursor (DECLARE) may not hold one: PostgreSQL's 0A000, nothing deleted.
    with connect() as conn:
        named = conn.cursor(name="dmw_cursor")
        expect_error(
            errors.FeatureNotSupported,
            "0A000",
            lambda: named.execute("WITH d AS (DELETE FROM dmw_src RETURNING *) SELECT * FROM d"),
        )
        conn.rollback()
        assert conn.execute("SELECT count(*) FROM dmw_src").fetchone() == (7,)
    # A part that waits for a row lock: the statement is undone and runs again once the
    # holder commits, each part once in the end (the INSERT's rows are not doubled).
    with connect() as holder, connect(autocommit=True) as waiter:
        holder.execute("UPDATE dmw_src SET v = 'held' WHERE k = 5")
        result = {}

        def wait():
            cur = waiter.execute(
                "WITH l AS (INSERT INTO dmw_dst SELECT k + 100, v FROM dmw_src WHERE k > %s RETURNING k), "
                "u AS (UPDATE dmw_src SET v = v || '+' WHERE k >= %s RETURNING k) "
                "SELECT (SELECT count(*) FROM u) AS u, (SELECT count(*) FROM l) AS l",
                (8, 5),
                prepare=True,
            )
            result["rows"] = cur.fetchall()

        thread = threading.Thread(target=wait)
        thread.start()
        time.sleep(0.5)
        assert thread.is_alive(), "the statement waits for the row lock"
        holder.commit()
        thread.join(10)
        assert result.get("rows") == [(6, 2)], result
        assert waiter.execute("SELECT v FROM dmw_src WHERE k = 5").fetchone() == ("held+",)
        assert waiter.execute("SELECT count(*) FROM dmw_dst WHERE k > 100").fetchone() == (2,)
    # In a transaction: a failing part undoes the whole statement, ROLLBACK undoes one that ran.
    with connect() as conn:
        cur = conn.cursor()
        expect_error(
            errors.UniqueViolation,
            "23505",
            lambda: cur.execute(
                "WITH d AS (DELETE FROM dmw_src RETURNING *) INSERT INTO dmw_dst SELECT k - %s, v FROM d", (3,)
            ),
        )
        conn.rollback()
        cur.execute("WITH d AS (DELETE FROM dmw_src RETURNING k) SELECT count(*) FROM d")
        assert cur.fetchone() == (7,)
        conn.rollback()
        cur.execute("SELECT count(*) FROM dmw_src")
        assert cur.fetchone() == (7,)


def check_session_functions_options_and_transactional_set():
    with connect(autocommit=True) as conn:
        assert conn.execute("SELECT pg_backend_pid()").fetchone() == (conn.info.backend_pid,)
        version = conn.execute("SELECT version()").fetchone()[0]
        assert version.startswith("PostgreSQL 16.0 (redodb "), version
        assert conn.execute("SELECT current_setting('server_version_num')").fetchone() == ("160000",)
        row = conn.execute("SELECT set_config('application_name', 'by set_config', false)").fetchone()
        assert row == ("by set_config",)
        assert conn.info.parameter_status("application_name") == "by set_config"
        assert conn.execute("SELECT current_setting(%s)", ("application_name",)).fetchone() == ("by set_config",)

        # SET is transactional: a rollback undoes it (and tells the client again).
        conn.autocommit = False
        conn.execute("SET application_name = 'rolled back'")
        conn.execute("SET synchronous_commit = off")
        assert conn.info.parameter_status("application_name") == "rolled back"
        conn.rollback()
        assert conn.info.parameter_status("application_name") == "by set_config"
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
        conn.execute("SET LOCAL synchronous_commit = off")
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("off",)
        conn.commit()
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",), "SET LOCAL ends with its transaction"
        conn.commit()

    # libpq's `options`: SETs as the session starts.
    with connect(autocommit=True, options="-c synchronous_commit=off -c commit_logging=batch") as conn:
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("off",)
        assert conn.execute("SELECT current_setting('commit_logging')").fetchone() == ("BATCH",)
    try:
        connect(options="-c no_such_setting=1")
    except psycopg.OperationalError as e:
        assert 'unrecognized configuration parameter "no_such_setting"' in str(e), e
    else:
        raise AssertionError("a bad startup option must refuse the connection")


def check_errors_and_recovery():
    with connect() as conn:
        create_table(conn, "errs (k BIGINT PRIMARY KEY, v TEXT)")
        conn.execute("INSERT INTO errs VALUES (1, 'one')")
        conn.commit()

        conn.execute("INSERT INTO errs VALUES (2, 'two')")
        e = expect_error(
            errors.UniqueViolation, "23505", lambda: conn.execute("INSERT INTO errs VALUES (%s, %s)", (1, "dup"))
        )
        assert e.diag.severity == "ERROR", e.diag.severity
        assert "duplicate" in e.diag.message_primary, e.diag.message_primary
        assert conn.info.transaction_status == pq.TransactionStatus.INERROR
        e = expect_error(errors.InFailedSqlTransaction, "25P02", lambda: conn.execute("SELECT 1"))
        expect_error(
            errors.InFailedSqlTransaction, "25P02", lambda: conn.execute("SELECT k FROM errs WHERE k = %s", (1,))
        )
        conn.rollback()
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE
        assert conn.execute("SELECT k FROM errs ORDER BY k").fetchall() == [(1,)], "the block was rolled back"
        conn.commit()

        # Other errors, each with its class and SQLSTATE.
        expect_error(errors.UndefinedTable, "42P01", lambda: conn.execute("SELECT * FROM nosuch"))
        conn.rollback()
        e = expect_error(errors.SyntaxError, "42601", lambda: conn.execute("SELECT * FORM errs"))
        assert e.diag.statement_position is not None, "a syntax error has its position"
        conn.rollback()
        expect_error(errors.UndefinedColumn, "42703", lambda: conn.execute("SELECT nosuch FROM errs"))
        conn.rollback()

        # In autocommit mode an error ends only its statement.
        conn.autocommit = True
        expect_error(errors.UniqueViolation, "23505", lambda: conn.execute("INSERT INTO errs VALUES (1, 'x')"))
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE
        conn.execute("INSERT INTO errs VALUES (3, 'after the error')")
        assert conn.execute("SELECT count(*) FROM errs").fetchone() == (2,)
        # A deadlock between two connections: one of them gets 40P01, the other goes on.
        conn.autocommit = False
        with connect() as other:
            conn.execute("UPDATE errs SET v = 'a' WHERE k = 1")
            other.execute("UPDATE errs SET v = 'b' WHERE k = 3")
            failures = []

            def cross():
                try:
                    other.execute("UPDATE errs SET v = 'b' WHERE k = 1")
                except psycopg.Error as e:
                    failures.append(e.sqlstate)

            t = threading.Thread(target=cross)
            t.start()
            time.sleep(0.2)
            try:
                conn.execute("UPDATE errs SET v = 'a' WHERE k = 3")
            except psycopg.Error as e:
                failures.append(e.sqlstate)
            if failures:
                conn.rollback()
            else:
                conn.commit()
            t.join(10)
            assert failures == ["40P01"], failures
            other.rollback()
        conn.rollback()


def check_cancel_of_a_statement_waiting_for_a_row_lock():
    with connect() as holder, connect(autocommit=True) as waiter:
        create_table(holder, "locked (k BIGINT PRIMARY KEY, v BIGINT)")
        holder.execute("INSERT INTO locked VALUES (1, 100)")
        holder.commit()
        holder.execute("UPDATE locked SET v = 200 WHERE k = 1")
        timer = threading.Timer(0.5, waiter.cancel_safe)
        started = time.monotonic()
        timer.start()
        expect_error(
            errors.QueryCanceled, "57014", lambda: waiter.execute("UPDATE locked SET v = 300 WHERE k = %s", (1,))
        )
        waited = time.monotonic() - started
        timer.join()
        assert 0.4 <= waited < 10, f"cancelled after {waited:.2f} s"
        holder.commit()
        assert waiter.execute("SELECT v FROM locked WHERE k = 1").fetchone() == (200,)


def check_synchronous_commit_and_oracle_commit_modes():
    with connect() as conn:
        create_table(conn, "modes (k BIGINT PRIMARY KEY, v TEXT)")
        conn.commit()
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
        conn.execute("SET synchronous_commit = off")
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("off",)
        conn.commit()
        nowait = mystat(conn, "commit nowait requested")
        conn.execute("INSERT INTO modes VALUES (1, 'nowait by synchronous_commit')")
        conn.commit()
        assert mystat(conn, "commit nowait requested") == nowait + 1
        conn.execute("SET synchronous_commit TO on")
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
        conn.commit()

        # COMMIT WRITE NOWAIT ends the transaction psycopg opened.
        nowait = mystat(conn, "commit nowait requested")
        conn.execute("INSERT INTO modes VALUES (2, 'commit write nowait')")
        cur = conn.execute("COMMIT WRITE NOWAIT")
        assert cur.statusmessage == "COMMIT", cur.statusmessage
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE
        assert mystat(conn, "commit nowait requested") == nowait + 1
        conn.rollback()

        # Statements run 5 times are prepared by psycopg as _pg3_N; ALTER SESSION must
        # not make it drop them (its tag is SET), and they keep working after it.
        for k in range(10, 16):
            conn.execute("INSERT INTO modes VALUES (%s, %s)", (k, "prepared"))
        conn.commit()
        prepared = dict(conn._prepared._names)
        assert any(name.startswith(b"_pg3_") for name in prepared.values()), prepared
        cur = conn.execute("ALTER SESSION SET commit_wait = 'NOWAIT'")
        assert cur.statusmessage == "SET", cur.statusmessage
        assert dict(conn._prepared._names) == prepared, "psycopg kept its prepared statements"
        assert conn.execute("SHOW commit_wait").fetchone()[0].upper() == "NOWAIT"
        conn.execute("ALTER SESSION SET commit_logging = BATCH")
        conn.commit()
        nowait = mystat(conn, "commit nowait requested")
        batch = mystat(conn, "commit batch requested")
        for k in range(20, 30):
            conn.execute("INSERT INTO modes VALUES (%s, %s)", (k, "prepared"))
            conn.commit()
        assert dict(conn._prepared._names) == prepared
        assert mystat(conn, "commit nowait requested") == nowait + 10
        assert mystat(conn, "commit batch requested") == batch + 10
        conn.execute("ALTER SESSION SET commit_wait = WAIT")
        conn.execute("ALTER SESSION SET commit_logging = IMMEDIATE")
        wait = mystat(conn, "commit wait requested")
        for k in range(30, 36):
            conn.execute("INSERT INTO modes VALUES (%s, %s)", (k, "prepared"))
            conn.commit()
        assert mystat(conn, "commit wait requested") == wait + 6
        # SHOW PARAMETER through psycopg.
        rows = conn.execute("SHOW PARAMETER commit_wait").fetchall()
        assert any(r[0] == "commit_wait" for r in rows), rows
        conn.rollback()

    # The same in autocommit mode: each statement its own transaction, in the mode set.
    with connect(autocommit=True) as conn:
        conn.execute("ALTER SESSION SET commit_wait = NOWAIT")
        nowait = mystat(conn, "commit nowait requested")
        for k in range(40, 47):
            conn.execute("INSERT INTO modes VALUES (%s, %s)", (k, "autocommit nowait"))
        assert mystat(conn, "commit nowait requested") == nowait + 7
        assert conn.execute("SELECT count(*) FROM modes").fetchone() == (2 + 6 + 10 + 6 + 7,)
        # A prepared statement survives DEALLOCATE-free settings and COMMIT WRITE too.
        conn.execute("BEGIN")
        conn.execute("UPDATE modes SET v = 'x' WHERE k = %s", (40,))
        conn.execute("COMMIT WRITE BATCH NOWAIT")
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE


def check_copy_from_stdin_and_to_stdout():
    with connect() as conn:
        create_table(conn, "cp (k BIGINT PRIMARY KEY, v TEXT, f DOUBLE PRECISION, b BOOLEAN)")
        conn.commit()
        rows = [(k, f"line {k}\twith tab", k / 4, k % 2 == 0) for k in range(1, 1001)]
        rows.append((1001, None, None, None))
        rows.append((1002, "back\\slash\nnewline", -1.5, True))
        with conn.cursor() as cur:
            with cur.copy("COPY cp FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            assert cur.rowcount == len(rows), cur.rowcount
            assert cur.statusmessage == f"COPY {len(rows)}", cur.statusmessage
            conn.commit()
            got = cur.execute("SELECT k, v, f, b FROM cp ORDER BY k").fetchall()
            assert got == rows, [g for g, r in zip(got, rows) if g != r][:3]

            # Raw text with a column list, and csv.
            with cur.copy("COPY cp (k, v) FROM STDIN") as copy:
                copy.write("2001\tabc\n2002\t\\N\n")
            with cur.copy("COPY cp FROM STDIN WITH (FORMAT csv)") as copy:
                copy.write('3001,"a, b",1.25,true\n3002,,,\n')
            conn.commit()
            assert cur.execute("SELECT v FROM cp WHERE k IN (2001, 2002, 3001, 3002) ORDER BY k").fetchall() == [
                ("abc",),
                (None,),
                ("a, b",),
                (None,),
            ]

            # A bad row fails the whole copy; nothing of it stays.
            def bad_copy():
                with cur.copy("COPY cp (k, v) FROM STDIN") as copy:
                    copy.write_row((4001, "fine"))
                    copy.write_row((1, "duplicate"))

            expect_error(errors.UniqueViolation, "23505", bad_copy)
            conn.rollback()
            assert cur.execute("SELECT count(*) FROM cp WHERE k = 4001").fetchone() == (0,)

            # COPY TO STDOUT, read back as rows.
            with cur.copy("COPY (SELECT k, v FROM cp WHERE k >= 1001 AND k <= 1002 ORDER BY k) TO STDOUT") as copy:
                copy.set_types(["int8", "text"])
                out = list(copy.rows())
            assert out == [(1001, None), (1002, "back\\slash\nnewline")], out
        conn.commit()


def check_views_with_where_order_by_and_parameters():
    with connect(autocommit=True) as conn:
        create_table(conn, "vv (k BIGINT PRIMARY KEY)")
        before = sysstat(conn, "user commits")
        mine = mystat(conn, "user commits")
        for k in range(5):
            conn.execute("INSERT INTO vv VALUES (%s)", (k,))
        assert sysstat(conn, "user commits") >= before + 5
        assert mystat(conn, "user commits") == mine + 5
        rows = conn.execute(
            "SELECT name, value FROM v$sysstat WHERE name = 'user commits' ORDER BY name"
        ).fetchall()
        assert len(rows) == 1 and rows[0][0] == "user commits" and rows[0][1] >= before + 5, rows
        rows = conn.execute(
            "SELECT name, value FROM v$sysstat WHERE name LIKE %s ORDER BY name DESC", ("redo%",)
        ).fetchall()
        names = [r[0] for r in rows]
        assert "redo size" in names and names == sorted(names, reverse=True), names
        with conn.cursor(binary=True) as cur:
            cur.execute("SELECT name, value FROM v$sysstat WHERE name = %s", ("user commits",))
            assert cur.fetchone()[1] >= before + 5
        events = conn.execute(
            "SELECT event, total_waits FROM v$system_event WHERE event = %s", ("SQL*Net message from client",)
        ).fetchall()
        assert events and events[0][1] > 0, events
        # Views are read-only.
        expect_error(errors.WrongObjectType, "42809", lambda: conn.execute("DELETE FROM v$sysstat"))


def check_statements_prepared_by_psycopg_survive_deallocate_and_errors():
    with connect(autocommit=True) as conn:
        create_table(conn, "prep (k BIGINT PRIMARY KEY, v TEXT)")
        for k in range(8):
            conn.execute("INSERT INTO prep VALUES (%s, %s)", (k, "v"), prepare=(k > 2) or None)
        assert conn.execute("SELECT count(*) FROM prep").fetchone() == (8,)
        for k in range(8):
            got = conn.execute("SELECT v FROM prep WHERE k = %s", (k,), prepare=True).fetchone()
            assert got == ("v",), got
        # An error on a prepared statement does not lose it.
        expect_error(
            errors.UniqueViolation, "23505", lambda: conn.execute("INSERT INTO prep VALUES (%s, %s)", (1, "v"))
        )
        conn.execute("INSERT INTO prep VALUES (%s, %s)", (100, "v"))
        # DEALLOCATE ALL (which psycopg itself sends after DDL) and DISCARD ALL.
        conn.execute("DEALLOCATE ALL")
        conn.execute("INSERT INTO prep VALUES (%s, %s)", (101, "v"), prepare=True)
        conn.execute("DISCARD ALL")
        conn.execute("INSERT INTO prep VALUES (%s, %s)", (102, "v"), prepare=True)
        assert conn.execute("SELECT count(*) FROM prep").fetchone() == (11,)
        for k in range(7):
            conn.execute("SELECT * FROM prep WHERE k = %s", (k,), prepare=True).fetchone()
        # Another connection creates the table again with other columns: psycopg's
        # prepared statement describes its portal, so it gets the new columns.
        with connect(autocommit=True) as other:
            create_table(other, "prep (k BIGINT PRIMARY KEY, f DOUBLE PRECISION, v TEXT)")
            other.execute("INSERT INTO prep VALUES (1, 0.5, 'new')")
        for _ in range(2):
            assert conn.execute("SELECT * FROM prep WHERE k = %s", (1,), prepare=True).fetchone() == (1, 0.5, "new")
        # DDL drops psycopg's cache; the next statements are prepared anew.
        create_table(conn, "prep2 (k BIGINT PRIMARY KEY)")
        for k in range(7):
            conn.execute("INSERT INTO prep2 VALUES (%s)", (k,))
        conn.execute("DROP TABLE prep2")
        expect_error(errors.UndefinedTable, "42P01", lambda: conn.execute("INSERT INTO prep2 VALUES (%s)", (1,)))


def main():
    global PORT
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("checks", nargs="*", help="names of checks to run (default: all)")
    args = parser.parse_args()
    PORT = args.port
    print(f"psycopg {psycopg.__version__} ({pq.__impl__}, libpq {pq.version()})", flush=True)
    defined = [(n, f) for n, f in globals().items() if n.startswith("check_") and callable(f)]
    checks = defined
    if args.checks:
        checks = [(n, f) for n, f in checks if any(c in n for c in args.checks)]
    failed = 0
    for name, check in checks:
        start = time.monotonic()
        try:
            check()
            print(f"ok     {name} ({time.monotonic() - start:.2f} s)", flush=True)
        except Exception:
            failed += 1
            print(f"FAILED {name}\n{traceback.format_exc()}", flush=True)
    # The last line, read by the test: a run of no checks is a failure, not a pass.
    print(f"{len(checks)} checks run of {len(defined)}: {len(checks) - failed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed or not checks else 0)


if __name__ == "__main__":
    main()
