//! Issue 20's analytic functions through psql against `redodb serve`: ordered-set and
//! hypothetical-set aggregates, width_bucket, the SHA-2 digests, TABLESAMPLE and
//! to_char past year 9999, as PostgreSQL 15 answers them (its bigint for our INT), and
//! their errors' SQLSTATEs as psql shows them.

use crate::common::{require_tool, Server};

#[test]
fn psql_gets_ordered_set_aggregates_width_bucket_sha2_tablesample_and_far_years() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE t (id INT PRIMARY KEY, g INT, x FLOAT, i INTERVAL, s TEXT)");
    server.query(
        "INSERT INTO t VALUES (1, 1, 1, '1 day', 'a'), (2, 1, 2, '2 days', 'b'), (3, 1, 4, '1 month', 'b'), \
         (4, 2, 10, '1 hour', 'z'), (5, 2, NULL, NULL, NULL), (6, 3, NULL, NULL, NULL)",
    );
    assert_eq!(
        server.query(
            "SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_disc(0.5) WITHIN GROUP (ORDER BY x), \
             mode() WITHIN GROUP (ORDER BY s) FROM t GROUP BY g ORDER BY g"
        ),
        "1|2|2|b\n2|10|10|z\n3|||\n"
    );
    assert_eq!(
        server.query(
            "SELECT percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY x), \
             percentile_cont(0.3) WITHIN GROUP (ORDER BY x DESC), percentile_cont(0.3) WITHIN GROUP (ORDER BY i), \
             rank(2) WITHIN GROUP (ORDER BY x), cume_dist(2) WITHIN GROUP (ORDER BY x) FROM t"
        ),
        "{1.75,3,5.5}|4.6000000000000005|21:42:00|2|0.42857142857142855\n"
    );
    let error = server.query_error("SELECT percentile_cont(1.5) WITHIN GROUP (ORDER BY x) FROM t");
    assert!(
        error.contains("22003") && error.contains("percentile value 1.5 is not between 0 and 1"),
        "{error}"
    );

    assert_eq!(
        server.query("SELECT width_bucket(5.35, 0.024, 10.06, 5), width_bucket(5, ARRAY[1, 3, 5, 7])"),
        "3|3\n"
    );
    let error = server.query_error("SELECT width_bucket(5, 0, 10, 0)");
    assert!(error.contains("2201G") && error.contains("count must be greater than zero"), "{error}");

    assert_eq!(
        server.query("SELECT sha256('abc'), sha224('abc')"),
        "\\xba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad|\
         \\x23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7\n"
    );

    server.query("CREATE TABLE big (id INT PRIMARY KEY)");
    server.query("INSERT INTO big SELECT g FROM generate_series(1, 10000) g");
    let kept: i64 =
        server.query("SELECT count(*) FROM big TABLESAMPLE BERNOULLI (10)").trim().parse().unwrap();
    assert!((800..=1200).contains(&kept), "{kept} of 10000 at 10%");
    let seeded =
        "SELECT string_agg(id::text, ',' ORDER BY id) FROM big TABLESAMPLE SYSTEM (1) REPEATABLE (7)";
    assert_eq!(server.query(seeded), server.query(seeded));
    let error = server.query_error("SELECT count(*) FROM big TABLESAMPLE BERNOULLI (150)");
    assert!(
        error.contains("2202H") && error.contains("sample percentage must be between 0 and 100"),
        "{error}"
    );
    let error = server.query_error("SELECT count(*) FROM big TABLESAMPLE foo (10)");
    assert!(error.contains("42704") && error.contains("tablesample method foo does not exist"), "{error}");

    assert_eq!(
        server.query("SELECT to_char(timestamp '12000-01-01', 'YYYY-MM-DD YYY Y,YYY CC')"),
        "12000-01-01 000 12,000 120\n"
    );
}
