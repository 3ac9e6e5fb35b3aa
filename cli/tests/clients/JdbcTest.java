// PgJDBC (unmodified, Debian's libpostgresql-jdbc-java) against `redodb serve`.
//
// Compiled and run by cli/tests/server/client_jdbc.rs as `java JdbcTest PORT` against a fresh
// server. The checks that concern the protocol run once per preferQueryMode (extended,
// extendedForPrepared, extendedCacheEverything and simple), each on its own tables;
// every check runs even after one fails, failures print with their stack traces, the last
// line says how many checks ran and passed, and the exit status is 1 if any failed or none
// ran. socketTimeout bounds every call: a server that never
// answers fails the check instead of hanging the test.

import java.math.BigDecimal;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

public class JdbcTest {
    static int port;

    static final String[] MODES = {"extended", "extendedForPrepared", "extendedCacheEverything", "simple"};

    static Connection connect(String mode, String extra) throws SQLException {
        String url = "jdbc:postgresql://127.0.0.1:" + port + "/redodb?user=jdbc&connectTimeout=10"
                + "&socketTimeout=60&preferQueryMode=" + mode + extra;
        return DriverManager.getConnection(url);
    }

    static Connection connect(String mode) throws SQLException {
        return connect(mode, "");
    }

    interface Check {
        void run() throws Exception;
    }

    static void check(boolean ok, String message) {
        if (!ok) {
            throw new AssertionError(message);
        }
    }

    static void equal(Object expected, Object actual, String what) {
        if (expected == null ? actual != null : !expected.equals(actual)) {
            throw new AssertionError(what + ": expected <" + expected + ">, got <" + actual + ">");
        }
    }

    /** Runs `run`, which must fail with `sqlstate`; returns the exception. */
    static SQLException expectError(String sqlstate, Check run) throws Exception {
        try {
            run.run();
        } catch (SQLException e) {
            equal(sqlstate, e.getSQLState(), "SQLSTATE of \"" + e.getMessage() + "\"");
            return e;
        }
        throw new AssertionError("expected an error with SQLSTATE " + sqlstate + ", nothing was raised");
    }

    static void exec(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    static long queryLong(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            check(rs.next(), "a row from " + sql);
            return rs.getLong(1);
        }
    }

    static void createTable(Connection c, String name, String columns) throws SQLException {
        exec(c, "DROP TABLE IF EXISTS " + name);
        exec(c, "CREATE TABLE " + name + " " + columns);
    }

    /** The session's own sid (v$mystat). */
    static long sid(Connection c) throws SQLException {
        return queryLong(c, "SELECT sid FROM v$mystat WHERE name = 'user commits'");
    }

    /** Statistic `name` of session `sid`, read by `observer` (so reading it costs `sid` nothing). */
    static long sesstat(Connection observer, long sid, String name) throws SQLException {
        try (PreparedStatement ps = observer.prepareStatement("SELECT value FROM v$sesstat WHERE sid = ? AND name = ?")) {
            ps.setLong(1, sid);
            ps.setString(2, name);
            try (ResultSet rs = ps.executeQuery()) {
                check(rs.next(), "statistic " + name + " of sid " + sid);
                return rs.getLong(1);
            }
        }
    }

    // -----------------------------------------------------------------------------------

    static void preparedStatementTypes(String mode) throws Exception {
        String t = "ptypes_" + mode.toLowerCase();
        try (Connection c = connect(mode)) {
            createTable(c, t, "(k BIGINT PRIMARY KEY, i BIGINT, s VARCHAR(40), f DOUBLE PRECISION, b BOOLEAN, n BIGINT)");
            // Twelve executions: past prepareThreshold (5), so the extended modes switch to
            // a named server statement (S_n) and binary results on the way.
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?, ?, ?, ?, ?)")) {
                for (int k = 1; k <= 12; k++) {
                    ins.setLong(1, k);
                    ins.setInt(2, k % 2 == 0 ? -k * 1000 : k);
                    ins.setString(3, "row " + k + " it's \"quoted\" ünï");
                    ins.setDouble(4, k / 8.0);
                    ins.setBoolean(5, k % 3 == 0);
                    if (k % 4 == 0) {
                        ins.setNull(6, Types.BIGINT);
                    } else {
                        ins.setLong(6, (1L << 40) + k);
                    }
                    equal(1, ins.executeUpdate(), "rows inserted by execution " + k);
                }
                ins.setLong(1, 13);
                ins.setNull(2, Types.INTEGER);
                ins.setNull(3, Types.VARCHAR);
                ins.setNull(4, Types.DOUBLE);
                ins.setNull(5, Types.BOOLEAN);
                ins.setNull(6, Types.BIGINT);
                equal(1, ins.executeUpdate(), "a row of NULLs");
                // Other setters drivers' users reach for.
                ins.setShort(1, (short) 14);
                ins.setBigDecimal(2, new BigDecimal("77"));
                ins.setObject(3, "object");
                ins.setFloat(4, 0.5f);
                ins.setObject(5, Boolean.TRUE);
                ins.setObject(6, 99L);
                equal(1, ins.executeUpdate(), "setShort, setBigDecimal, setFloat, setObject");
            }
            try (PreparedStatement sel = c.prepareStatement("SELECT k, i, s, f, b, n FROM " + t + " WHERE k = ?")) {
                for (int round = 0; round < 2; round++) {
                    for (int k = 1; k <= 12; k++) {
                        sel.setInt(1, k);
                        try (ResultSet rs = sel.executeQuery()) {
                            check(rs.next(), "row " + k);
                            equal((long) k, rs.getLong(1), "k");
                            equal(k % 2 == 0 ? -k * 1000 : k, rs.getInt(2), "i");
                            equal("row " + k + " it's \"quoted\" ünï", rs.getString(3), "s");
                            equal(k / 8.0, rs.getDouble(4), "f");
                            equal(k % 3 == 0, rs.getBoolean(5), "b");
                            long n = rs.getLong(6);
                            if (k % 4 == 0) {
                                check(rs.wasNull(), "n of row " + k + " is NULL");
                            } else {
                                equal((1L << 40) + k, n, "n");
                            }
                            check(!rs.next(), "one row");
                            ResultSetMetaData md = rs.getMetaData();
                            equal(Types.BIGINT, md.getColumnType(1), "type of k");
                            equal(Types.VARCHAR, md.getColumnType(3), "type of s");
                            equal(Types.DOUBLE, md.getColumnType(4), "type of f");
                            equal(Types.BIT, md.getColumnType(5), "type of b (JDBC's BIT for bool)");
                            equal("s", md.getColumnName(3), "name of column 3");
                        }
                    }
                }
                sel.setLong(1, 13);
                try (ResultSet rs = sel.executeQuery()) {
                    check(rs.next(), "row 13");
                    for (int col = 2; col <= 6; col++) {
                        check(rs.getObject(col) == null, "column " + col + " of row 13 is NULL");
                    }
                }
                sel.setLong(1, 14);
                try (ResultSet rs = sel.executeQuery()) {
                    check(rs.next(), "row 14");
                    equal(77L, rs.getLong(2), "setBigDecimal");
                    equal("object", rs.getString(3), "setObject(String)");
                    equal(0.5, rs.getDouble(4), "setFloat");
                    equal(true, rs.getBoolean(5), "setObject(Boolean)");
                    equal(99L, rs.getLong(6), "setObject(Long)");
                }
            }
            // Parameters in WHERE of every type.
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT count(*) FROM " + t + " WHERE k <= ? AND b = ? AND f > ? AND s <> ?")) {
                ps.setInt(1, 12);
                ps.setBoolean(2, true);
                ps.setDouble(3, 0.3);
                ps.setString(4, "none");
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    equal(4L, rs.getLong(1), "rows 3, 6, 9 and 12");
                }
            }
            try (PreparedStatement up = c.prepareStatement("UPDATE " + t + " SET s = ? WHERE k > ?")) {
                up.setString(1, "updated");
                up.setLong(2, 10);
                equal(4, up.executeUpdate(), "UPDATE count");
            }
            try (PreparedStatement del = c.prepareStatement("DELETE FROM " + t + " WHERE k = ?")) {
                del.setLong(1, 14);
                equal(1, del.executeUpdate(), "DELETE count");
                equal(0, del.executeUpdate(), "DELETE of nothing");
            }
            // A value of the wrong type is the statement's error; the connection goes on.
            expectError("22P02", () -> {
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + t + " (k, b) VALUES (?, ?)")) {
                    ps.setLong(1, 100);
                    ps.setString(2, "maybe");
                    ps.executeUpdate();
                }
            });
            equal(13L, queryLong(c, "SELECT count(*) FROM " + t), "rows left");
        }
    }

    static void batches(String mode) throws Exception {
        String t = "batch_" + mode.toLowerCase();
        for (boolean rewrite : new boolean[] {false, true}) {
            try (Connection c = connect(mode, rewrite ? "&reWriteBatchedInserts=true" : "")) {
                createTable(c, t, "(k BIGINT PRIMARY KEY, v VARCHAR(20), n BIGINT)");
                try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?, ?)")) {
                    for (int k = 1; k <= 100; k++) {
                        ins.setLong(1, k);
                        ins.setString(2, "v" + k);
                        ins.setInt(3, k);
                        ins.addBatch();
                    }
                    int[] counts = ins.executeBatch();
                    equal(100, counts.length, "update counts");
                    for (int count : counts) {
                        // A rewritten batch reports SUCCESS_NO_INFO (-2), as PgJDBC does.
                        check(count == 1 || (rewrite && count == Statement.SUCCESS_NO_INFO),
                                "update counts " + Arrays.toString(counts));
                    }
                    if (!rewrite) {
                        for (int count : counts) {
                            equal(1, count, "each INSERT of the batch counts 1");
                        }
                    }
                }
                equal(100L, queryLong(c, "SELECT count(*) FROM " + t), "rows after the batch");
                equal(5050L, queryLong(c, "SELECT sum(n) FROM " + t), "sum after the batch");
                try (PreparedStatement up = c.prepareStatement("UPDATE " + t + " SET n = n + 1 WHERE k <= ?")) {
                    for (int limit : new int[] {10, 0, 3}) {
                        up.setInt(1, limit);
                        up.addBatch();
                    }
                    equal("[10, 0, 3]", Arrays.toString(up.executeBatch()), "UPDATE batch counts");
                }
                // Statement batches too.
                try (Statement s = c.createStatement()) {
                    s.addBatch("INSERT INTO " + t + " VALUES (1001, 'a', 0)");
                    s.addBatch("UPDATE " + t + " SET v = 'b' WHERE k >= 1000");
                    s.addBatch("DELETE FROM " + t + " WHERE k > 2000");
                    equal("[1, 1, 0]", Arrays.toString(s.executeBatch()), "Statement batch counts");
                }
                // A duplicate in a batch fails it whole, in a transaction.
                c.setAutoCommit(false);
                BatchUpdateException e = null;
                try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?, 'dup', 0)")) {
                    for (long k : new long[] {500, 501, 1, 502}) {
                        ins.setLong(1, k);
                        ins.addBatch();
                    }
                    ins.executeBatch();
                } catch (BatchUpdateException caught) {
                    e = caught;
                }
                check(e != null, "the batch with a duplicate fails");
                SQLException cause = e.getNextException() != null ? e.getNextException() : e;
                equal("23505", cause.getSQLState(), "SQLSTATE of the failed batch: " + cause.getMessage());
                c.rollback();
                equal(0L, queryLong(c, "SELECT count(*) FROM " + t + " WHERE k >= 500 AND k < 600"),
                        "nothing of the failed batch");
                c.commit();
            }
        }
    }

    static void fetchSizeInTransaction(String mode) throws Exception {
        String t = "fetch_" + mode.toLowerCase();
        try (Connection c = connect(mode); Connection observer = connect("extended")) {
            createTable(c, t, "(k BIGINT PRIMARY KEY, v VARCHAR(20))");
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?)")) {
                for (int k = 1; k <= 95; k++) {
                    ins.setInt(1, k);
                    ins.setString(2, "v" + k);
                    ins.addBatch();
                }
                ins.executeBatch();
            }
            long sid = sid(c);
            c.setAutoCommit(false);
            long fetches = sesstat(observer, sid, "fetch calls");
            long trips = sesstat(observer, sid, "SQL*Net roundtrips to/from client");
            List<Long> keys = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement("SELECT k FROM " + t + " WHERE k > ? ORDER BY k")) {
                ps.setFetchSize(10);
                ps.setLong(1, 0);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        keys.add(rs.getLong(1));
                        if (keys.size() == 35) {
                            // Mid-way: four portions of ten have arrived, not all 95 rows.
                            long sofar = sesstat(observer, sid, "fetch calls") - fetches;
                            if (!mode.equals("simple")) {
                                equal(4L, sofar, "fetch calls after 35 of 95 rows, fetch size 10");
                            }
                        }
                    }
                }
            }
            equal(95, keys.size(), "rows");
            for (int i = 0; i < keys.size(); i++) {
                equal((long) i + 1, keys.get(i), "key " + i);
            }
            fetches = sesstat(observer, sid, "fetch calls") - fetches;
            trips = sesstat(observer, sid, "SQL*Net roundtrips to/from client") - trips;
            if (mode.equals("simple")) {
                // The simple protocol has no row limit: PgJDBC reads the whole result.
                equal(1L, fetches, "fetch calls in simple mode");
            } else {
                equal(10L, fetches, "fetch calls for 95 rows, fetch size 10");
                check(trips >= 10 && trips <= 12, "round trips for 10 portions: " + trips);
            }
            c.commit();

            // In autocommit mode the fetch size is ignored: one fetch.
            c.setAutoCommit(true);
            fetches = sesstat(observer, sid, "fetch calls");
            try (Statement s = c.createStatement()) {
                s.setFetchSize(10);
                try (ResultSet rs = s.executeQuery("SELECT k FROM " + t)) {
                    int n = 0;
                    while (rs.next()) {
                        n++;
                    }
                    equal(95, n, "rows in autocommit mode");
                }
            }
            equal(1L, sesstat(observer, sid, "fetch calls") - fetches, "fetch calls in autocommit mode");
        }
    }

    static void transactions(String mode) throws Exception {
        String t = "tx_" + mode.toLowerCase();
        try (Connection c = connect(mode); Connection other = connect(mode)) {
            createTable(c, t, "(k BIGINT PRIMARY KEY, v VARCHAR(20))");
            c.setAutoCommit(false);
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?)")) {
                ins.setLong(1, 1);
                ins.setString(2, "rolled back");
                ins.executeUpdate();
                equal(0L, queryLong(other, "SELECT count(*) FROM " + t), "uncommitted rows are not seen");
                c.rollback();
                equal(0L, queryLong(c, "SELECT count(*) FROM " + t), "after rollback");
                for (long k = 1; k <= 3; k++) {
                    ins.setLong(1, k);
                    ins.setString(2, "committed");
                    ins.executeUpdate();
                }
                c.commit();
                equal(3L, queryLong(other, "SELECT count(*) FROM " + t), "after commit");

                // An error fails the transaction: 25P02 until rollback, then all is well.
                ins.setLong(1, 4);
                ins.executeUpdate();
                ins.setLong(1, 1);
                expectError("23505", ins::executeUpdate);
                expectError("25P02", () -> queryLong(c, "SELECT count(*) FROM " + t));
                c.rollback();
                equal(3L, queryLong(c, "SELECT count(*) FROM " + t), "the failed transaction was rolled back");
                c.commit();

                // COMMIT of a failed transaction rolls back.
                ins.setLong(1, 5);
                ins.executeUpdate();
                expectError("42P01", () -> exec(c, "SELECT * FROM nosuch"));
                SQLException e = null;
                try {
                    c.commit();
                } catch (SQLException caught) {
                    e = caught;
                }
                // The server answers ROLLBACK, as PostgreSQL does: PgJDBC 42.5 takes it
                // silently, later versions raise; either way the row is gone.
                equal(0L, queryLong(other, "SELECT count(*) FROM " + t + " WHERE k = 5"), "commit of a failed block");
                if (e == null) {
                    c.rollback();
                }
            }
            // Switching autocommit on commits the open transaction, as JDBC says.
            exec(c, "INSERT INTO " + t + " VALUES (6, 'autocommit on')");
            c.setAutoCommit(true);
            equal(1L, queryLong(other, "SELECT count(*) FROM " + t + " WHERE k = 6"), "setAutoCommit(true) commits");
            exec(c, "INSERT INTO " + t + " VALUES (7, 'autocommit')");
            equal(1L, queryLong(other, "SELECT count(*) FROM " + t + " WHERE k = 7"), "autocommit");
            expectError("23505", () -> exec(c, "INSERT INTO " + t + " VALUES (7, 'again')"));
            exec(c, "INSERT INTO " + t + " VALUES (8, 'after the error')");
            equal(6L, queryLong(other, "SELECT count(*) FROM " + t), "rows");

            // The Oracle statements through JDBC.
            c.setAutoCommit(false);
            exec(c, "ALTER SESSION SET commit_wait = NOWAIT");
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW commit_wait")) {
                rs.next();
                equal("NOWAIT", rs.getString(1).toUpperCase(), "SHOW commit_wait");
            }
            long sid = sid(c);
            long nowait = sesstat(other, sid, "commit nowait requested");
            exec(c, "INSERT INTO " + t + " VALUES (9, 'nowait')");
            c.commit();
            equal(nowait + 1, sesstat(other, sid, "commit nowait requested"), "a NOWAIT commit");
            exec(c, "INSERT INTO " + t + " VALUES (10, 'write nowait')");
            exec(c, "COMMIT WRITE BATCH NOWAIT");
            exec(c, "SET synchronous_commit = on");
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW synchronous_commit")) {
                rs.next();
                equal("on", rs.getString(1), "SHOW synchronous_commit");
            }
            c.commit();
            equal(8L, queryLong(other, "SELECT count(*) FROM " + t), "rows");
        }
    }

    static List<Long> keys(Connection c, String sql) throws SQLException {
        List<Long> keys = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                keys.add(rs.getLong(1));
            }
        }
        return keys;
    }

    static void savepoints(String mode) throws Exception {
        String t = "sp_" + mode.toLowerCase();
        try (Connection c = connect(mode)) {
            createTable(c, t, "(k BIGINT PRIMARY KEY)");
            c.setAutoCommit(false);
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?)")) {
                ins.setLong(1, 1);
                ins.executeUpdate();
                Savepoint unnamed = c.setSavepoint();
                ins.setLong(1, 2);
                ins.executeUpdate();
                c.rollback(unnamed);
                ins.setLong(1, 3);
                ins.executeUpdate();
                Savepoint named = c.setSavepoint("Named Point");
                ins.setLong(1, 4);
                ins.executeUpdate();
                ins.setLong(1, 1);
                expectError("23505", ins::executeUpdate);
                expectError("25P02", () -> queryLong(c, "SELECT count(*) FROM " + t));
                // Rolling back to the savepoint makes the failed transaction usable again.
                c.rollback(named);
                ins.setLong(1, 5);
                ins.executeUpdate();
                c.releaseSavepoint(named);
                // Unknown to the server (PgJDBC itself refuses a released Savepoint).
                expectError("3B001", () -> exec(c, "ROLLBACK TO SAVEPOINT \"Named Point\""));
                c.rollback(unnamed);
                ins.setLong(1, 6);
                ins.executeUpdate();
                c.commit();
            }
            equal(Arrays.asList(1L, 6L), keys(c, "SELECT k FROM " + t + " ORDER BY k"), "rows after savepoints");
            c.commit();
        }
        // autosave=always: PgJDBC sets a savepoint before each statement and rolls back to
        // it after an error, so a failed statement does not fail the transaction.
        try (Connection c = connect(mode, "&autosave=always")) {
            c.setAutoCommit(false);
            exec(c, "INSERT INTO " + t + " VALUES (7)");
            expectError("23505", () -> exec(c, "INSERT INTO " + t + " VALUES (7)"));
            exec(c, "INSERT INTO " + t + " VALUES (8)");
            c.commit();
            equal(Arrays.asList(1L, 6L, 7L, 8L), keys(c, "SELECT k FROM " + t + " ORDER BY k"), "rows after autosave");
            c.commit();
        }
    }

    /**
     * NUMERIC(p, s) as an ORM maps a BigDecimal: setBigDecimal in, getBigDecimal out with
     * the column's scale (BigDecimal.equals compares the scale), the precision and scale in
     * the metadata (from the typmod), rounding to the scale on the way in, 22003 past the
     * precision, exact sums. Past prepareThreshold the extended modes read the results in
     * binary (binaryTransferEnable names NUMERIC, which PgJDBC 42.5 decodes itself).
     */
    /** REAL as float4: setFloat in 4 binary bytes, getFloat and getString (float4out's text), OID 700. */
    static void reals(String mode) throws Exception {
        String t = "reals_" + mode.toLowerCase();
        try (Connection c = connect(mode, "&binaryTransferEnable=FLOAT4")) {
            createTable(c, t, "(k BIGINT PRIMARY KEY, r REAL)");
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?)")) {
                ins.setLong(1, 1);
                ins.setFloat(2, 0.1f);
                equal(1, ins.executeUpdate(), "setFloat(0.1f)");
                ins.setLong(1, 2);
                ins.setFloat(2, 1234567f);
                equal(1, ins.executeUpdate(), "setFloat(1234567f)");
                // A double is rounded to single precision where a REAL stores it.
                ins.setLong(1, 3);
                ins.setDouble(2, 0.1);
                equal(1, ins.executeUpdate(), "setDouble(0.1)");
            }
            try (PreparedStatement sel = c.prepareStatement("SELECT r, r * 3::real, r::float8 FROM " + t + " WHERE k = ?")) {
                for (int round = 0; round < 6; round++) {
                    sel.setLong(1, 1 + round % 3);
                    try (ResultSet rs = sel.executeQuery()) {
                        check(rs.next(), "row " + (1 + round % 3));
                        float want = round % 3 == 1 ? 1234567f : 0.1f;
                        equal(want, rs.getFloat(1), "getFloat");
                        equal(want * 3f, rs.getFloat(2), "r * 3::real in single precision");
                        equal((double) want, rs.getDouble(3), "r::float8 widened");
                        equal(round % 3 == 1 ? "1.234567e+06" : "0.1", rs.getString(1), "float4out's text");
                        ResultSetMetaData md = rs.getMetaData();
                        equal(Types.REAL, md.getColumnType(1), "type of r");
                        equal("float4", md.getColumnTypeName(1), "type name of r");
                        equal(Types.DOUBLE, md.getColumnType(3), "type of r::float8");
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + t + " WHERE r = ?")) {
                ps.setFloat(1, 0.1f);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    equal(2L, rs.getLong(1), "rows 1 and 3 equal 0.1f");
                }
            }
            expectError("22003", () -> exec(c, "SELECT 3e38::real * 10::real"));
        }
    }

    static void exactNumerics(String mode) throws Exception {
        String t = "money_" + mode.toLowerCase();
        try (Connection c = connect(mode, "&binaryTransferEnable=NUMERIC")) {
            createTable(c, t, "(k BIGINT PRIMARY KEY, amount NUMERIC(10,2), rate NUMERIC, qty NUMBER(6))");
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?, ?, ?)")) {
                for (int k = 1; k <= 12; k++) {
                    ins.setLong(1, k);
                    ins.setBigDecimal(2, new BigDecimal(k + ".005"));
                    ins.setBigDecimal(3, new BigDecimal("-0.1000000000000000000001").movePointLeft(k));
                    ins.setInt(4, k * 1000);
                    equal(1, ins.executeUpdate(), "rows inserted by execution " + k);
                }
                ins.setLong(1, 13);
                ins.setDouble(2, 0.1);
                ins.setNull(3, Types.NUMERIC);
                ins.setBigDecimal(4, new BigDecimal("12.5"));
                equal(1, ins.executeUpdate(), "setDouble into NUMERIC(10,2), NUMBER(6) rounded");
            }
            try (PreparedStatement sel = c.prepareStatement("SELECT amount, rate, qty, amount * 2 FROM " + t + " WHERE k = ?")) {
                for (int round = 0; round < 2; round++) {
                    for (int k = 1; k <= 12; k++) {
                        sel.setLong(1, k);
                        try (ResultSet rs = sel.executeQuery()) {
                            check(rs.next(), "row " + k);
                            equal(new BigDecimal(k + ".01"), rs.getBigDecimal(1), "amount, rounded half away from zero");
                            equal(new BigDecimal("-0.1000000000000000000001").movePointLeft(k), rs.getBigDecimal(2), "rate, exact");
                            equal(new BigDecimal(k * 1000), rs.getBigDecimal(3), "qty");
                            equal(new BigDecimal(k + ".01").multiply(new BigDecimal(2)), rs.getBigDecimal(4), "amount * 2");
                            equal(k + ".01", rs.getString(1), "amount as text");
                            ResultSetMetaData md = rs.getMetaData();
                            equal(Types.NUMERIC, md.getColumnType(1), "type of amount");
                            equal("numeric", md.getColumnTypeName(1), "type name of amount");
                            equal(10, md.getPrecision(1), "precision of amount (typmod)");
                            equal(2, md.getScale(1), "scale of amount (typmod)");
                            equal(6, md.getPrecision(3), "precision of NUMBER(6)");
                            equal(0, md.getScale(3), "scale of NUMBER(6)");
                        }
                    }
                }
                sel.setLong(1, 13);
                try (ResultSet rs = sel.executeQuery()) {
                    check(rs.next(), "row 13");
                    equal(new BigDecimal("0.10"), rs.getBigDecimal(1), "setDouble(0.1)");
                    check(rs.getBigDecimal(2) == null, "NULL numeric");
                    equal(new BigDecimal("13"), rs.getBigDecimal(3), "12.5 into NUMBER(6)");
                }
            }
            // A BigDecimal parameter compared with the column, whatever its scale.
            try (PreparedStatement ps = c.prepareStatement("SELECT k FROM " + t + " WHERE amount = ?")) {
                ps.setBigDecimal(1, new BigDecimal("3.010"));
                try (ResultSet rs = ps.executeQuery()) {
                    check(rs.next(), "amount = 3.010");
                    equal(3L, rs.getLong(1), "the row of 3.01");
                }
            }
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT sum(amount), avg(amount), sum(rate) FROM " + t)) {
                check(rs.next(), "a row of sums");
                equal(new BigDecimal("78.22"), rs.getBigDecimal(1), "sum of NUMERIC(10,2)");
                equal(new BigDecimal("6.0169230769230769"), rs.getBigDecimal(2), "avg of NUMERIC(10,2)");
                BigDecimal rates = BigDecimal.ZERO;
                for (int k = 1; k <= 12; k++) {
                    rates = rates.add(new BigDecimal("-0.1000000000000000000001").movePointLeft(k));
                }
                equal(rates, rs.getBigDecimal(3), "an exact sum of 34 significant digits");
            }
            expectError("22003", () -> {
                try (PreparedStatement ps = c.prepareStatement("UPDATE " + t + " SET amount = ? WHERE k = 1")) {
                    ps.setBigDecimal(1, new BigDecimal("123456789.12"));
                    ps.executeUpdate();
                }
            });
            expectError("22P02", () -> exec(c, "SELECT 'ten'::numeric"));
        }
    }

    /**
     * Arrays: createArrayOf("int4"/"text"/"int8") + setArray as parameters (binary or text
     * as the driver picks, inlined in simple mode), `k = ANY(?)`, and getArray() of int[]
     * and text[] columns (binary results past prepareThreshold in the extended modes),
     * with NULL elements, quoting and the empty array.
     */
    static void arrays(String mode) throws Exception {
        String t = "arrays_" + mode.toLowerCase();
        // Binary for int4[], int8[] and text[], both ways, past prepareThreshold.
        try (Connection c = connect(mode, "&binaryTransferEnable=1007,1016,1009")) {
            createTable(c, t, "(k BIGINT PRIMARY KEY, nums INT[], tags TEXT[])");
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?, ?)")) {
                for (int k = 1; k <= 7; k++) {
                    ins.setLong(1, k);
                    ins.setArray(2, c.createArrayOf("int4", k == 7 ? new Integer[0] : new Integer[] {k, k * 10, null}));
                    ins.setArray(3, c.createArrayOf("text", new String[] {"a b", "q\"\\" + k, null, "", "NULL"}));
                    equal(1, ins.executeUpdate(), "rows inserted by execution " + k);
                }
            }
            try (PreparedStatement sel = c.prepareStatement("SELECT k, nums, tags FROM " + t + " WHERE k = ANY(?) ORDER BY k")) {
                for (int round = 0; round < 7; round++) {
                    sel.setArray(1, c.createArrayOf("int8", new Long[] {2L, 7L, 99L}));
                    try (ResultSet rs = sel.executeQuery()) {
                        check(rs.next(), "row 2 of round " + round);
                        equal(2L, rs.getLong(1), "k");
                        java.sql.Array nums = rs.getArray(2);
                        equal(java.util.Arrays.asList(2L, 20L, null), java.util.Arrays.asList((Object[]) nums.getArray()), "nums");
                        equal(Types.BIGINT, nums.getBaseType(), "int elements are bigint");
                        equal(java.util.Arrays.asList("a b", "q\"\\2", null, "", "NULL"),
                                java.util.Arrays.asList((Object[]) rs.getArray(3).getArray()), "tags");
                        equal(Types.ARRAY, rs.getMetaData().getColumnType(2), "int[] is ARRAY");
                        equal("_int8", rs.getMetaData().getColumnTypeName(2), "type name of nums");
                        check(rs.next(), "row 7 of round " + round);
                        equal(0, ((Object[]) rs.getArray(2).getArray()).length, "the empty array");
                        check(!rs.next(), "two rows");
                    }
                }
            }
            try (Statement st = c.createStatement();
                    ResultSet rs = st.executeQuery("SELECT nums[2], cardinality(tags), array_to_string(tags, '/') FROM " + t + " WHERE k = 3")) {
                check(rs.next(), "a row");
                equal(30L, rs.getLong(1), "nums[2]");
                equal(5L, rs.getLong(2), "cardinality");
                equal("a b/q\"\\3//NULL", rs.getString(3), "array_to_string skips NULLs");
            }
            expectError("22P02", () -> exec(c, "SELECT '{1,2'::int[]"));
        }
    }

    /**
     * byte[] as bytea (setBytes/getBytes) and java.util.UUID as uuid (setObject/getObject),
     * in binary past prepareThreshold in the extended modes; a uuid key from
     * gen_random_uuid() read back as a UUID and used to find its row.
     */
    static void byteaAndUuid(String mode) throws Exception {
        String t = "blobs_" + mode.toLowerCase();
        try (Connection c = connect(mode, "&binaryTransferEnable=BYTEA,UUID")) {
            createTable(c, t, "(k BIGINT PRIMARY KEY, id UUID NOT NULL DEFAULT gen_random_uuid(), data BYTEA, tag UUID)");
            java.util.UUID fixed = java.util.UUID.fromString("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
            // PgJDBC cannot inline a byte[] into a simple query (it leaves the `?`, which
            // PostgreSQL refuses too): there the bytes go as hex text through decode().
            boolean simple = mode.equals("simple");
            String value = simple ? "decode(?, 'hex')" : "?";
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " (k, data, tag) VALUES (?, " + value + ", ?)")) {
                for (int k = 1; k <= 12; k++) {
                    byte[] data = new byte[k * 100];
                    StringBuilder hex = new StringBuilder();
                    for (int i = 0; i < data.length; i++) {
                        data[i] = (byte) (i * k);
                        hex.append(String.format("%02x", data[i] & 0xff));
                    }
                    ins.setLong(1, k);
                    if (simple) {
                        ins.setString(2, hex.toString());
                    } else {
                        ins.setBytes(2, data);
                    }
                    ins.setObject(3, fixed);
                    equal(1, ins.executeUpdate(), "rows inserted by execution " + k);
                }
            }
            List<java.util.UUID> ids = new ArrayList<>();
            try (PreparedStatement sel = c.prepareStatement("SELECT id, data, tag, length(data) FROM " + t + " WHERE k = ?")) {
                for (int round = 0; round < 2; round++) {
                    for (int k = 1; k <= 12; k++) {
                        sel.setLong(1, k);
                        try (ResultSet rs = sel.executeQuery()) {
                            check(rs.next(), "row " + k);
                            Object id = rs.getObject(1);
                            check(id instanceof java.util.UUID, "a uuid as java.util.UUID: " + id);
                            equal(4, ((java.util.UUID) id).version(), "gen_random_uuid() is version 4");
                            if (round == 0) {
                                ids.add((java.util.UUID) id);
                            }
                            byte[] data = rs.getBytes(2);
                            equal(k * 100, data.length, "bytes of row " + k);
                            for (int i = 0; i < data.length; i++) {
                                if (data[i] != (byte) (i * k)) {
                                    throw new AssertionError("byte " + i + " of row " + k);
                                }
                            }
                            equal(fixed, rs.getObject(3), "tag");
                            equal((long) k * 100, rs.getLong(4), "length(data)");
                            equal(Types.BINARY, rs.getMetaData().getColumnType(2), "bytea is BINARY");
                            equal("uuid", rs.getMetaData().getColumnTypeName(1), "type name of id");
                        }
                    }
                }
            }
            equal(12, new java.util.HashSet<>(ids).size(), "distinct generated keys");
            try (PreparedStatement ps = c.prepareStatement("SELECT k FROM " + t + " WHERE id = ?")) {
                for (int k = 1; k <= 12; k++) {
                    ps.setObject(1, ids.get(k - 1));
                    try (ResultSet rs = ps.executeQuery()) {
                        check(rs.next(), "the row of key " + ids.get(k - 1));
                        equal((long) k, rs.getLong(1), "k of the generated key");
                    }
                }
            }
            expectError("22P02", () -> exec(c, "SELECT 'nope'::uuid"));
        }
    }

    /** JSON and JSONB as ORMs pass them: text cast in SQL, read with getString. */
    static void jsonAndJsonb(String mode) throws Exception {
        String t = "docs_" + mode.toLowerCase();
        try (Connection c = connect(mode)) {
            createTable(c, t, "(k BIGINT PRIMARY KEY, raw JSON, doc JSONB NOT NULL)");
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?::json, ?::jsonb)")) {
                for (int k = 1; k <= 8; k++) {
                    ins.setLong(1, k);
                    ins.setString(2, "{\"k\":" + k + ",  \"k\": \"dup\"}");
                    ins.setString(3, "{\"tags\":[\"t" + (k % 2) + "\"], \"k\": " + k + ", \"name\": \"n\u00fc" + k + "\"}");
                    equal(1, ins.executeUpdate(), "rows inserted by execution " + k);
                }
            }
            try (PreparedStatement sel = c.prepareStatement("SELECT raw, doc, doc ->> 'name', (doc -> 'k')::text::int, raw ->> 'k' FROM " + t + " WHERE k = ?")) {
                for (int k = 1; k <= 8; k++) {
                    sel.setLong(1, k);
                    try (ResultSet rs = sel.executeQuery()) {
                        check(rs.next(), "row " + k);
                        equal("{\"k\":" + k + ",  \"k\": \"dup\"}", rs.getString(1), "json as given");
                        equal("{\"k\": " + k + ", \"name\": \"n\u00fc" + k + "\", \"tags\": [\"t" + (k % 2) + "\"]}", rs.getString(2), "jsonb normalized");
                        equal("n\u00fc" + k, rs.getString(3), "->>");
                        equal(k, rs.getInt(4), "-> as an int");
                        equal("dup", rs.getString(5), "the last duplicate key of a json");
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + t + " WHERE doc @> ?::jsonb")) {
                ps.setString(1, "{\"tags\": [\"t1\"]}");
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    equal(4L, rs.getLong(1), "@> with a parameter");
                }
            }
            expectError("22P02", () -> exec(c, "INSERT INTO " + t + " VALUES (99, '{', '{}')"));
        }
    }

    /** CHAR(n): blank-padded in results, its trailing blanks no part of comparisons. */
    static void charN(String mode) throws Exception {
        String t = "codes_" + mode.toLowerCase();
        try (Connection c = connect(mode)) {
            createTable(c, t, "(code CHAR(5) PRIMARY KEY, v VARCHAR(5))");
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?)")) {
                for (int k = 1; k <= 8; k++) {
                    ins.setString(1, "c" + k + (k % 2 == 0 ? "  " : ""));
                    ins.setString(2, "v" + k);
                    equal(1, ins.executeUpdate(), "rows inserted by execution " + k);
                }
            }
            try (PreparedStatement sel = c.prepareStatement("SELECT code, v FROM " + t + " WHERE code = ?")) {
                for (int k = 1; k <= 8; k++) {
                    sel.setString(1, "c" + k);
                    try (ResultSet rs = sel.executeQuery()) {
                        check(rs.next(), "row " + k);
                        equal("c" + k + "   ", rs.getString(1), "CHAR(5) blank-padded");
                        equal("v" + k, rs.getString(2), "VARCHAR as it is");
                        equal(Types.CHAR, rs.getMetaData().getColumnType(1), "bpchar is CHAR");
                        equal(5, rs.getMetaData().getPrecision(1), "its length");
                    }
                }
            }
            expectError("22001", () -> exec(c, "INSERT INTO " + t + " VALUES ('abcdef', 'x')"));
        }
    }

    static void generatedKeysAndReturning(String mode) throws Exception {
        String t = "ret_" + mode.toLowerCase();
        try (Connection c = connect(mode)) {
            createTable(c, t, "(k BIGINT PRIMARY KEY, v VARCHAR(20))");
            // PgJDBC appends RETURNING to the INSERT and reads the keys from its rows, past
            // prepareThreshold too.
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?)", new String[] {"k"})) {
                for (long k = 1; k <= 7; k++) {
                    ins.setLong(1, k);
                    ins.setString(2, "v" + k);
                    equal(1, ins.executeUpdate(), "update count with generated keys");
                    try (ResultSet keys = ins.getGeneratedKeys()) {
                        check(keys.next(), "a generated key row");
                        equal(k, keys.getLong("k"), "generated key");
                        check(!keys.next(), "one row");
                    }
                }
            }
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
                for (long k = 10; k < 13; k++) {
                    ins.setLong(1, k);
                    ins.setString(2, "batch");
                    ins.addBatch();
                }
                int[] counts = ins.executeBatch();
                equal(3, counts.length, "batch counts");
                List<String> values = new ArrayList<>();
                try (ResultSet keys = ins.getGeneratedKeys()) {
                    while (keys.next()) {
                        values.add(keys.getLong(1) + "=" + keys.getString(2));
                    }
                }
                equal(Arrays.asList("10=batch", "11=batch", "12=batch"), values, "RETURNING * of a batch");
            }
            try (PreparedStatement upd = c.prepareStatement("UPDATE " + t + " SET v = ? WHERE k >= ? RETURNING k, v")) {
                upd.setString(1, "updated");
                upd.setLong(2, 11);
                try (ResultSet rs = upd.executeQuery()) {
                    ResultSetMetaData meta = rs.getMetaData();
                    equal(2, meta.getColumnCount(), "RETURNING columns");
                    equal("v", meta.getColumnName(2), "column name");
                    List<String> rows = new ArrayList<>();
                    while (rs.next()) {
                        rows.add(rs.getLong(1) + "=" + rs.getString(2));
                    }
                    equal(Arrays.asList("11=updated", "12=updated"), rows, "UPDATE ... RETURNING");
                }
            }
        }
    }

    static void startupOptionsSessionFunctionsAndFetchInPortions() throws Exception {
        try (Connection c = connect("extended", "&options=-c%20synchronous_commit%3Doff%20-c%20commit_logging%3Dbatch")) {
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW synchronous_commit")) {
                rs.next();
                equal("off", rs.getString(1), "synchronous_commit from the startup options");
            }
            long pid = ((org.postgresql.PGConnection) c).getBackendPID();
            equal(pid, queryLong(c, "SELECT pg_backend_pid()"), "pg_backend_pid() is BackendKeyData's process id");
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT version(), current_setting('commit_logging')")) {
                rs.next();
                check(rs.getString(1).startsWith("PostgreSQL 16.0 (redodb "), rs.getString(1));
                equal("BATCH", rs.getString(2), "current_setting");
            }
            equal(16, c.getMetaData().getDatabaseMajorVersion(), "major version");

            // FETCH of a SQL cursor read with a fetch size: the portal honours the row limit.
            createTable(c, "portions", "(k BIGINT PRIMARY KEY)");
            exec(c, "INSERT INTO portions VALUES (1), (2), (3), (4), (5), (6), (7), (8)");
            c.setAutoCommit(false);
            exec(c, "DECLARE cur CURSOR FOR SELECT k FROM portions ORDER BY k");
            try (Statement s = c.createStatement()) {
                s.setFetchSize(2);
                List<Long> fetched = new ArrayList<>();
                try (ResultSet rs = s.executeQuery("FETCH 5 FROM cur")) {
                    while (rs.next()) {
                        fetched.add(rs.getLong(1));
                    }
                }
                equal(Arrays.asList(1L, 2L, 3L, 4L, 5L), fetched, "FETCH 5 in portions of 2");
            }
            equal(Arrays.asList(6L, 7L, 8L), keys(c, "FETCH ALL FROM cur"), "the rest");
            c.commit();
        }
        SQLException refused = expectError("42704", () -> connect("extended", "&options=-c%20no_such_setting%3D1").close());
        check(refused.getMessage().contains("no_such_setting"), refused.getMessage());
    }

    static void cancelOfAStatementWaitingForARowLock() throws Exception {
        try (Connection holder = connect("extended"); Connection waiter = connect("extended")) {
            createTable(holder, "locked", "(k BIGINT PRIMARY KEY, v BIGINT)");
            exec(holder, "INSERT INTO locked VALUES (1, 100)");
            holder.setAutoCommit(false);
            exec(holder, "UPDATE locked SET v = 200 WHERE k = 1");

            Statement blocked = waiter.createStatement();
            AtomicReference<Throwable> cancelFailed = new AtomicReference<>();
            Thread canceller = new Thread(() -> {
                try {
                    Thread.sleep(500);
                    blocked.cancel();
                } catch (Throwable e) {
                    cancelFailed.set(e);
                }
            });
            long started = System.nanoTime();
            canceller.start();
            SQLException e = expectError("57014", () -> blocked.executeUpdate("UPDATE locked SET v = 300 WHERE k = 1"));
            long ms = (System.nanoTime() - started) / 1_000_000;
            canceller.join();
            check(cancelFailed.get() == null, "Statement.cancel() threw " + cancelFailed.get());
            check(ms >= 400 && ms < 10_000, "cancelled after the canceller's delay, not before or much later: " + ms + " ms");
            check(e.getMessage().contains("canceling statement due to user request"), e.getMessage());
            blocked.close();

            // setQueryTimeout: the driver's own timer sends the cancel request.
            try (Statement timed = waiter.createStatement()) {
                timed.setQueryTimeout(1);
                long t0 = System.nanoTime();
                expectError("57014", () -> timed.executeUpdate("UPDATE locked SET v = 500 WHERE k = 1"));
                long waited = (System.nanoTime() - t0) / 1_000_000;
                check(waited >= 900 && waited < 10_000, "cancelled by the query timeout of 1 s: " + waited + " ms");
            }

            // The waiter goes on; the holder's commit keeps its value.
            holder.commit();
            equal(200L, queryLong(waiter, "SELECT v FROM locked WHERE k = 1"), "the cancelled update left nothing");
            exec(waiter, "UPDATE locked SET v = 400 WHERE k = 1");
            equal(400L, queryLong(holder, "SELECT v FROM locked WHERE k = 1"), "the waiter's connection works");
            holder.commit();
        }
    }

    static void viewsAndMetadata() throws Exception {
        try (Connection c = connect("extended")) {
            equal("PostgreSQL", c.getMetaData().getDatabaseProductName(), "product name");
            check(c.getMetaData().getDatabaseMajorVersion() >= 16, "server_version " + c.getMetaData().getDatabaseProductVersion());
            try (PreparedStatement ps = c.prepareStatement("SELECT name, value FROM v$sysstat WHERE name = ? ORDER BY name")) {
                ps.setString(1, "user commits");
                try (ResultSet rs = ps.executeQuery()) {
                    check(rs.next(), "user commits in v$sysstat");
                    equal("user commits", rs.getString(1), "name");
                    check(rs.getLong(2) >= 0, "value");
                    check(!rs.next(), "one row");
                }
            }
            equal(-1L, queryLong(c, "SELECT -1"), "SELECT -1");
            equal("public", c.getSchema(), "getSchema (current_schema())");
            equal("redodb", c.getCatalog(), "getCatalog");
            check(c.isValid(5), "isValid (an empty query)");
        }
    }

    /** The row of `ps` (which selects one row) as text, its columns joined by commas. */
    static String rowText(PreparedStatement ps) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            check(rs.next(), "a row");
            StringBuilder text = new StringBuilder();
            for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
                text.append(i > 1 ? "," : "").append(rs.getString(i));
            }
            return text.toString();
        }
    }

    static void statementWhoseTableIsCreatedAgain(String mode) throws Exception {
        String t = "again_" + mode.toLowerCase();
        try (Connection c = connect(mode); Connection other = connect("extended")) {
            createTable(other, t, "(k BIGINT PRIMARY KEY, v VARCHAR(10))");
            exec(other, "INSERT INTO " + t + " VALUES (1, 'one')");
            try (PreparedStatement ps = c.prepareStatement("SELECT * FROM " + t + " WHERE k = ?")) {
                ps.setLong(1, 1);
                // Past prepareThreshold: a named statement, run without a Describe.
                for (int i = 0; i < 8; i++) {
                    equal("1,one", rowText(ps), "run " + i);
                }
                // Another connection creates the table again with other columns: the
                // rows must not be decoded by the old description. In autocommit mode
                // PgJDBC prepares again at once on the server's "cached plan must not
                // change result type" (0A000, routine RevalidateCachedQuery).
                createTable(other, t, "(k BIGINT PRIMARY KEY, f DOUBLE PRECISION, v VARCHAR(10))");
                exec(other, "INSERT INTO " + t + " VALUES (1, 2.5, 'one')");
                equal("1,2.5,one", rowText(ps), "after the table was created again");
                equal("1,2.5,one", rowText(ps), "and again");

                // In a transaction the statement fails once (the block with it), then
                // runs prepared anew.
                c.setAutoCommit(false);
                for (int i = 0; i < 8; i++) {
                    equal("1,2.5,one", rowText(ps), "run " + i + " in a transaction");
                }
                c.commit();
                createTable(other, t, "(k BIGINT PRIMARY KEY, b BOOLEAN)");
                exec(other, "INSERT INTO " + t + " VALUES (1, true)");
                if (!mode.equals("simple")) {
                    expectError("0A000", () -> rowText(ps));
                    c.rollback();
                }
                equal("1,t", rowText(ps), "after the failed run");
                c.commit();
            }
        }
    }

    static void isolationAndReadOnly(String mode) throws Exception {
        String t = "iso_" + mode.toLowerCase();
        try (Connection c = connect(mode)) {
            createTable(c, t, "(k BIGINT PRIMARY KEY)");
            equal(Connection.TRANSACTION_READ_COMMITTED, c.getTransactionIsolation(), "the isolation level");
            c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
            c.setTransactionIsolation(Connection.TRANSACTION_READ_UNCOMMITTED);
            equal(Connection.TRANSACTION_READ_COMMITTED, c.getTransactionIsolation(), "READ UNCOMMITTED is READ COMMITTED");
            // Stronger levels are refused, not silently weakened.
            expectError("0A000", () -> c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE));
            expectError("0A000", () -> c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ));
            equal(Connection.TRANSACTION_READ_COMMITTED, c.getTransactionIsolation(), "the isolation level after");
            // setReadOnly: BEGIN READ ONLY, accepted.
            c.setAutoCommit(false);
            c.setReadOnly(true);
            equal(0L, queryLong(c, "SELECT count(*) FROM " + t), "a read-only transaction reads");
            c.commit();
            c.setReadOnly(false);
            exec(c, "INSERT INTO " + t + " VALUES (1)");
            c.commit();
            equal(1L, queryLong(c, "SELECT count(*) FROM " + t), "rows");
            c.commit();
        }
    }

    // -----------------------------------------------------------------------------------

    public static void main(String[] args) throws Exception {
        port = Integer.parseInt(args[0]);
        String only = args.length > 1 ? args[1] : "";
        Class.forName("org.postgresql.Driver");
        System.out.println("PgJDBC " + org.postgresql.util.DriverInfo.DRIVER_FULL_NAME);
        List<String> names = new ArrayList<>();
        List<Check> checks = new ArrayList<>();
        for (String mode : MODES) {
            names.add("prepared statement types [" + mode + "]");
            checks.add(() -> preparedStatementTypes(mode));
            names.add("batches [" + mode + "]");
            checks.add(() -> batches(mode));
            names.add("fetch size in a transaction [" + mode + "]");
            checks.add(() -> fetchSizeInTransaction(mode));
            names.add("transactions [" + mode + "]");
            checks.add(() -> transactions(mode));
            names.add("a prepared statement whose table is created again [" + mode + "]");
            checks.add(() -> statementWhoseTableIsCreatedAgain(mode));
            names.add("isolation and read-only [" + mode + "]");
            checks.add(() -> isolationAndReadOnly(mode));
            names.add("savepoints [" + mode + "]");
            checks.add(() -> savepoints(mode));
            names.add("generated keys and RETURNING [" + mode + "]");
            checks.add(() -> generatedKeysAndReturning(mode));
            names.add("exact numerics [" + mode + "]");
            checks.add(() -> exactNumerics(mode));
            names.add("reals [" + mode + "]");
            checks.add(() -> reals(mode));
            names.add("bytea and uuid [" + mode + "]");
            checks.add(() -> byteaAndUuid(mode));
            names.add("json and jsonb [" + mode + "]");
            checks.add(() -> jsonAndJsonb(mode));
            names.add("arrays [" + mode + "]");
            checks.add(() -> arrays(mode));
            names.add("char(n) [" + mode + "]");
            checks.add(() -> charN(mode));
        }
        names.add("startup options, session functions and a FETCH in portions");
        checks.add(JdbcTest::startupOptionsSessionFunctionsAndFetchInPortions);
        names.add("cancel of a statement waiting for a row lock");
        checks.add(JdbcTest::cancelOfAStatementWaitingForARowLock);
        names.add("views and metadata");
        checks.add(JdbcTest::viewsAndMetadata);

        int passed = 0;
        int failed = 0;
        int run = 0;
        for (int i = 0; i < checks.size(); i++) {
            if (!names.get(i).contains(only)) {
                continue;
            }
            run++;
            long start = System.nanoTime();
            try {
                checks.get(i).run();
                passed++;
                System.out.printf("ok     %s (%.2f s)%n", names.get(i), (System.nanoTime() - start) / 1e9);
            } catch (Throwable e) {
                failed++;
                System.out.println("FAILED " + names.get(i));
                e.printStackTrace(System.out);
            }
            System.out.flush();
        }
        // The last line, read by the test: a run of no checks is a failure, not a pass.
        System.out.println(run + " checks run of " + checks.size() + ": " + passed + " passed, " + failed + " failed");
        System.exit(failed == 0 && run > 0 ? 0 : 1);
    }
}
