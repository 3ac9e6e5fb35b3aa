//! The seed corpus: for each target, a few valid inputs made with the product's own
//! encoders (change records, redo records, control records, images) or, for SQL and the
//! wire protocol, the statements and messages the tests send. `examples/seeds.rs` writes
//! them to `fuzz/seeds/<target>/`; libFuzzer mutates from there.

use db::state::DbState;
use db::{Change, Column, DataType, Row, TableSchema, Value};
use redo::format::{encode_commit_record, encode_record, RecordKind};
use redo::{Lsn, Scn, TxnId};

use crate::redo_files::{self, FIX, MIRROR, NEAR_END, RAW};

/// One seed: its target, its file name and its bytes.
pub struct Seed {
    pub target: &'static str,
    pub name: String,
    pub bytes: Vec<u8>,
}

pub fn all() -> Vec<Seed> {
    let mut seeds = Vec::new();
    let mut add = |target: &'static str, name: &str, bytes: Vec<u8>| {
        seeds.push(Seed { target, name: name.to_string(), bytes })
    };
    for (name, bytes) in redo_log() {
        add("redo_log", name, bytes);
    }
    for (name, bytes) in control_file() {
        add("control_file", name, bytes);
    }
    for (name, bytes) in checkpoint_image() {
        add("checkpoint_image", name, bytes);
    }
    for (name, text) in SQL {
        add("sql", name, text.as_bytes().to_vec());
    }
    for (name, bytes) in wire_session() {
        add("wire_session", name, bytes);
    }
    for (name, bytes) in wire_startup() {
        add("wire_startup", name, bytes);
    }
    seeds
}

// ---------------------------------------------------------------------------------------
// Redo

fn accounts() -> TableSchema {
    let columns = vec![
        Column { name: "id".into(), ty: DataType::Int, nullable: false },
        Column { name: "name".into(), ty: DataType::Text { max_chars: Some(20) }, nullable: true },
        Column { name: "balance".into(), ty: DataType::Float, nullable: true },
        Column { name: "open".into(), ty: DataType::Bool, nullable: true },
        Column { name: "note".into(), ty: DataType::Text { max_chars: None }, nullable: true },
    ];
    TableSchema::new("accounts", columns, vec![0]).expect("a valid schema")
}

fn pairs() -> TableSchema {
    let columns = vec![
        Column { name: "a".into(), ty: DataType::Int, nullable: false },
        Column { name: "b".into(), ty: DataType::Text { max_chars: None }, nullable: false },
        Column { name: "v".into(), ty: DataType::Int, nullable: true },
    ];
    TableSchema::new("pairs", columns, vec![0, 1]).expect("a valid schema")
}

/// A table of the exact and structured types: NUMERIC with and without a modifier,
/// BYTEA, UUID, JSON, JSONB and CHAR(n).
fn typed() -> TableSchema {
    let columns = vec![
        Column { name: "id".into(), ty: DataType::Uuid, nullable: false },
        Column {
            name: "amount".into(),
            ty: DataType::Numeric(Some(db::NumericSpec::new(10, 2).expect("a valid modifier"))),
            nullable: true,
        },
        Column { name: "exact".into(), ty: DataType::Numeric(None), nullable: true },
        Column { name: "data".into(), ty: DataType::Bytea, nullable: true },
        Column { name: "raw".into(), ty: DataType::Json, nullable: true },
        Column { name: "doc".into(), ty: DataType::Jsonb, nullable: true },
        Column { name: "code".into(), ty: DataType::Char { len: Some(4) }, nullable: true },
    ];
    TableSchema::new("typed", columns, vec![0]).expect("a valid schema")
}

fn typed_row(n: u8) -> Row {
    let decimal = |t: &str| Value::numeric(db::numeric::parse(t).expect("a decimal"));
    Row::from(vec![
        Value::Uuid([n; 16]),
        decimal(&format!("{n}.25")),
        decimal(&format!("-{n}00000000000000000000.000000001")),
        Value::Bytea(vec![0, n, 0xff].into()),
        Value::Json(format!("{{\"n\": {n},  \"n\": [1.50]}}").into()),
        Value::Jsonb(db::json::normalize(&format!("{{\"b\": {n}, \"a\": \"\\u00e9\"}}")).expect("JSON").into()),
        Value::Text("ab".into()),
    ])
}

fn account(id: i64, name: &str, balance: f64, note: &str) -> Row {
    Row::from(vec![
        Value::Int(id),
        Value::Text(name.into()),
        Value::Float(balance),
        Value::Bool(id % 2 == 0),
        if note.is_empty() { Value::Null } else { Value::Text(note.into()) },
    ])
}

fn insert(table: &str, row: Row) -> Change {
    Change::Insert { table: table.into(), row }
}

/// The records of one transaction: its changes, then its commit record unless `scn` is
/// None (a transaction the log ends in the middle of).
fn transaction(out: &mut Vec<u8>, txn: u64, changes: &[Change], scn: Option<u64>) {
    for change in changes {
        let mut payload = Vec::new();
        change.encode(&mut payload);
        encode_record(out, RecordKind::Change, TxnId(txn), &payload);
    }
    if let Some(scn) = scn {
        out.extend_from_slice(&encode_commit_record(TxnId(txn), Scn(scn), 1_700_000_000_000_000 + scn));
    }
}

/// Every kind of change, in five commits, and a transaction left without its commit.
fn dml_stream() -> Vec<u8> {
    let mut s = Vec::new();
    transaction(&mut s, 1, &[Change::CreateTable(accounts()), Change::CreateTable(pairs())], Some(1));
    transaction(
        &mut s,
        2,
        &[
            insert("accounts", account(1, "ada", 10.5, "")),
            insert("accounts", account(2, "grace", -3.25, "naïve café ☕")),
            insert("accounts", account(3, "", 0.0, "x")),
            insert("pairs", Row::from(vec![Value::Int(1), Value::Text("a".into()), Value::Null])),
            insert("pairs", Row::from(vec![Value::Int(1), Value::Text("b".into()), Value::Int(i64::MIN)])),
        ],
        Some(2),
    );
    transaction(
        &mut s,
        3,
        &[
            Change::Update {
                table: "accounts".into(),
                key: vec![Value::Int(1)].into(),
                row: account(1, "ada", 99.0, "paid"),
            },
            Change::Update {
                table: "accounts".into(),
                key: vec![Value::Int(3)].into(),
                row: account(4, "moved", 1.0, ""),
            },
            Change::Delete { table: "accounts".into(), key: vec![Value::Int(2)].into() },
        ],
        Some(3),
    );
    transaction(&mut s, 4, &[Change::Truncate { table: "pairs".into() }], Some(4));
    transaction(&mut s, 5, &[Change::DropTable { table: "pairs".into() }], Some(5));
    transaction(&mut s, 6, &[insert("accounts", account(7, "never", 7.0, ""))], None);
    s
}

/// The typed table created, filled, one row updated and one deleted.
fn typed_stream() -> Vec<u8> {
    let mut s = Vec::new();
    transaction(&mut s, 1, &[Change::CreateTable(typed())], Some(1));
    transaction(&mut s, 2, &[insert("typed", typed_row(1)), insert("typed", typed_row(2))], Some(2));
    transaction(
        &mut s,
        3,
        &[
            Change::Update { table: "typed".into(), key: vec![Value::Uuid([1; 16])].into(), row: typed_row(1) },
            Change::Delete { table: "typed".into(), key: vec![Value::Uuid([2; 16])].into() },
        ],
        Some(3),
    );
    s
}

fn with_flags(flags: u8, body: &[u8]) -> Vec<u8> {
    let mut input = vec![flags];
    input.extend_from_slice(body);
    input
}

fn redo_log() -> Vec<(&'static str, Vec<u8>)> {
    let dml = dml_stream();
    let mut big = Vec::new();
    transaction(&mut big, 1, &[Change::CreateTable(accounts())], Some(1));
    transaction(&mut big, 2, &[insert("accounts", account(1, "big", 1.0, &"redo ".repeat(1800)))], Some(2));
    let mut interleaved = Vec::new();
    transaction(&mut interleaved, 1, &[Change::CreateTable(accounts())], None);
    transaction(&mut interleaved, 2, &[insert("accounts", account(5, "early", 5.0, ""))], None);
    transaction(&mut interleaved, 1, &[], Some(1));
    transaction(&mut interleaved, 2, &[], Some(2));
    let mut crossing = Vec::new();
    transaction(&mut crossing, 1, &[Change::CreateTable(accounts())], Some(1));
    for i in 0..12u64 {
        transaction(
            &mut crossing,
            2 + i,
            &[insert("accounts", account(i as i64 + 10, "crossing", i as f64, &"n".repeat(500)))],
            Some(2 + i),
        );
    }
    let mut mirrored = vec![FIX | MIRROR, 1];
    mirrored.extend_from_slice(&dml);
    let torn = &dml[..dml.len() - 30];
    vec![
        ("empty", vec![FIX]),
        ("dml", with_flags(FIX, &dml)),
        ("typed", with_flags(FIX, &typed_stream())),
        ("big-change", with_flags(FIX, &big)),
        ("interleaved", with_flags(FIX, &interleaved)),
        ("torn-tail", with_flags(FIX, torn)),
        ("near-end-crossing", with_flags(FIX | NEAR_END, &crossing)),
        ("mirror-damaged", mirrored),
        ("raw-blocks", with_flags(RAW, &redo_files::into_blocks(Lsn(0), &dml))),
    ]
}

// ---------------------------------------------------------------------------------------
// Control file

fn control_file() -> Vec<(&'static str, Vec<u8>)> {
    let template = crate::control::template_input();
    let used = crate::control::SLOT_USED;
    let mut slot0_only = template.clone();
    slot0_only[1 + used..].fill(0);
    let mut slot1_only = template.clone();
    slot1_only[1..1 + used].fill(0);
    vec![("template", template), ("slot0-only", slot0_only), ("slot1-only", slot1_only)]
}

// ---------------------------------------------------------------------------------------
// Checkpoint images

/// An image's bytes without the checksum the harness appends.
fn image_input(state: &DbState) -> Vec<u8> {
    let mut out = Vec::new();
    db::checkpoint::encode_image(&mut out, crate::image::DB_ID, state).expect("an image encoded into memory");
    out.truncate(out.len() - 4);
    out
}

fn checkpoint_image() -> Vec<(&'static str, Vec<u8>)> {
    let empty = DbState::default();
    let mut state = DbState::default();
    state.apply(&Change::CreateTable(accounts())).expect("a new table");
    state.apply(&Change::CreateTable(pairs())).expect("a new table");
    for i in 0..6 {
        state.apply(&insert("accounts", account(i, "holder", i as f64 * 1.5, "note"))).expect("a new row");
    }
    state.apply(&insert("accounts", account(-9, "nan", f64::NAN, ""))).expect("a new row");
    for (a, b) in [(1, "x"), (1, "y"), (2, "x")] {
        state
            .apply(&insert(
                "pairs",
                Row::from(vec![Value::Int(a), Value::Text(b.into()), Value::Int(a * 10)]),
            ))
            .expect("a new row");
    }
    state.scn = Scn(40);
    state.lsn = Lsn(8192 + 100);
    state.ahead = vec![(Scn(42), Lsn(9000)), (Scn(45), Lsn(9500))];
    // Version 1: no list of commits applied ahead.
    let mut v1_state = state.clone();
    v1_state.ahead.clear();
    let mut v1 = image_input(&v1_state);
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    let ahead_count_at = 8 + 4 + 8 + 8 + 8;
    v1.drain(ahead_count_at..ahead_count_at + 4);
    let mut typed_state = DbState::default();
    typed_state.apply(&Change::CreateTable(typed())).expect("a new table");
    for n in 1..4 {
        typed_state.apply(&insert("typed", typed_row(n))).expect("a new row");
    }
    typed_state.scn = Scn(3);
    typed_state.lsn = Lsn(8192);
    vec![
        ("empty", image_input(&empty)),
        ("tables", image_input(&state)),
        ("version-1", v1),
        ("typed", image_input(&typed_state)),
    ]
}

// ---------------------------------------------------------------------------------------
// SQL: one call per line

const SQL: &[(&str, &str)] = &[
    (
        "types",
        "CREATE TABLE typed (id UUID PRIMARY KEY DEFAULT gen_random_uuid(), amount NUMERIC(10,2), n NUMBER, data BYTEA, raw JSON, doc JSONB, code CHAR(4))
INSERT INTO typed (amount, n, data, raw, doc, code) VALUES (12.345, 1e3, '\\x00ff', '{\"a\": [1, 2]}', '{\"b\": 1, \"a\": {\"c\": null}}', 'ab  ')
INSERT INTO typed VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', -0.005, 1 / 3.0, 'abc', '[]', '[1.50, \"x\"]', 'q')
SELECT amount * 3, amount / 7, round(n, -2), trunc(amount), sum(amount), avg(n) FROM typed GROUP BY amount, n
SELECT doc -> 'a' ->> 'c', doc #> '{a,c}', doc @> '{\"b\": 1}', doc ? 'b', raw -> 'a' -> -1, jsonb_typeof(doc) FROM typed
SELECT encode(data, 'base64'), length(data), data || '\\x01'::bytea, code || '|', code = 'ab', id::text FROM typed
SELECT 99999999999999999999.5::numeric(5,2), 1.0 / 0, '{'::jsonb, '\\x1'::bytea, 'nope'::uuid, 'abcdef'::char(3)
UPDATE typed SET amount = amount * 1.1, doc = doc || '{\"seen\": true}' WHERE code = 'q'
DELETE FROM typed WHERE doc ? 'seen'",
    ),
    (
        "basics",
        "CREATE TABLE accounts (id INT PRIMARY KEY, name VARCHAR(20), balance FLOAT, open BOOLEAN, note TEXT)
INSERT INTO accounts VALUES (1, 'ada', 10.5, true, NULL), (2, 'grace', -3.25, false, 'naïve')
INSERT INTO accounts (id, name) VALUES (3, 'it''s')
SELECT * FROM accounts WHERE id BETWEEN 1 AND 2 ORDER BY balance DESC LIMIT 5 OFFSET 0
SELECT count(*), sum(balance), min(name), max(id), avg(balance) FROM accounts WHERE name LIKE 'a%' OR id IN (2, 3)
SELECT DISTINCT open FROM accounts GROUP BY open HAVING count(*) > 0
UPDATE accounts SET balance = balance * 2, note = upper(name) || '!' WHERE id = 1 RETURNING balance, note
DELETE FROM accounts WHERE id = 2 RETURNING *
SELECT CASE WHEN balance > 0 THEN 'plus' ELSE 'minus' END, coalesce(note, 'none'), length(name), abs(-4), round(2.5) FROM accounts
SELECT substr('hello', 2, 3), lpad('7', 3, '0'), rpad('a', 3), concat('a', 1, NULL), nullif(1, 1), greatest(1, 2), least(3, 4)
TRUNCATE TABLE accounts
DROP TABLE accounts",
    ),
    (
        "transactions",
        "CREATE TABLE t (k BIGINT PRIMARY KEY, v TEXT)
BEGIN
INSERT INTO t VALUES (1, 'a')
SAVEPOINT s1
INSERT INTO t VALUES (2, 'b')
ROLLBACK TO SAVEPOINT s1
RELEASE SAVEPOINT s1
COMMIT WRITE NOWAIT BATCH
INSERT INTO t VALUES (3, 'c'); COMMIT WRITE WAIT IMMEDIATE
INSERT INTO t VALUES (3, 'duplicate')
SELECT * FROM t WHERE k = 3 FOR UPDATE
UPDATE t SET v = repeat(v, 3) WHERE k > 1
ROLLBACK
BEGIN INSERT INTO t VALUES (10, 'block'); UPDATE t SET v = 'in block' WHERE k = 10; END;
COMMIT",
    ),
    (
        "parameters",
        "SHOW PARAMETER commit
ALTER SESSION SET commit_wait = NOWAIT
ALTER SESSION SET commit_logging = BATCH
ALTER SESSION SET commit_write = 'batch,nowait'
ALTER SESSION SET timed_statistics = FALSE
ALTER SYSTEM SET call_commit_optimization = FALSE
SET synchronous_commit TO off
SHOW synchronous_commit
SELECT current_setting('commit_wait'), version(), pg_backend_pid()
ALTER SESSION SET commit_wait = DEFAULT commit_logging = DEFAULT",
    ),
    (
        "views",
        "SELECT name, value FROM v$sysstat WHERE name LIKE 'redo%' ORDER BY name
SELECT event, total_waits FROM v$system_event
SELECT sid, status, sql_text FROM v$session
SELECT * FROM v$log
SELECT * FROM v$logfile
SELECT * FROM v$parameter WHERE name = 'commit_wait'
SELECT sql_text, executions FROM v$sql ORDER BY executions DESC LIMIT 3
SELECT * FROM v$event_histogram_micro WHERE event = 'log file sync'
SELECT stat_name, value FROM v$sys_time_model
SELECT * FROM v$commit_response
EXEC snapshot",
    ),
    (
        "explain",
        "CREATE TABLE big (id INT PRIMARY KEY, grp INT, v TEXT)
INSERT INTO big VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c'), (4, 2, NULL)
INSERT INTO big SELECT id + 4, grp + 1, v FROM big
EXPLAIN SELECT grp, count(*) FROM big WHERE id > 2 GROUP BY grp ORDER BY grp LIMIT 2
EXPLAIN ANALYZE SELECT * FROM big WHERE id BETWEEN 2 AND 6 AND v IS NOT NULL
EXPLAIN ANALYZE UPDATE big SET v = 'x' WHERE grp = 2
SELECT id, v FROM big WHERE id = 3 OR v = 'a' ORDER BY id
SELECT :1 || '-' || :name, $1 + 1",
    ),
    (
        "oddities",
        "SELECT 'a;b'; SELECT 2 -- comment
SELECT $fn$ a; $$ b; $fn$
SELECT E'a\\';b'
/* a /* nested */ comment */ SELECT 1
CREATE TABLE pairs (a INT, b INT, v INT, PRIMARY KEY (a, b))
INSERT INTO pairs VALUES (1, 2, 3), (1, 3, 4)
UPDATE pairs SET b = 5 WHERE a = 1 AND b = 2
SELECT CAST('12' AS INT) + 1, 7 / 2, 7 % 3, -9223372036854775808, 1e308 * 10, 'x'::text
SELECT id FROM nowhere
CREATE TABLE nokey (a INT, b TEXT)
COMMIT WRITE 'unterminated",
    ),
];

// ---------------------------------------------------------------------------------------
// Wire protocol

/// A frontend message: its type, its length, its body.
fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

fn cstr(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

fn query(sql: &str) -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, sql);
    message(b'Q', &body)
}

fn parse(name: &str, sql: &str, types: &[i32]) -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, name);
    cstr(&mut body, sql);
    body.extend_from_slice(&(types.len() as i16).to_be_bytes());
    for t in types {
        body.extend_from_slice(&t.to_be_bytes());
    }
    message(b'P', &body)
}

/// Bind with the given parameter formats and values (None: NULL) and result formats.
fn bind(
    portal: &str,
    statement: &str,
    formats: &[i16],
    values: &[Option<&[u8]>],
    results: &[i16],
) -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, portal);
    cstr(&mut body, statement);
    body.extend_from_slice(&(formats.len() as i16).to_be_bytes());
    for f in formats {
        body.extend_from_slice(&f.to_be_bytes());
    }
    body.extend_from_slice(&(values.len() as i16).to_be_bytes());
    for v in values {
        match v {
            Some(bytes) => {
                body.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                body.extend_from_slice(bytes);
            }
            None => body.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    body.extend_from_slice(&(results.len() as i16).to_be_bytes());
    for f in results {
        body.extend_from_slice(&f.to_be_bytes());
    }
    message(b'B', &body)
}

fn describe(kind: u8, name: &str) -> Vec<u8> {
    let mut body = vec![kind];
    cstr(&mut body, name);
    message(b'D', &body)
}

fn execute(portal: &str, max_rows: i32) -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, portal);
    body.extend_from_slice(&max_rows.to_be_bytes());
    message(b'E', &body)
}

fn close(kind: u8, name: &str) -> Vec<u8> {
    let mut body = vec![kind];
    cstr(&mut body, name);
    message(b'C', &body)
}

fn sync() -> Vec<u8> {
    message(b'S', &[])
}

fn concat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

fn wire_session() -> Vec<(&'static str, Vec<u8>)> {
    let create = query("CREATE TABLE t (k INT PRIMARY KEY, v TEXT, f FLOAT, b BOOLEAN)");
    vec![
        (
            "simple",
            concat(&[
                create.clone(),
                query("INSERT INTO t VALUES (1, 'a', 1.5, true), (2, NULL, -2, false)"),
                query("SELECT * FROM t ORDER BY k; SELECT count(*) FROM t"),
                query("BEGIN; UPDATE t SET v = 'x' WHERE k = 1; SELECT 1/0; COMMIT"),
                query("ROLLBACK"),
                message(b'X', &[]),
            ]),
        ),
        (
            "extended",
            concat(&[
                create.clone(),
                parse("ins", "INSERT INTO t VALUES ($1, $2, $3, $4) RETURNING k", &[20, 25, 701, 16]),
                describe(b'S', "ins"),
                bind("", "ins", &[0], &[Some(b"1"), Some(b"one"), Some(b"2.5"), Some(b"t")], &[0]),
                execute("", 0),
                bind(
                    "",
                    "ins",
                    &[1, 0, 0, 0],
                    &[Some(&2i64.to_be_bytes()), None, Some(b"3"), Some(b"f")],
                    &[1],
                ),
                execute("", 0),
                sync(),
                parse("", "SELECT k, v FROM t WHERE k >= $1 ORDER BY k", &[]),
                bind("p", "", &[], &[Some(b"0")], &[]),
                describe(b'P', "p"),
                execute("p", 1),
                execute("p", 0),
                close(b'P', "p"),
                close(b'S', "ins"),
                message(b'H', &[]),
                sync(),
            ]),
        ),
        (
            "copy",
            concat(&[
                create.clone(),
                query("COPY t FROM STDIN"),
                message(b'd', b"1\tone\t1.5\tt\n2\t\\N\t2\tf\n"),
                message(b'c', &[]),
                query("COPY t (k, v) FROM STDIN WITH (FORMAT csv)"),
                message(b'd', b"3,\"th,ree\"\n"),
                message(b'f', b"stop\0"),
                query("COPY t TO STDOUT"),
                query("COPY (SELECT k FROM t) TO STDOUT WITH (FORMAT csv, HEADER)"),
            ]),
        ),
        (
            "cursors",
            concat(&[
                create.clone(),
                query("INSERT INTO t VALUES (1, 'a', 0, true), (2, 'b', 0, true), (3, 'c', 0, false)"),
                query("BEGIN; DECLARE c CURSOR FOR SELECT * FROM t ORDER BY k; FETCH 2 FROM c; MOVE 1 IN c; FETCH ALL FROM c; CLOSE c; COMMIT"),
                query("DECLARE h CURSOR WITH HOLD FOR SELECT k FROM t; FETCH NEXT FROM h"),
                query("PREPARE q (int) AS SELECT v FROM t WHERE k = $1; EXECUTE q (2); DEALLOCATE q"),
                query("SET client_min_messages TO warning; SET LOCAL synchronous_commit TO off; RESET ALL; SHOW ALL"),
                query("SELECT set_config('application_name', 'x', false); DISCARD ALL"),
            ]),
        ),
        (
            "catalog",
            concat(&[
                create,
                query("SELECT c.oid, n.nspname, c.relname FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 2, 3;"),
                query("SELECT d.datname as \"Name\" FROM pg_catalog.pg_database d ORDER BY 1;"),
            ]),
        ),
    ]
}

fn startup(parameters: &[(&str, &str)], version: i32) -> Vec<u8> {
    let mut body = version.to_be_bytes().to_vec();
    for (name, value) in parameters {
        cstr(&mut body, name);
        cstr(&mut body, value);
    }
    body.push(0);
    let mut packet = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    packet.extend_from_slice(&body);
    packet
}

fn code_packet(code: i32, rest: &[u8]) -> Vec<u8> {
    let mut packet = ((8 + rest.len()) as i32).to_be_bytes().to_vec();
    packet.extend_from_slice(&code.to_be_bytes());
    packet.extend_from_slice(rest);
    packet
}

fn wire_startup() -> Vec<(&'static str, Vec<u8>)> {
    const V3: i32 = 196608;
    let with_auth = |auth: u8, parts: &[Vec<u8>]| {
        let mut input = vec![auth];
        input.extend_from_slice(&parts.concat());
        input
    };
    let fuzz = [("user", "fuzz"), ("database", "fuzz")];
    let alice = [("user", "alice"), ("database", "fuzz")];
    let mut sasl_initial = Vec::new();
    cstr(&mut sasl_initial, "SCRAM-SHA-256");
    let client_first = b"n,,n=,r=rOprNGfwEbeRWgbNEkqO";
    sasl_initial.extend_from_slice(&(client_first.len() as i32).to_be_bytes());
    sasl_initial.extend_from_slice(client_first);
    let mut md5 = Vec::new();
    cstr(&mut md5, "md5a3556571e93b0d20722ba62be61e8c2d");
    vec![
        ("trusted", with_auth(0, &[startup(&fuzz, V3), query("SELECT 1"), message(b'X', &[])])),
        ("ssl-request", with_auth(0, &[code_packet(80877103, &[]), startup(&fuzz, V3), query("SELECT 1")])),
        ("gssenc-request", with_auth(0, &[code_packet(80877104, &[]), startup(&fuzz, V3)])),
        ("cancel", with_auth(0, &[code_packet(80877102, &[0, 0, 0, 1, 0, 0, 0, 2])])),
        (
            "protocol-3-2",
            with_auth(0, &[startup(&[("user", "fuzz"), ("_pq_.extension", "x")], V3 + 2), query("SELECT 1")]),
        ),
        (
            "options",
            with_auth(
                0,
                &[
                    startup(
                        &[
                            ("user", "fuzz"),
                            (
                                "options",
                                "-c synchronous_commit=off --commit_wait=nowait -c search_path=public",
                            ),
                            ("application_name", "psql"),
                            ("client_encoding", "UTF8"),
                            ("DateStyle", "ISO"),
                        ],
                        V3,
                    ),
                    query("SHOW synchronous_commit"),
                ],
            ),
        ),
        ("bad-option", with_auth(0, &[startup(&[("user", "fuzz"), ("options", "-c nosuch=1")], V3)])),
        ("protocol-2", with_auth(0, &[startup(&fuzz, 2 << 16)])),
        ("md5", with_auth(1, &[startup(&alice, V3), message(b'p', &md5)])),
        (
            "scram",
            with_auth(
                2,
                &[
                    startup(&alice, V3),
                    message(b'p', &sasl_initial),
                    message(
                        b'p',
                        b"c=biws,r=rOprNGfwEbeRWgbNEkqOserver,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
                    ),
                ],
            ),
        ),
        ("remote", with_auth(3, &[startup(&fuzz, V3)])),
    ]
}
