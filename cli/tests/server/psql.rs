//! `redodb serve` driven by psql: statements, transactions, errors with their SQLSTATE,
//! Oracle's commit statements and parameters, client settings, connection limits, and
//! PostgreSQL's session features (PGOPTIONS, version() and the settings functions,
//! RETURNING, savepoints, transactional SET and SET LOCAL).

use crate::common::{protocol, require_tool, Server};

#[test]
fn psql_runs_statements_transactions_and_oracle_commands() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    assert_eq!(
        server.query("CREATE TABLE t (k BIGINT PRIMARY KEY, v VARCHAR(20), f DOUBLE PRECISION, b BOOLEAN)"),
        "CREATE TABLE\n"
    );
    server.query("INSERT INTO t VALUES (1, 'one', 1.5, true), (2, 'two', NULL, false)");
    assert_eq!(server.query("SELECT k, v, f, b FROM t ORDER BY k"), "1|one|1.5|t\n2|two||f\n");

    // Several statements in one message: psql 15 prints every result.
    assert_eq!(
        server.query("INSERT INTO t VALUES (3, 'three', 0, true); SELECT count(*) FROM t"),
        "INSERT 0 1\n3\n"
    );
    // A failing statement in an implicit transaction undoes the whole message.
    let error = server
        .query_error("INSERT INTO t VALUES (4, 'four', 0, true); INSERT INTO t VALUES (1, 'dup', 0, true)");
    assert!(error.contains("23505"), "{error}");
    assert_eq!(server.query("SELECT count(*) FROM t WHERE k = 4"), "0\n");

    // Transaction blocks across messages of one connection.
    server.commands(&["BEGIN", "INSERT INTO t VALUES (5, 'five', 0, true)", "ROLLBACK"]);
    assert_eq!(server.query("SELECT count(*) FROM t WHERE k = 5"), "0\n");
    server.query("BEGIN; INSERT INTO t VALUES (6, 'six', 0, true); COMMIT WRITE NOWAIT");
    assert_eq!(server.query("SELECT v FROM t WHERE k = 6"), "six\n");

    // A failed block refuses everything but its end; COMMIT then rolls back.
    let out = server.commands_past_errors(&[
        "BEGIN",
        "INSERT INTO t VALUES (7, 'seven', 0, true)",
        "SELECT * FROM missing",
        "SELECT 1",
        "COMMIT",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("42P01"), "{stderr}");
    assert!(stderr.contains("25P02"), "{stderr}");
    assert!(stdout.trim_end().ends_with("ROLLBACK"), "COMMIT of a failed block answers ROLLBACK: {stdout}");
    assert_eq!(server.query("SELECT count(*) FROM t WHERE k = 7"), "0\n");

    // Errors carry the db's SQLSTATE, syntax errors their position.
    let error = server.query_error("SELECT * FROM nosuch");
    assert!(error.contains("42P01") && error.contains("nosuch"), "{error}");
    // A name that does not resolve is placed too, as PostgreSQL places it.
    let error = server.query_error("SELECT k, nosuch FROM t");
    assert!(error.contains("42703") && error.contains("LINE 1: SELECT k, nosuch FROM t"), "{error}");
    let caret = error.lines().find(|l| l.trim() == "^").expect("psql's caret line");
    assert_eq!(caret.find('^'), Some("LINE 1: SELECT k, ".len()), "{error}");
    let error = server.query_error("SELECT * FORM t");
    assert!(error.contains("42601"), "{error}");
    assert!(error.contains("LINE 1: SELECT * FORM t"), "psql shows the position: {error}");
    let error = server.query_error("INSERT INTO t VALUES (1, 'again', 0, true)");
    assert!(error.contains("23505"), "{error}");

    // Oracle's statements reach the db.
    assert!(server.query("SHOW PARAMETER commit_wait").contains("commit_wait|string|WAIT"));
    let out = server.psql(&["-c", "ALTER SESSION SET commit_wait = NOWAIT"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "SET", "psycopg needs the tag SET");
    assert_eq!(server.query("SET synchronous_commit = off; SHOW synchronous_commit"), "SET\noff\n");
    // Client settings the server keeps.
    assert_eq!(
        server.query("SET extra_float_digits = 3; SET application_name TO 'tests'; SHOW application_name"),
        "SET\nSET\ntests\n"
    );
    assert_eq!(server.query("SHOW server_version"), "16.0\n");
    assert_eq!(server.query("SHOW DateStyle"), "ISO, MDY\n");
    let error = server.query_error("SET no_such_setting = 1");
    assert!(error.contains("42704"), "{error}");
    assert_eq!(server.psql(&["-c", ""]).status.code(), Some(0), "an empty query is answered");
    assert_eq!(server.terminate().code(), Some(0));
}

/// psql's way to bind variables: SQL PREPARE and EXECUTE, parsed once, the values given
/// at each run; the statement is the connection's, like a protocol Parse of that name.
#[test]
fn psql_prepares_and_executes_statements_with_values() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE c (id BIGINT PRIMARY KEY, name VARCHAR(20), valid TEXT)");
    let out = server.commands(&[
        "PREPARE ins (bigint, text) AS INSERT INTO c VALUES ($1, $2, 'N')",
        "EXECUTE ins (1, 'ann')",
        "EXECUTE ins ('2', 'bob')",
        "PREPARE upd AS UPDATE c SET valid = 'Y' WHERE id = $1",
        "EXECUTE upd (2)",
        "PREPARE sel AS SELECT name FROM c WHERE valid = $1 ORDER BY id",
        "EXECUTE sel ('Y')",
        "EXECUTE sel ('N')",
        "DEALLOCATE sel",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        ["PREPARE", "INSERT 0 1", "INSERT 0 1", "PREPARE", "UPDATE 1", "PREPARE", "bob", "ann", "DEALLOCATE"],
        "{out}"
    );
    // The EXECUTEs committed (each message is an implicit transaction).
    assert_eq!(server.query("SELECT id, valid FROM c ORDER BY id"), "1|N\n2|Y\n");
    // v$sql: the statement parsed once, executed twice, one row each time.
    assert_eq!(
        server.query(
            "SELECT executions, parse_calls, rows_processed FROM v$sql \
             WHERE sql_text = 'INSERT INTO c VALUES ($1, $2, ''N'')'"
        ),
        "2|1|2\n"
    );
    // EXECUTE's values are no statements of the shared pool (they would fill it as
    // literal SQL does); AWR's `EXECUTE snapshot` is still the db's.
    let pool =
        "SELECT count(*) FROM v$sql WHERE sql_text IN ('SELECT 1, ''ann''', 'SELECT CAST(''0'' AS bigint)')";
    assert_eq!(server.query(pool), "0\n");
    server.query("EXECUTE snapshot");
    let errors = server.commands_past_errors(&[
        "PREPARE q AS SELECT * FROM c WHERE id = $1",
        "EXECUTE q (1, 2)",
        "EXECUTE nosuch",
        "PREPARE q AS SELECT 1",
        "PREPARE s AS SET synchronous_commit = off",
        "PREPARE t (nosuchtype) AS SELECT $1",
        "PREPARE n (bigint) AS SELECT $1 + 1",
        "EXECUTE n (TRUE)",
        "EXECUTE n (1 FROM c)",
        "PREPARE \"\" AS SELECT 1",
        "PREPARE TRANSACTION 'x'",
    ]);
    let stderr = String::from_utf8_lossy(&errors.stderr);
    assert!(stderr.contains("wrong number of parameters for prepared statement \"q\""), "{stderr}");
    assert!(stderr.contains("26000"), "EXECUTE of no statement: {stderr}");
    assert!(stderr.contains("42P05"), "a name taken: {stderr}");
    assert!(stderr.contains("PREPARE takes SELECT, INSERT, UPDATE, DELETE or VALUES"), "{stderr}");
    assert!(stderr.contains("42704: type \"nosuchtype\" does not exist"), "{stderr}");
    assert!(stderr.contains("invalid input for type BIGINT: true"), "a declared type is kept: {stderr}");
    assert!(stderr.contains("unexpected \"FROM\" after the values"), "values, not a query: {stderr}");
    assert!(stderr.contains("syntax error: PREPARE name"), "an empty name: {stderr}");
    assert!(stderr.contains("0A000: PREPARE TRANSACTION (two-phase commit)"), "{stderr}");
    // A syntax error in the prepared statement is placed in the PREPARE's text.
    let error = server.query_error("PREPARE w AS SELECT * FROM c WHERE");
    assert!(
        error.contains("LINE 1: PREPARE w AS SELECT * FROM c WHERE\n") && error.contains("42601"),
        "{error}"
    );
    let caret = error.lines().find(|l| l.trim() == "^").expect("psql's caret line");
    assert_eq!(caret.find('^'), Some("LINE 1: PREPARE w AS SELECT * FROM c WHERE".len()), "{error}");
    // A decimal for a bigint is rounded, as PostgreSQL's assignment of a numeric.
    assert_eq!(
        server.commands(&["PREPARE n (bigint) AS SELECT $1 + 1", "EXECUTE n (41.0)", "EXECUTE n (41.5)"]),
        "PREPARE\n42\n43\n"
    );
    // A statement in parentheses, or after a comment, is a statement still.
    assert_eq!(
        server.commands(&[
            "PREPARE p AS (SELECT name FROM c WHERE id = $1)",
            "EXECUTE p (1)",
            "PREPARE q AS /* how many */ SELECT count(*) FROM c",
            "EXECUTE q",
            "PREPARE r AS /* comments /* nest */ in PostgreSQL */ SELECT 3",
            "EXECUTE r",
        ]),
        "PREPARE\nann\nPREPARE\n2\nPREPARE\n3\n"
    );
}

/// EXPLAIN through psql, in PostgreSQL's layout; EXPLAIN ANALYZE runs its statement, so
/// an UPDATE explained that way changes its rows, committed with its message's implicit
/// transaction, as in PostgreSQL.
#[test]
fn psql_explains_plans_and_explain_analyze_runs_the_statement() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE e (id BIGINT PRIMARY KEY, n BIGINT)");
    server.query("INSERT INTO e VALUES (1, 10), (2, 20), (3, 30)");
    assert_eq!(
        server.query("EXPLAIN SELECT n FROM e WHERE id = 2"),
        "Index Scan using e_pkey on e  (1 key)\n  Filter: id = 2\n"
    );
    assert_eq!(
        server.query("EXPLAIN SELECT n, count(*) FROM e GROUP BY n ORDER BY n DESC LIMIT 1"),
        "Limit\n  ->  Sort\n        Sort Key: n DESC\n        ->  GroupAggregate\n              Group Key: n\n              ->  Seq Scan on e\n"
    );
    assert_eq!(
        server.query("EXPLAIN (ANALYZE, SUMMARY OFF) UPDATE e SET n = n + 1 WHERE n > 15"),
        "Update on e  (actual rows=0 loops=1)\n  ->  Seq Scan on e  (actual rows=2 loops=1)\n        Filter: n > 15\n"
    );
    assert_eq!(server.query("SELECT n FROM e ORDER BY id"), "10\n21\n31\n", "the UPDATE ran and committed");
    let analyzed = server.query("EXPLAIN ANALYZE SELECT * FROM e WHERE n < 25");
    assert!(analyzed.starts_with("Seq Scan on e  (actual rows=2 loops=1)\n"), "{analyzed}");
    assert!(
        analyzed.contains("Rows Removed by Filter: 1\n") && analyzed.contains("Execution Time: "),
        "{analyzed}"
    );
    let error = server.query_error("EXPLAIN (FORMAT YAML) SELECT 1");
    assert!(error.contains("0A000"), "{error}");
}

#[test]
fn connections_over_the_limit_are_refused_with_53300() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-connections", "1"]);
    // Hold the only slot with a session that has started up.
    let mut held = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    protocol::startup(&mut held);
    let error = server.query_error("SELECT 1");
    assert!(error.contains("53300") || error.contains("too many clients"), "{error}");
    drop(held);
    // The slot comes back once the connection is gone.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let out = server.psql(&["-At", "-c", "SELECT 1"]);
        if out.status.success() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{}", String::from_utf8_lossy(&out.stderr));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The wait interface through a real client: the session's client shows in v$session,
/// and the round trips, bytes and the idle wait between calls are counted.
#[test]
fn client_round_trips_and_waits_show_in_the_views() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let stdout = server.commands(&[
        "SELECT 1",
        "SELECT 2",
        "SELECT username, program, status FROM v$session WHERE program = 'psql'",
        "SELECT value FROM v$sysstat WHERE name = 'SQL*Net roundtrips to/from client'",
        "SELECT wait_class, total_waits FROM v$system_event WHERE event = 'SQL*Net message from client'",
        "SELECT value > 0 FROM v$sysstat WHERE name = 'bytes received via SQL*Net from client'",
    ]);
    let lines: Vec<String> = stdout.lines().map(str::to_string).collect();
    assert_eq!(lines[..2], ["1", "2"]);
    let user = std::env::var("USER").unwrap_or_default();
    assert!(
        lines[2].ends_with("|psql|ACTIVE"),
        "the session reading v$session is in a call: {lines:?} ({user})"
    );
    // Three replies were sent before the fourth statement ran.
    let roundtrips: i64 = lines[3].parse().unwrap();
    assert!(roundtrips >= 3, "{lines:?}");
    let (class, waits) = lines[4].split_once('|').unwrap();
    assert_eq!(class, "Idle");
    assert!(waits.parse::<i64>().unwrap() >= 4, "{lines:?}");
    assert_eq!(lines[5], "t");
}

/// psql's `\d` family, its queries run by the database's pg_catalog: tables, indexes,
/// sequences, views, foreign keys both ways, CHECKs, defaults and identities.
#[test]
fn psql_describes_tables_from_the_catalog() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let out = server.psql(&["-c", "\\d"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Did not find any relations"), "{out:?}");
    server.query("CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner VARCHAR(30) NOT NULL, balance DOUBLE PRECISION, active BOOLEAN)");
    server.query("CREATE TABLE audit (seq BIGINT, at TEXT DEFAULT 'now', PRIMARY KEY (seq, at))");
    server.query("CREATE INDEX accounts_owner ON accounts (owner, balance)");
    server.query("CREATE UNIQUE INDEX accounts_active ON accounts (active)");

    let list = server.query("\\dt");
    assert_eq!(list, "public|accounts|table|test\npublic|audit|table|test\n");
    assert_eq!(server.query("\\d"), list);
    assert_eq!(server.query("\\dt acc*"), "public|accounts|table|test\n");
    assert_eq!(server.query("\\dt nothing*"), "");
    // No size per relation is kept: the Size column is empty.
    assert!(server.query("\\dt+").starts_with("public|accounts|table|test|permanent|heap||"));
    assert_eq!(
        server.query("\\di"),
        "public|accounts_active|index|test|accounts\npublic|accounts_owner|index|test|accounts\n\
         public|accounts_pkey|index|test|accounts\npublic|audit_pkey|index|test|audit\n"
    );

    // \d NAME in psql's own layout.
    let out = server.psql(&["-c", "\\d accounts"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    for expected in [
        "Table \"public.accounts\"",
        "id      | bigint                | ",
        "owner   | character varying(30) | ",
        "balance | double precision      |",
        "active  | boolean               |",
        "not null",
        "Indexes:",
        "\"accounts_pkey\" PRIMARY KEY, btree (id)",
        "\"accounts_active\" UNIQUE, btree (active)",
        "\"accounts_owner\" btree (owner, balance)",
    ] {
        assert!(text.contains(expected), "{expected:?} in\n{text}");
    }
    let out = server.psql(&["-c", "\\d+ audit"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"audit_pkey\" PRIMARY KEY, btree (seq, at)"), "{text}");
    assert!(text.contains("Access method: heap"), "{text}");
    // The default as PostgreSQL 15 deparses it: the literal cast to the column's type.
    assert!(text.contains(" at     | text   |           | not null | 'now'::text | extended |"), "{text}");
    let out = server.psql(&["-c", "\\d nosuch"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Did not find any relation named \"nosuch\""),
        "{out:?}"
    );

    // Foreign keys (from the child and to the parent), CHECKs, UNIQUE constraints,
    // SERIAL and IDENTITY columns, views and sequences, as PostgreSQL 15's psql shows them.
    server.query(
        "CREATE TABLE entries (id BIGSERIAL PRIMARY KEY, account BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE, \
         amount NUMERIC(10,2) CHECK (amount <> 0), code VARCHAR(8) UNIQUE)",
    );
    server.query("CREATE TABLE events (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, tag CHAR(3))");
    server.query("CREATE VIEW rich AS SELECT id, balance FROM accounts WHERE balance > 100");
    server.query("CREATE SEQUENCE tickets START 100");
    let text = String::from_utf8_lossy(&server.psql(&["-c", "\\d entries"]).stdout).into_owned();
    for expected in [
        " id      | bigint               |           | not null | nextval('entries_id_seq'::regclass)",
        "\"entries_code_key\" UNIQUE CONSTRAINT, btree (code)",
        "Check constraints:\n    \"entries_amount_check\" CHECK (amount <> 0)",
        "Foreign-key constraints:\n    \"entries_account_fkey\" FOREIGN KEY (account) REFERENCES accounts(id) ON DELETE CASCADE",
    ] {
        assert!(text.contains(expected), "{expected:?} in\n{text}");
    }
    let text = String::from_utf8_lossy(&server.psql(&["-c", "\\d accounts"]).stdout).into_owned();
    assert!(
        text.contains("Referenced by:\n    TABLE \"entries\" CONSTRAINT \"entries_account_fkey\" FOREIGN KEY (account) REFERENCES accounts(id) ON DELETE CASCADE"),
        "{text}"
    );
    let text = String::from_utf8_lossy(&server.psql(&["-c", "\\d events"]).stdout).into_owned();
    assert!(
        text.contains(" id     | bigint       |           | not null | generated always as identity"),
        "{text}"
    );
    let text = String::from_utf8_lossy(&server.psql(&["-c", "\\d rich"]).stdout).into_owned();
    assert!(
        text.contains("View \"public.rich\"") && text.contains(" balance | double precision |"),
        "{text}"
    );
    let text = String::from_utf8_lossy(&server.psql(&["-c", "\\d entries_id_seq"]).stdout).into_owned();
    assert!(
        text.contains("Sequence \"public.entries_id_seq\"") && text.contains("Owned by: public.entries.id"),
        "{text}"
    );
    assert_eq!(
        server.query("\\ds"),
        "public|entries_id_seq|sequence|test\npublic|events_id_seq|sequence|test\npublic|tickets|sequence|test\n"
    );
    assert_eq!(server.query("\\dv"), "public|rich|view|test\n");

    // The rest of psql's listing commands a DBA reaches for run through the SQL layer
    // (roles, databases with their size, extensions, functions with their languages,
    // tablespaces, types, event triggers, foreign servers, per-role settings, the
    // non-default settings) and list what exists.
    for command in [
        "\\l+",
        "\\dx",
        "\\df+",
        "\\db",
        "\\dT+",
        "\\dL",
        "\\dy",
        "\\des",
        "\\dew",
        "\\drds",
        "\\dconfig",
        "\\du+",
        "\\dv+",
        "\\ds+",
    ] {
        let out = server.psql(&["-c", command]);
        assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        // (psql says "Did not find any settings." for an empty \drds, as with PostgreSQL.)
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("ERROR"), "{command}: {stderr}");
    }
    assert_eq!(server.query("\\db"), "pg_default|test|\npg_global|test|\n");
    assert_eq!(server.query("\\dx"), "");
    let size_listed = server.query("\\l+");
    assert!(size_listed.starts_with("redodb|test|UTF8|C|C||libc||"), "{size_listed}");
    assert!(
        size_listed.contains(" MB|pg_default|") || size_listed.contains(" kB|pg_default|"),
        "{size_listed}"
    );
    // Roles with what they are members of: an array built from a subquery.
    assert_eq!(server.query("\\du"), "test|Superuser, Create role, Create DB, Bypass RLS|{}\n");
    assert!(server.query("\\l").starts_with("redodb|test|UTF8|C|C|"), "{}", server.query("\\l"));
    // PostgreSQL 15's public belongs to pg_database_owner.
    assert_eq!(server.query("\\dn"), "public|pg_database_owner\n");

    // The catalog is plain SQL for any client.
    assert_eq!(server.query("SELECT typname FROM pg_catalog.pg_type WHERE oid = 20"), "int8\n");
    assert_eq!(
        server.query(
            "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1"
        ),
        "accounts|BASE TABLE\naudit|BASE TABLE\nentries|BASE TABLE\nevents|BASE TABLE\nrich|VIEW\n"
    );
    assert_eq!(
        server.query("SELECT 'entries'::regclass, 'accounts'::regclass::oid = 'public.accounts'::regclass"),
        "entries|t\n"
    );
    let error = server.query_error("SELECT 'nosuch'::regclass");
    assert!(error.contains("42P01"), "{error}");
    assert_eq!(server.query("SELECT count(*) FROM accounts"), "0\n", "the session goes on");
}

/// The exact and structured types through psql: `\d` names them as PostgreSQL does,
/// values print in PostgreSQL's text forms, errors carry PostgreSQL's SQLSTATEs.
#[test]
fn psql_describes_and_prints_the_exact_types() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query(
        "CREATE TABLE prices (id BIGINT PRIMARY KEY, amount NUMERIC(10,2) NOT NULL, rate DECIMAL, qty NUMBER(6), \
         ora NUMBER(12,3))",
    );
    let out = server.psql(&["-c", "\\d prices"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    for expected in [
        "amount | numeric(10,2) |           | not null |",
        "rate   | numeric       |",
        "qty    | numeric(6,0)  |",
        "ora    | numeric(12,3) |",
    ] {
        assert!(text.contains(expected), "{expected:?} in\n{text}");
    }
    server.query(
        "INSERT INTO prices VALUES (1, 12.345, 1.50, 7.5, -0.0005), (2, 0.1, 1e-20, NULL, 123456789.1234)",
    );
    assert_eq!(
        server.query("SELECT id, amount, rate, qty, ora, amount / 3 FROM prices ORDER BY id"),
        "1|12.35|1.50|8|-0.001|4.1166666666666667\n\
         2|0.10|0.00000000000000000001||123456789.123|0.03333333333333333333\n"
    );
    let error = server.query_error("INSERT INTO prices (id, amount) VALUES (3, 123456789)");
    assert!(error.contains("22003") && error.contains("numeric field overflow"), "{error}");
    let error = server.query_error("SELECT 'twelve'::numeric");
    assert!(error.contains("22P02"), "{error}");
    let error = server.query_error("SELECT amount / 0 FROM prices");
    assert!(error.contains("22012"), "{error}");

    server.query("CREATE TABLE files (id UUID PRIMARY KEY DEFAULT gen_random_uuid(), data BYTEA NOT NULL)");
    let text = String::from_utf8_lossy(&server.psql(&["-c", "\\d files"]).stdout).into_owned();
    for expected in [
        "id     | uuid  |           | not null | gen_random_uuid()",
        "data   | bytea |           | not null |",
    ] {
        assert!(text.contains(expected), "{expected:?} in\n{text}");
    }
    server.query(r"INSERT INTO files VALUES ('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '\x0102ff')");
    server.query("INSERT INTO files (data) VALUES ('abc')");
    assert_eq!(
        server.query("SELECT id, data FROM files WHERE data = 'abc' OR id = 'a0eebc999c0b4ef8bb6d6bb9bd380a11' ORDER BY data"),
        format!("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|\\x0102ff\n{}|\\x616263\n", server.query("SELECT id FROM files WHERE data = 'abc'").trim())
    );
    let error = server.query_error("SELECT 'nope'::uuid");
    assert!(error.contains("22P02"), "{error}");

    server.query("CREATE TABLE docs (id BIGINT PRIMARY KEY, raw JSON, doc JSONB)");
    let text = String::from_utf8_lossy(&server.psql(&["-c", "\\d docs"]).stdout).into_owned();
    for expected in ["raw    | json   |", "doc    | jsonb  |"] {
        assert!(text.contains(expected), "{expected:?} in\n{text}");
    }
    server.query(r#"INSERT INTO docs VALUES (1, '{"b":1,  "a":[1,2]}', '{"b":1,  "a":[1,2]}')"#);
    assert_eq!(
        server.query("SELECT raw, doc, doc -> 'a' -> 1, raw ->> 'b' FROM docs"),
        "{\"b\":1,  \"a\":[1,2]}|{\"a\": [1, 2], \"b\": 1}|2|1\n"
    );
    let error = server.query_error("SELECT '{\"a\":}'::jsonb");
    assert!(error.contains("22P02") && error.contains("invalid input syntax for type jsonb"), "{error}");

    server.query("CREATE TABLE codes (code CHAR(5) PRIMARY KEY, flag CHARACTER, v VARCHAR(5))");
    let text = String::from_utf8_lossy(&server.psql(&["-c", "\\d codes"]).stdout).into_owned();
    for expected in [
        "code   | character(5)         |           | not null |",
        "flag   | character(1)         |",
        "v      | character varying(5) |",
    ] {
        assert!(text.contains(expected), "{expected:?} in\n{text}");
    }
    server.query("INSERT INTO codes VALUES ('ab', 'y', 'ab'), ('abc  ', NULL, 'x')");
    assert_eq!(
        server.query("SELECT code, flag, v, code || '|' FROM codes WHERE code = 'ab   '"),
        "ab   |y|ab|ab|\n"
    );
    assert_eq!(server.commands(&["COPY codes TO STDOUT (FORMAT csv)"]), "ab   ,y,ab\nabc  ,,x\n");
    let error = server.query_error("INSERT INTO codes VALUES ('abcdef', 'y', NULL)");
    assert!(error.contains("22001"), "{error}");
}

/// REAL (float4) through psql: `\d` names it, values print as PostgreSQL 15's float4out
/// (expected texts from psql against PostgreSQL 15), its arithmetic is single precision
/// and with a double is a double's.
#[test]
fn psql_describes_and_prints_reals_as_postgresql_does() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query(
        "CREATE TABLE readings (id BIGINT PRIMARY KEY, r REAL NOT NULL, f4 FLOAT4, f10 FLOAT(10), rs REAL[])",
    );
    let text = String::from_utf8_lossy(&server.psql(&["-c", "\\d readings"]).stdout).into_owned();
    for expected in [
        " r      | real   |           | not null |",
        " f4     | real   |           |          |",
        " f10    | real   |           |          |",
        " rs     | real[] |           |          |",
    ] {
        assert!(text.contains(expected), "{expected:?} in\n{text}");
    }
    server.query(
        "INSERT INTO readings VALUES (1, 0.1, 1234567, 0.00001, '{0.1,1e10,NaN}'), \
         (2, 16777217, '-Infinity', -0.0, NULL)",
    );
    assert_eq!(
        server.query(
            "SELECT id, r, f4, f10, rs, r * 3::real, r + 0.2::float8, pg_typeof(r + r), pg_typeof(r * 2) \
             FROM readings ORDER BY id"
        ),
        "1|0.1|1.234567e+06|1e-05|{0.1,1e+10,NaN}|0.3|0.30000000149011613|real|double precision\n\
         2|1.6777216e+07|-Infinity|0||5.0331648e+07|16777216.2|real|double precision\n"
    );
    assert_eq!(
        server.query("SELECT sum(r), avg(r), min(r), max(f4) FROM readings"),
        "1.6777216e+07|8388608.05|0.1|1.234567e+06\n"
    );
    let error = server.query_error("SELECT 1e39::float8::real");
    assert!(error.contains("22003") && error.contains("value out of range: overflow"), "{error}");
}

/// DECLARE/FETCH/MOVE/CLOSE from psql, rows in portions, and the cursor errors.
#[test]
fn psql_fetches_from_cursors_in_portions() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE c (k BIGINT PRIMARY KEY, v TEXT)");
    server.query("INSERT INTO c VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e'), (6, 'f')");
    let stdout = server.commands(&[
        "BEGIN",
        "DECLARE cur NO SCROLL CURSOR FOR SELECT k, v FROM c ORDER BY k",
        "FETCH 2 FROM cur",
        "FETCH FORWARD 2 IN cur",
        "MOVE 1 cur",
        "FETCH ALL FROM cur",
        "FETCH NEXT FROM cur",
        "CLOSE cur",
        "COMMIT",
    ]);
    assert_eq!(stdout, "BEGIN\nDECLARE CURSOR\n1|a\n2|b\n3|c\n4|d\nMOVE 1\n6|f\nCLOSE CURSOR\nCOMMIT\n");
    // psql prints the FETCH tag when not in -A -t mode.
    let out =
        server.psql(&["-c", "BEGIN; DECLARE x CURSOR FOR SELECT k FROM c; FETCH 2 x; FETCH 10 x; COMMIT"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(2 rows)") && text.contains("(4 rows)"), "{text}");

    // Outside a transaction block: only WITH HOLD, which outlives its transaction.
    let error = server.query_error("DECLARE x CURSOR FOR SELECT 1");
    assert!(error.contains("25P01") && error.contains("transaction blocks"), "{error}");
    let stdout = server.commands(&[
        "DECLARE h CURSOR WITH HOLD FOR SELECT k FROM c ORDER BY k",
        "FETCH 3 h",
        "FETCH 3 h",
        "CLOSE h",
    ]);
    assert_eq!(stdout, "DECLARE CURSOR\n1\n2\n3\n4\n5\n6\nCLOSE CURSOR\n");
    // A cursor closes with its transaction.
    let out =
        server.commands_past_errors(&["BEGIN", "DECLARE gone CURSOR FOR SELECT 1", "COMMIT", "FETCH gone"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("34000") && stderr.contains("cursor \"gone\" does not exist"), "{stderr}");
    let error = server.query_error("CLOSE nosuch");
    assert!(error.contains("34000"), "{error}");
    let error = server.query_error("BEGIN; DECLARE b CURSOR FOR SELECT 1; FETCH BACKWARD 1 b");
    assert!(error.contains("55000"), "{error}");
    let error = server.query_error("BEGIN; DECLARE s SCROLL CURSOR FOR SELECT 1");
    assert!(error.contains("0A000"), "{error}");

    // pg_cursors lists the session's open cursors, as any catalog relation: declared,
    // closed, undone by ROLLBACK TO, closed with their transaction unless WITH HOLD.
    let stdout = server.commands(&[
        "BEGIN",
        "DECLARE a CURSOR FOR SELECT k FROM c",
        "DECLARE \"B b\" BINARY CURSOR WITH HOLD FOR SELECT 1",
        "SELECT name, statement, is_holdable, is_binary, is_scrollable, creation_time <= now() FROM pg_cursors ORDER BY name",
        "SAVEPOINT s",
        "DECLARE later CURSOR FOR SELECT 2",
        "SELECT string_agg(name, ',' ORDER BY name) FROM pg_catalog.pg_cursors",
        "ROLLBACK TO SAVEPOINT s",
        "SELECT string_agg(name, ',' ORDER BY name) FROM pg_catalog.pg_cursors",
        "CLOSE a",
        "SELECT count(*) FROM pg_cursors WHERE name = 'a'",
        "COMMIT",
        "SELECT name, is_holdable FROM pg_cursors",
        "CLOSE ALL",
        "SELECT count(*) FROM pg_cursors",
    ]);
    assert_eq!(
        stdout,
        "BEGIN\nDECLARE CURSOR\nDECLARE CURSOR\n\
         B b|DECLARE \"B b\" BINARY CURSOR WITH HOLD FOR SELECT 1|t|t|f|t\n\
         a|DECLARE a CURSOR FOR SELECT k FROM c|f|f|f|t\n\
         SAVEPOINT\nDECLARE CURSOR\nB b,a,later\nROLLBACK\nB b,a\nCLOSE CURSOR\n0\nCOMMIT\n\
         B b|t\nCLOSE CURSOR ALL\n0\n"
    );
    assert_eq!(server.terminate().code(), Some(0));
}

/// What clients and tools ask of a PostgreSQL session besides plain SQL, through psql:
/// startup options (PGOPTIONS), version() and the settings functions, RETURNING,
/// savepoints, and SET undone by ROLLBACK (SET LOCAL ending with its transaction).
#[test]
fn psql_gets_startup_options_settings_functions_returning_savepoints_and_transactional_set() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    // PGOPTIONS: each `-c name=value` (or `--name=value`) is a SET as the session starts.
    let options = [("PGOPTIONS", "-c commit_wait=nowait --timed-statistics=false -c DateStyle=ISO,\\ DMY")];
    let out = server.psql_with_env(
        &options,
        &["-At", "-c", "SHOW commit_wait", "-c", "SHOW timed_statistics", "-c", "SHOW DateStyle"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "NOWAIT\nFALSE\nISO, DMY\n");
    let out = server.psql_with_env(
        &[("PGOPTIONS", "-c synchronous_commit=off")],
        &["-At", "-c", "SHOW synchronous_commit"],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "off\n");
    // A bad one refuses the connection with PostgreSQL's message.
    for (options, message) in [
        ("-c no_such_setting=1", "unrecognized configuration parameter \"no_such_setting\""),
        ("-c commit_wait=sometimes", "invalid value for parameter \"commit_wait\""),
        ("-B 100", "invalid command-line argument"),
    ] {
        let out = server.psql_with_env(&[("PGOPTIONS", options)], &["-At", "-c", "SELECT 1"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(message), "{options}: {stderr}");
    }

    // version(), current_setting(), set_config(), pg_backend_pid().
    let version = server.query("SELECT version()");
    assert!(version.starts_with("PostgreSQL 16.0 (redodb "), "{version}");
    let stdout = server.commands(&[
        "SELECT pg_catalog.set_config('application_name', 'set by function', false)",
        "SHOW application_name",
        "SELECT current_setting('application_name'), current_setting('server_version_num')::int >= 160000",
        "SELECT set_config('synchronous_commit', 'off', false) AS now",
        "SELECT current_setting('commit_wait'), current_setting('nonexistent', true) IS NULL",
        "SELECT pg_backend_pid() = sid FROM v$mystat WHERE name = 'user commits'",
    ]);
    assert_eq!(stdout, "set by function\nset by function\nset by function|t\noff\nNOWAIT|t\nt\n");
    let error = server.query_error("SELECT current_setting('nonexistent')");
    assert!(error.contains("42704"), "{error}");

    // RETURNING, with the command's own tag.
    server.query("CREATE TABLE r (k BIGINT PRIMARY KEY, v TEXT)");
    let out =
        server.psql(&["-A", "-c", "INSERT INTO r VALUES (1, 'a'), (2, 'b') RETURNING k, upper(v) AS big"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "k|big\n1|A\n2|B\n(2 rows)\nINSERT 0 2\n");
    assert_eq!(server.query("UPDATE r SET v = v || '!' WHERE k = 2 RETURNING *"), "2|b!\nUPDATE 1\n");
    assert_eq!(server.query("DELETE FROM r WHERE k = 1 RETURNING v"), "a\nDELETE 1\n");

    // Savepoints: ROLLBACK TO undoes what followed, also after an error in the block.
    let out = server.commands_past_errors(&[
        "BEGIN",
        "INSERT INTO r VALUES (3, 'kept')",
        "SAVEPOINT s1",
        "INSERT INTO r VALUES (4, 'undone')",
        "INSERT INTO r VALUES (3, 'duplicate')",
        "SELECT 1",
        "ROLLBACK TO SAVEPOINT s1",
        "INSERT INTO r VALUES (5, 'after')",
        "RELEASE s1",
        "COMMIT",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("23505") && stderr.contains("25P02"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).trim_end().ends_with("COMMIT"), "{out:?}");
    assert_eq!(server.query("SELECT k FROM r ORDER BY k"), "2\n3\n5\n");
    let error = server.query_error("SAVEPOINT outside");
    assert!(error.contains("25P01"), "{error}");
    let out = server.commands_past_errors(&["BEGIN", "ROLLBACK TO nowhere", "ROLLBACK"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("3B001"), "{out:?}");

    // SET is transactional: ROLLBACK undoes it, SET LOCAL ends with its transaction,
    // and ROLLBACK TO undoes the SETs after the savepoint.
    let stdout = server.commands(&[
        "SET application_name = 'before'",
        "BEGIN",
        "SET application_name = 'inside'",
        "SET LOCAL synchronous_commit = off",
        "SHOW synchronous_commit",
        "ROLLBACK",
        "SHOW application_name",
        "SHOW synchronous_commit",
        "BEGIN",
        "SET commit_logging = batch",
        "SET LOCAL extra_float_digits = 2",
        "SAVEPOINT s",
        "SET commit_logging = immediate",
        "SET application_name = 'undone'",
        "ROLLBACK TO s",
        "COMMIT",
        "SELECT current_setting('commit_logging'), current_setting('extra_float_digits'), current_setting('application_name')",
    ]);
    assert_eq!(stdout, "SET\nBEGIN\nSET\nSET\noff\nROLLBACK\nbefore\non\nBEGIN\nSET\nSET\nSAVEPOINT\nSET\nSET\nROLLBACK\nCOMMIT\nBATCH|1|before\n");
    // Outside a block SET LOCAL warns and lasts only for its statement.
    let out = server.commands_past_errors(&["SET LOCAL commit_wait = nowait", "SHOW commit_wait"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("SET LOCAL can only be used in transaction blocks"));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "SET\nWAIT\n");
    assert_eq!(server.terminate().code(), Some(0));
}

/// The transaction words clients send (START TRANSACTION, END, BEGIN ... ROLLBACK) and
/// ALTER SYSTEM through psql: the system default reaches a new session, and SHOW PARAMETER
/// reports it.
#[test]
fn transaction_words_and_alter_system_through_psql() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE words (k BIGINT PRIMARY KEY)");
    server.commands(&[
        "START TRANSACTION",
        "INSERT INTO words VALUES (1)",
        "END",
        "BEGIN",
        "INSERT INTO words VALUES (2)",
        "ROLLBACK",
        "START TRANSACTION ISOLATION LEVEL READ COMMITTED",
        "INSERT INTO words VALUES (3)",
        "COMMIT",
    ]);
    assert_eq!(server.query("SELECT k FROM words ORDER BY k"), "1\n3\n");

    server.query("ALTER SYSTEM SET commit_wait = nowait");
    assert!(server.query("SHOW PARAMETER commit_wait").contains("commit_wait|string|NOWAIT"));
    let nowait_before: u64 = server
        .query("SELECT value FROM v$sysstat WHERE name = 'commit nowait performed'")
        .trim()
        .parse()
        .unwrap();
    server.query("INSERT INTO words VALUES (4)");
    let nowait_after: u64 = server
        .query("SELECT value FROM v$sysstat WHERE name = 'commit nowait performed'")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(nowait_after - nowait_before, 1, "a new session commits NOWAIT by the system default");
    server.query("ALTER SYSTEM SET commit_wait = wait");
    assert!(server.query("SHOW PARAMETER commit_wait").contains("commit_wait|string|WAIT"));
    assert_eq!(server.terminate().code(), Some(0));
}

#[test]
fn psql_gets_function_results_with_their_types_and_postgresql_s_errors() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    // The values as PostgreSQL 15 prints them.
    assert_eq!(
        server.query(
            "SELECT to_char(1234.5, 'FM9,999.00'), to_char(DATE '2024-03-05', 'DD Mon YYYY'), \
             initcap('hello world'), split_part('a,b,c', ',', 2), strpos('abc', 'c'), \
             to_date('05/03/2024', 'DD/MM/YYYY'), nvl2(NULL, 'x', 'y')"
        ),
        "1,234.50|05 Mar 2024|Hello World|b|3|2024-03-05|y\n"
    );
    // RowDescription carries each result's type (the OIDs a driver maps to its types).
    let mut stream = server.connect();
    let replies = protocol::query(
        &mut stream,
        "SELECT to_char(now(), 'YYYY'), strpos('a', 'a'), to_date('2024', 'YYYY'), to_timestamp(0), sign(2.5)",
    );
    let (_, description) = replies.iter().find(|(kind, _)| *kind == b'T').expect("a RowDescription");
    let mut oids = Vec::new();
    let mut at = 2;
    for _ in 0..i16::from_be_bytes([description[0], description[1]]) {
        // name, table OID (4), column number (2), type OID (4), size (2), modifier (4), format (2)
        at += description[at..].iter().position(|&b| b == 0).unwrap() + 1 + 6;
        oids.push(u32::from_be_bytes(description[at..at + 4].try_into().unwrap()));
        at += 12;
    }
    assert_eq!(
        oids,
        [25, 20, 1082, 1184, 1700],
        "text, bigint, date, timestamptz, numeric (2.5 is a NUMERIC literal)"
    );
    // A wrong argument type is PostgreSQL's 42883, a runaway repeat its 54000.
    let error = server.query_error("SELECT lower(1)");
    assert!(error.contains("42883") && error.contains("function lower(bigint) does not exist"), "{error}");
    let error = server.query_error("SELECT repeat('x', 2000000000)");
    assert!(error.contains("54000"), "{error}");
}

#[test]
fn psql_prints_arrays_in_postgresqls_text_form() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE posts (id BIGINT PRIMARY KEY, tags TEXT[], scores INT[])");
    let text = String::from_utf8_lossy(&server.psql(&["-c", "\\d posts"]).stdout).into_owned();
    for expected in ["tags   | text[]   |", "scores | bigint[] |"] {
        assert!(text.contains(expected), "{expected:?} in\n{text}");
    }
    server.query(r#"INSERT INTO posts VALUES (1, '{"a b", c, NULL, ""}', ARRAY[3, 1]), (2, '{}', '{7}')"#);
    assert_eq!(
        server.query("SELECT id, tags, scores, scores[1], tags[2:3] FROM posts ORDER BY id"),
        "1|{\"a b\",c,NULL,\"\"}|{3,1}|3|{c,NULL}\n2|{}|{7}|7|{}\n"
    );
    assert_eq!(
        server.query("SELECT id FROM posts WHERE 7 = ANY(scores) OR 'c' = ANY(tags) ORDER BY id"),
        "1\n2\n"
    );
    let error = server.query_error("SELECT '{1,2'::int[]");
    assert!(error.contains("22P02") && error.contains("malformed array literal"), "{error}");
    // Set-returning functions in the select list and in FROM.
    assert_eq!(server.query("SELECT generate_series(1, 3)"), "1\n2\n3\n");
    assert_eq!(
        server.query(
            "SELECT p.id, t.tag, t.n FROM posts p, unnest(p.tags) WITH ORDINALITY AS t(tag, n) ORDER BY 1, 3"
        ),
        "1|a b|1\n1|c|2\n1||3\n1||4\n"
    );
}

/// Views bound to what they read (issue 20), as psql shows it: PostgreSQL 15's errors
/// with their DETAIL and HINT, its CASCADE notices, renames the views follow, and `\d+`
/// of a view over a renamed column. Both outputs are PostgreSQL 15's for these commands.
#[test]
fn psql_shows_what_depends_on_a_table_as_postgresql_does() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let commands = [
        "CREATE TABLE t (a INT, b TEXT)",
        "CREATE VIEW v AS SELECT a, b FROM t",
        "CREATE VIEW w AS SELECT b FROM v",
        "DROP TABLE t",
        "ALTER TABLE t ALTER COLUMN b TYPE VARCHAR(5)",
        "ALTER TABLE t RENAME COLUMN a TO id",
        "ALTER TABLE t RENAME TO t2",
        "INSERT INTO t2 VALUES (1, 'x')",
        "SELECT * FROM w",
        "DROP TABLE t2 CASCADE",
    ];
    let mut args = vec!["-At", "-v", "ON_ERROR_STOP=0"];
    args.extend(commands.iter().flat_map(|c| ["-c", *c]));
    let out = server.psql(&args);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "CREATE TABLE\nCREATE VIEW\nCREATE VIEW\nALTER TABLE\nALTER TABLE\nINSERT 0 1\nx\nDROP TABLE\n"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "ERROR:  cannot drop table t because other objects depend on it\n\
         DETAIL:  view v depends on table t\n\
         view w depends on view v\n\
         HINT:  Use DROP ... CASCADE to drop the dependent objects too.\n\
         ERROR:  cannot alter type of a column used by a view or rule\n\
         DETAIL:  rule _RETURN on view v depends on column \"b\"\n\
         NOTICE:  drop cascades to 2 other objects\n\
         DETAIL:  drop cascades to view v\n\
         drop cascades to view w\n"
    );
    server.query("CREATE TABLE t (a INT, b TEXT)");
    server.query("CREATE VIEW v AS SELECT a, b FROM t");
    server.query("ALTER TABLE t RENAME COLUMN a TO id");
    let out = server.psql(&["-c", "\\d+ v"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    // (Not compared: the type of `a`, bigint here as the database keeps every integer,
    // and the definition, shown as written rather than deparsed with the new name.)
    for expected in ["View \"public.v\"", "\n a      | ", " b      | text   |", "View definition:\n SELECT"] {
        assert!(text.contains(expected), "{expected:?} in\n{text}");
    }
    let out = server.psql(&["-c", "DROP TABLE t CASCADE"]);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "NOTICE:  drop cascades to view v\n");
}

/// Whole rows, row constructors and `pg_typeof` over the wire as psql prints them: the
/// record's text (record_out's quoting), row_to_json and json_agg of whole rows, a
/// joined table's row and an outer join's missing one. The output is PostgreSQL 15's
/// for the same commands.
#[test]
fn psql_prints_whole_rows_row_to_json_and_pg_typeof_as_postgresql_does() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query(
        "CREATE TABLE t (id INT PRIMARY KEY, name TEXT, price NUMERIC(10,2), at TIMESTAMPTZ, flag BOOLEAN)",
    );
    server.query("CREATE TABLE u (uid INT, tid INT, note VARCHAR(10))");
    server.query(
        "INSERT INTO t VALUES (1, 'abc', 1.50, '2024-01-02 03:04:05+00', true), (2, 'a,b \"q\"', NULL, NULL, NULL), \
         (3, '', 0, '2024-06-01 00:00:00.123+00', false)",
    );
    server.query("INSERT INTO u VALUES (10, 1, 'x'), (11, 2, NULL)");
    let out = server.commands(&[
        "SET TIME ZONE 'UTC'",
        "SELECT t, row_to_json(t) FROM t ORDER BY id",
        "SELECT json_agg(s) FROM (SELECT id, name FROM t WHERE id < 3) s",
        "SELECT t.id, u, row_to_json(u.*), (u).note FROM t LEFT JOIN u ON u.tid = t.id ORDER BY t.id",
        "SELECT ROW(1, 'a b', NULL), row_to_json((1, 'x')), ROW(1, 2) < ROW(1, 3), pg_typeof(t), pg_typeof(1), \
         pg_typeof('x') FROM t WHERE id = 1",
    ]);
    assert_eq!(
        out,
        r#"SET
(1,abc,1.50,"2024-01-02 03:04:05+00",t)|{"id":1,"name":"abc","price":1.50,"at":"2024-01-02T03:04:05+00:00","flag":true}
(2,"a,b ""q""",,,)|{"id":2,"name":"a,b \"q\"","price":null,"at":null,"flag":null}
(3,"",0.00,"2024-06-01 00:00:00.123+00",f)|{"id":3,"name":"","price":0.00,"at":"2024-06-01T00:00:00.123+00:00","flag":false}
[{"id":1,"name":"abc"}, 
 {"id":2,"name":"a,b \"q\""}]
1|(10,1,x)|{"uid":10,"tid":1,"note":"x"}|x
2|(11,2,)|{"uid":11,"tid":2,"note":null}|
3|||
(1,"a b",)|{"f1":1,"f2":"x"}|t|t|integer|unknown
"#
    );
}

/// psql's `\dC`, `\do`, `\dc`, `\dF` (and `\dFd`, `\dFp`, `\dFt`) and `\dd` run their
/// own catalog queries: the casts and operators the executor implements print as
/// PostgreSQL 15 prints them (its rows, names and descriptions), and the catalogs of
/// what the database has none of (conversions, text search) list nothing under
/// PostgreSQL's headers.
#[test]
fn psql_lists_casts_operators_conversions_and_text_search_as_postgresql_does() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    // PostgreSQL 15's own rows for these casts (its `\dC bigint` has more: bit, money,
    // the reg* types, which the database has not).
    assert_eq!(
        server.query("\\dC bigint"),
        "bigint|double precision|float8|yes\nbigint|integer|int4|in assignment\n\
         bigint|numeric|numeric|yes\nbigint|oid|oid|yes\nbigint|real|float4|yes\n\
         bigint|smallint|int2|in assignment\ndouble precision|bigint|int8|in assignment\n\
         integer|bigint|int8|yes\nnumeric|bigint|int8|in assignment\noid|bigint|int8|in assignment\n\
         real|bigint|int8|in assignment\nsmallint|bigint|int8|yes\n"
    );
    let casts = server.query("\\dC");
    for row in [
        "\"char\"|character|bpchar|in assignment",
        "character varying|character|(binary coercible)|yes",
        "date|timestamp with time zone|timestamptz|yes",
        "json|jsonb|(with inout)|in assignment",
        "boolean|integer|int4|no",
    ] {
        assert!(casts.lines().any(|l| l == row), "{row} in\n{casts}");
    }
    // A cast the executor does not do as PostgreSQL does is not listed.
    assert!(!casts.contains("jsonb|bigint"), "{casts}");
    // The function a cast names is a function: called, it is the cast.
    assert_eq!(server.query("SELECT int4(5::int8), float8(2), bool(1)"), "5|2|t\n");
    // float8 as PostgreSQL writes it: exponent notation past 1e15 and below 1e-4, in a
    // column, an array, a record, a text cast and JSON alike.
    assert_eq!(
        server.query(
            "SELECT 1e20::float8, 1e-5::float8, 123456789012345::float8, ARRAY[1e16::float8], \
             ROW(2.5e-7::float8), 1e20::float8::text, to_json(1e20::float8), to_jsonb(1e20::float8), \
             json_build_object('a', 1e20::float8)"
        ),
        "1e+20|1e-05|123456789012345|{1e+16}|(2.5e-07)|1e+20|1e+20|100000000000000000000|{\"a\" : 1e+20}\n"
    );

    // \do without a pattern leaves pg_catalog out, as PostgreSQL's: nothing.
    assert_eq!(server.query("\\do"), "");
    assert_eq!(
        server.query("\\do ->>"),
        "pg_catalog|->>|json|integer|text|get json array element as text\n\
         pg_catalog|->>|json|text|text|get json object field as text\n\
         pg_catalog|->>|jsonb|integer|text|get jsonb array element as text\n\
         pg_catalog|->>|jsonb|text|text|get jsonb object field as text\n"
    );
    assert_eq!(
        server.query("\\do ~~"),
        "pg_catalog|~~|character|text|boolean|matches LIKE expression\n\
         pg_catalog|~~|text|text|boolean|matches LIKE expression\n"
    );
    // What pg_operator lists runs: `~~` is LIKE, `!~~*` NOT ILIKE.
    assert_eq!(server.query("SELECT 'abc' ~~ 'a%', 'ABC' !~~* 'a%', 5 # 3"), "t|f|6\n");
    let out = server.psql(&["-c", "\\do+ ||"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("List of operators"), "{text}");
    assert!(
        text.contains(
            " pg_catalog | ||   | text          | text           | text        | -        | concatenate"
        ),
        "{text}"
    );

    // Nothing of these exists: PostgreSQL's headers over no rows.
    for (command, title, header) in [
        ("\\dc", "List of conversions", " Schema | Name | Source | Destination | Default? "),
        ("\\dF", "List of text search configurations", " Schema | Name | Description "),
        ("\\dFd", "List of text search dictionaries", " Schema | Name | Description "),
        ("\\dFp", "List of text search parsers", " Schema | Name | Description "),
        ("\\dFt", "List of text search templates", " Schema | Name | Description "),
        ("\\dd", "Object descriptions", " Schema | Name | Object | Description "),
    ] {
        let out = server.psql(&["-c", command]);
        assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(title), "{command}: {text}");
        assert!(text.lines().any(|l| l == header), "{command}: {text}");
        assert!(text.contains("(0 rows)"), "{command}: {text}");
    }
    // \dd of a table's constraints: none has a comment.
    server.query("CREATE TABLE priced (id BIGINT PRIMARY KEY, price NUMERIC CHECK (price > 0))");
    assert_eq!(server.query("\\dd"), "");
}

/// pg_tables, pg_views and pg_indexes, which migration scripts ask ("does the table
/// exist?"), answer as PostgreSQL 15's views do for the same schema (its rows, checked
/// against PostgreSQL; the owner is the connected user, `test`; a view's definition is
/// redodb's text of the query).
#[test]
fn pg_tables_pg_views_and_pg_indexes_answer_as_postgresql_does() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query(
        "CREATE TABLE p (id int primary key, v text); \
         CREATE TABLE c (id int primary key, pid int references p(id)); \
         CREATE TABLE bare (x int); \
         CREATE UNIQUE INDEX c_pid ON c (pid); \
         CREATE VIEW pv AS SELECT id FROM p WHERE id > 1",
    );
    assert_eq!(
        server.query("SELECT * FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"),
        "public|bare|test||f|f|f|f\npublic|c|test||t|f|t|f\npublic|p|test||t|f|t|f\n"
    );
    assert_eq!(
        server.query("SELECT schemaname, viewname, viewowner FROM pg_views WHERE schemaname = 'public'"),
        "public|pv|test\n"
    );
    assert_eq!(
        server.query("SELECT * FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname"),
        "public|c|c_pid||CREATE UNIQUE INDEX c_pid ON public.c USING btree (pid)\n\
         public|c|c_pkey||CREATE UNIQUE INDEX c_pkey ON public.c USING btree (id)\n\
         public|p|p_pkey||CREATE UNIQUE INDEX p_pkey ON public.p USING btree (id)\n"
    );
    assert_eq!(server.query("SELECT EXISTS (SELECT FROM pg_tables WHERE tablename = 'nope')"), "f\n");
}

/// Issue 20's row-valued SQL through psql: a keyset page by a row comparison, a whole
/// row compared with a row constructor, `(t).*` and `(row).f2` described (`\gdesc`) and
/// printed with their types, timestamps past 9999 in and out, and a view's definition
/// after the table and column it reads were renamed. Every line but the last is
/// PostgreSQL 15's output for the same script; its `pg_get_viewdef` names the same
/// objects, laid out as its deparse lays them (`SELECT wt2.k, wt2.price AS amount FROM
/// wt2 WHERE wt2.price > 1::numeric`, over four lines).
#[test]
fn psql_shows_row_comparisons_record_stars_far_timestamps_and_renamed_views() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let script = dir.path().join("rows.sql");
    std::fs::write(
        &script,
        r#"CREATE TABLE wt (k TEXT, at TIMESTAMP, n NUMERIC(10,2), PRIMARY KEY (k, at));
INSERT INTO wt VALUES ('a', '10000-01-05 10:00', 1.5), ('b', '294276-12-31 23:59:59.999999', 2), ('b', '2024-01-01', NULL);
CREATE VIEW wv AS SELECT k, n AS amount FROM wt WHERE n > 1;
ALTER TABLE wt RENAME COLUMN n TO price;
ALTER TABLE wt RENAME TO wt2;
SELECT (wt2).*, (ROW(k, price)).f2 FROM wt2 WHERE (k, at) > ('a', '10000-01-05 10:00') AND wt2 <> ROW('b'::text, TIMESTAMP '2024-01-01', NULL::numeric) ORDER BY k, at \gdesc
SELECT (wt2).*, (ROW(k, price)).f2 FROM wt2 WHERE (k, at) > ('a', '10000-01-05 10:00') AND wt2 <> ROW('b'::text, TIMESTAMP '2024-01-01', NULL::numeric) ORDER BY k, at;
SELECT at + interval '1 year 2 days', at::date - date '2000-01-01' FROM wt2 WHERE k = 'a';
SELECT pg_get_viewdef('wv'::regclass, true);
"#,
    )
    .unwrap();
    let out = server.psql(&["-A", "-f", script.to_str().unwrap()]);
    assert!(out.status.success(), "psql failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "CREATE TABLE
INSERT 0 3
CREATE VIEW
ALTER TABLE
ALTER TABLE
Column|Type
k|text
at|timestamp without time zone
price|numeric(10,2)
f2|numeric(10,2)
(4 rows)
k|at|price|f2
b|294276-12-31 23:59:59.999999|2.00|2.00
(1 row)
?column?|?column?
10001-01-07 10:00:00|2921944
(1 row)
pg_get_viewdef
 SELECT k, price AS amount FROM wt2 WHERE price > 1;
(1 row)
"
    );
}
