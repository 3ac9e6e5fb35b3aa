#!/usr/bin/env bash
# Captures every statement issue 20's catalog clients send to a real PostgreSQL 15:
# SQLAlchemy (connect, then each check of cli/tests/clients/sqlalchemy_judge.py: create_all,
# the ORM session, the inspector, Alembic), PgJDBC (connect and schema, then each check of
# cli/tests/clients/JdbcMetadataJudge.java) and psql 15 (\d t, \d+ t, \dt, \di, \ds, \dv on
# a table with an index, a unique constraint, a foreign key each way, a check and an
# identity column, beside a sequence and a view).
#
# It starts its own PostgreSQL 15 (Debian's postgresql-15, as user postgres, in a temporary
# directory, on a free port of 127.0.0.1, or $PG_PORT) with log_statement = 'all' in csvlog, and runs every
# client through scripts/catalog-queries/pgproxy.py, which records the parameter types and
# formats the log does not show. Each step runs as its own process with application_name
# CLIENT/STEP (PGAPPNAME for libpq, ApplicationName for PgJDBC), which is how analyze.py
# tells the steps apart in both records. The server is stopped and removed at the end.
#
# Usage: scripts/catalog-queries/capture.sh OUT_DIR
# Writes OUT_DIR/postgresql.csv (the server's log), OUT_DIR/wire.jsonl (the proxy's
# record), OUT_DIR/steps.tsv (client, step, exit status), OUT_DIR/versions.tsv,
# OUT_DIR/catalog_columns.tsv and
# OUT_DIR/functions.tsv (PostgreSQL's own catalog, to resolve names), and what the clients printed:
# OUT_DIR/sqlalchemy.out, OUT_DIR/jdbc.out and OUT_DIR/psql/STEP.txt. Needs python3 with
# the packages of cli/tests/clients/requirements.txt, a JDK and /usr/share/java/postgresql.jar.
set -euo pipefail

out=${1:?usage: capture.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
clients=$repo/cli/tests/clients
pgbin=/usr/lib/postgresql/15/bin
# Ports the kernel says are free now (other servers may run on this machine).
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
pg_port=${PG_PORT:-$(free_port)}
proxy_port=${PROXY_PORT:-$(free_port)}
jar=/usr/share/java/postgresql.jar

mkdir -p "$out/psql"
out=$(cd "$out" && pwd)
rm -f "$out/wire.jsonl" "$out/postgresql.csv" "$out/steps.tsv" "$out"/*.out "$out"/psql/*.txt
work=$(mktemp -d)
chown postgres "$work"
proxy_pid=
cleanup() {
    [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null || true
    runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

runuser -u postgres -- "$pgbin/initdb" -D "$work/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
cat >>"$work/data/postgresql.conf" <<EOF
port = $pg_port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$work'
log_statement = 'all'
log_parameter_max_length = -1
logging_collector = on
log_destination = 'csvlog'
log_directory = '$work/log'
log_filename = 'postgresql'
fsync = off
EOF
runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/data" -l "$work/server.log" -w start >/dev/null
# The roles the judges connect as (superusers, as redodb's trusted users are), and the
# database they name. Made directly, not through the proxy: they are not a client's.
for role in sqlalchemy jdbc psql; do
    psql -X -q -h 127.0.0.1 -p "$pg_port" -U postgres -c "CREATE ROLE $role SUPERUSER LOGIN"
done
psql -X -q -h 127.0.0.1 -p "$pg_port" -U postgres -c "CREATE DATABASE redodb"

python3 "$here/pgproxy.py" "$proxy_port" "$pg_port" "$out/wire.jsonl" &
proxy_pid=$!
for _ in $(seq 50); do
    (exec 3<>/dev/tcp/127.0.0.1/"$proxy_port") 2>/dev/null && break
    sleep 0.1
done

# step CLIENT STEP EXPECTED_STATUS OUTPUT COMMAND...: runs COMMAND with application_name
# CLIENT/STEP, its output appended to OUTPUT and its status to steps.tsv.
step() {
    local client=$1 name=$2 expected=$3 output=$4
    shift 4
    local status=0
    echo "== $client/$name" >>"$output"
    PGAPPNAME="$client/$name" "$@" >>"$output" 2>&1 || status=$?
    printf '%s\t%s\t%s\n' "$client" "$name" "$status" >>"$out/steps.tsv"
    if [ "$status" -ne "$expected" ]; then
        echo "$client/$name exited $status, expected $expected (see $output)" >&2
        exit 1
    fi
}

# SQLAlchemy: the dialect's first connect, then each check of the judge on its own.
sa_url="postgresql+psycopg://sqlalchemy@127.0.0.1:$proxy_port/redodb"
step sqlalchemy connect 0 "$out/sqlalchemy.out" python3 -c "
import sqlalchemy as sa
engine = sa.create_engine('$sa_url')
with engine.connect() as conn:
    pass
engine.dispose()"
for check in create_all orm_session inspector alembic; do
    step sqlalchemy "$check" 0 "$out/sqlalchemy.out" python3 "$clients/sqlalchemy_judge.py" --url "$sa_url" "$check"
done

# PgJDBC: connect and create the schema (a name no check has: no check runs, status 1),
# then each check on its own.
classes=$work/classes
mkdir -p "$classes"
javac -d "$classes" -cp "$jar" "$clients/JdbcMetadataJudge.java"
jdbc() {
    local name=$1 expected=$2 filter=$3
    step jdbc "$name" "$expected" "$out/jdbc.out" java -cp "$classes:$jar" JdbcMetadataJudge \
        "jdbc:postgresql://127.0.0.1:$proxy_port/redodb?user=jdbc&ApplicationName=jdbc/$name" "$filter"
}
jdbc connect-and-schema 1 "(no check)"
jdbc getTables 0 getTables
jdbc getColumns 0 getColumns
jdbc getPrimaryKeys 0 getPrimaryKeys
jdbc getImportedKeys-getExportedKeys 0 getImportedKeys
jdbc getIndexInfo 0 getIndexInfo
jdbc timestamps 0 "timestamps in binary"
jdbc numerics 0 "numerics in binary"
jdbc byte-arrays 0 "byte arrays in binary"

# psql 15: the schema, then each command alone (psql sends nothing when it connects).
psql_run() {
    local name=$1 file=$2
    shift 2
    step psql "$name" 0 "$out/psql/$file.txt" psql -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$proxy_port" -U psql -d redodb "$@"
}
psql_run setup setup -c "
CREATE TABLE p (id integer PRIMARY KEY, name text);
CREATE TABLE t (
    id integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    code varchar(10) NOT NULL,
    p_id integer REFERENCES p (id),
    qty integer CHECK (qty >= 0),
    note text DEFAULT 'none',
    UNIQUE (code)
);
CREATE INDEX t_p_id_idx ON t (p_id);
CREATE TABLE c (id integer PRIMARY KEY, t_id integer REFERENCES t (id) ON DELETE CASCADE);
CREATE SEQUENCE s;
CREATE VIEW v AS SELECT id, code FROM t;"
psql_run '\d t' d_t -c '\d t'
psql_run '\d+ t' d_plus_t -c '\d+ t'
psql_run '\dt' dt -c '\dt'
psql_run '\di' di -c '\di'
psql_run '\ds' ds -c '\ds'
psql_run '\dv' dv -c '\dv'
psql_run cleanup cleanup -c "DROP VIEW v; DROP SEQUENCE s; DROP TABLE c; DROP TABLE t; DROP TABLE p;"

kill "$proxy_pid"
proxy_pid=
# What analyze.py resolves names against: the columns of every pg_catalog and
# information_schema relation (system columns too), and every function's kind.
q() { psql -X -q -A -t -F $'\t' -h 127.0.0.1 -p "$pg_port" -U postgres -d redodb -c "$1"; }
{
    printf 'PostgreSQL\t%s\n' "$(q 'SHOW server_version')"
    printf 'psql\t%s\n' "$(psql --version | awk '{print $3}')"
    python3 -c 'import sqlalchemy, alembic, psycopg
print(f"SQLAlchemy\t{sqlalchemy.__version__}\nAlembic\t{alembic.__version__}\npsycopg\t{psycopg.__version__}")'
    python3 -c 'import re, sys, zipfile
manifest = zipfile.ZipFile(sys.argv[1]).read("META-INF/MANIFEST.MF").decode()
print("PgJDBC\t" + re.search(r"^Implementation-Version: *(\S+)", manifest, re.M).group(1))' "$jar"
} >"$out/versions.tsv"
q "SELECT n.nspname, c.relname, c.relkind, a.attname, a.attnum, pg_catalog.format_type(a.atttypid, a.atttypmod)
   FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid
   WHERE n.nspname IN ('pg_catalog', 'information_schema') AND c.relkind IN ('r', 'v', 'm')
     AND NOT a.attisdropped ORDER BY 1, 2, 5" >"$out/catalog_columns.tsv"
q "SELECT n.nspname, p.proname, p.prokind, p.proretset, pg_catalog.pg_get_function_identity_arguments(p.oid),
          pg_catalog.format_type(p.prorettype, NULL)
   FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname IN ('pg_catalog', 'information_schema') ORDER BY 1, 2, 5" >"$out/functions.tsv"
runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null
cp "$work/log/postgresql.csv" "$out/postgresql.csv"
echo "captured: $(wc -l <"$out/wire.jsonl") wire records, $(grep -c . "$out/steps.tsv") steps in $out"
