//! COPY through `redodb serve` with real psql: `\copy ... from file with csv header`,
//! `COPY ... FROM STDIN` inside a `psql -f` script (data up to `\.`), a bad row failing
//! the whole COPY with its line number, `\copy ... to` and `COPY (query) TO STDOUT`.

use std::io::Write;

use crate::common::{require_tool, Server};

#[test]
fn psql_copies_csv_files_and_script_data_in() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query(
        "CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR(40), price DOUBLE PRECISION, ok BOOLEAN)",
    );

    // \copy from a CSV file with a header: quoted commas, doubled quotes, an empty
    // string (quoted) apart from NULL (unquoted empty), CRLF line ends.
    let csv = dir.path().join("items.csv");
    let mut data = String::from("id,name,price,ok\r\n");
    data.push_str("1,\"apples, red\",1.5,true\r\n");
    data.push_str("2,\"say \"\"hi\"\"\",,false\r\n");
    data.push_str("3,\"\",2,t\r\n");
    for id in 4..=1000 {
        data.push_str(&format!("{id},item {id},{}.25,{}\n", id % 7, id % 2 == 0));
    }
    std::fs::write(&csv, data).unwrap();
    let copy = format!("\\copy items from '{}' with csv header", csv.display());
    let out = server.psql(&["-c", &copy]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "COPY 1000");
    assert_eq!(server.query("SELECT count(*) FROM items"), "1000\n");
    assert_eq!(
        server.query("SELECT id, name, price, ok FROM items WHERE id <= 3 ORDER BY id"),
        "1|apples, red|1.5|t\n2|say \"hi\"||f\n3||2|t\n"
    );
    assert_eq!(server.query("SELECT count(*) FROM items WHERE price IS NULL"), "1\n");
    assert_eq!(server.query("SELECT count(*) FROM items WHERE name = ''"), "1\n");

    // COPY FROM STDIN in a script: the data follows up to \. ; text format escapes;
    // a column list (the others NULL); then the script goes on.
    let script = dir.path().join("load.sql");
    let mut f = std::fs::File::create(&script).unwrap();
    writeln!(f, "CREATE TABLE notes (k BIGINT PRIMARY KEY, body TEXT, extra TEXT);").unwrap();
    writeln!(f, "COPY notes (k, body) FROM STDIN;").unwrap();
    writeln!(f, "1\ttab\\there").unwrap();
    writeln!(f, "2\tline\\nbreak").unwrap();
    writeln!(f, "3\t\\N").unwrap();
    writeln!(f, "4\tback\\\\slash").unwrap();
    writeln!(f, "\\.").unwrap();
    writeln!(f, "COPY notes FROM STDIN WITH (FORMAT csv, DELIMITER ';', NULL 'nil');").unwrap();
    writeln!(f, "5;\"semi;colon\";nil").unwrap();
    writeln!(f, "6;nil;x").unwrap();
    writeln!(f, "\\.").unwrap();
    writeln!(f, "SELECT count(*) FROM notes;").unwrap();
    drop(f);
    let out = server.psql(&["-At", "-f", script.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "CREATE TABLE\nCOPY 4\nCOPY 2\n6\n");
    assert_eq!(
        server.query("SELECT k, body, extra IS NULL FROM notes ORDER BY k"),
        "1|tab\there|t\n2|line\nbreak|t\n3||t\n4|back\\slash|t\n5|semi;colon|t\n6||f\n"
    );
    assert_eq!(server.query("SELECT count(*) FROM notes WHERE body IS NULL"), "2\n");

    // Out again: \copy to a file, read back as it went in.
    let back = dir.path().join("back.csv");
    let out = server.psql(&[
        "-c",
        &format!("\\copy (SELECT k, body FROM notes ORDER BY k) to '{}' with csv header", back.display()),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "COPY 6");
    assert_eq!(
        std::fs::read_to_string(&back).unwrap(),
        "k,body\n1,tab\there\n2,\"line\nbreak\"\n3,\n4,back\\slash\n5,semi;colon\n6,\n"
    );
    let out = server.query("COPY notes (k, body) TO STDOUT");
    assert_eq!(out, "1\ttab\\there\n2\tline\\nbreak\n3\t\\N\n4\tback\\\\slash\n5\tsemi;colon\n6\t\\N\n");
    assert_eq!(server.terminate().code(), Some(0));
}

#[test]
fn a_bad_row_fails_the_whole_copy_with_its_line() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE t (k BIGINT PRIMARY KEY, v TEXT NOT NULL)");
    server.query("INSERT INTO t VALUES (100, 'before')");

    // A type error on line 3 (the header is line 1).
    let csv = dir.path().join("bad.csv");
    std::fs::write(&csv, "k,v\n1,a\nx,b\n3,c\n").unwrap();
    let copy = format!("\\copy t from '{}' with csv header", csv.display());
    let out = server.psql(&["-c", "\\set VERBOSITY verbose", "-c", &copy]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("22P02") || stderr.contains("42804"), "a type error: {stderr}");
    assert!(stderr.contains("CONTEXT:  COPY t, line 3"), "{stderr}");

    // A duplicate key with the row already in the table, and one within the data.
    std::fs::write(&csv, "1\ta\n2\tb\n100\tdup\n").unwrap();
    let copy = format!("\\copy t from '{}'", csv.display());
    let out = server.psql(&["-c", "\\set VERBOSITY verbose", "-c", &copy]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("23505") && stderr.contains("COPY t, line 3"), "{stderr}");
    std::fs::write(&csv, "1\ta\n2\tb\n3\tc\n2\tagain\n").unwrap();
    let out = server.psql(&["-c", &copy]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("COPY t, line 4"), "{stderr}");
    // Wrong number of fields, a NULL in a NOT NULL column.
    std::fs::write(&csv, "1\ta\n2\n").unwrap();
    let stderr = String::from_utf8(server.psql(&["-c", &copy]).stderr).unwrap();
    assert!(stderr.contains("missing data for column \"v\"") && stderr.contains("line 2"), "{stderr}");
    std::fs::write(&csv, "1\ta\textra\n").unwrap();
    let stderr = String::from_utf8(server.psql(&["-c", &copy]).stderr).unwrap();
    assert!(stderr.contains("extra data after last expected column"), "{stderr}");
    std::fs::write(&csv, "1\ta\n2\t\\N\n").unwrap();
    let stderr = String::from_utf8(server.psql(&["-c", &copy]).stderr).unwrap();
    assert!(stderr.contains("line 2"), "{stderr}");
    assert_eq!(server.query("SELECT k FROM t"), "100\n", "no failed COPY left a row");

    // Inside a block, a failed COPY fails the block; the earlier statement is undone by
    // the ROLLBACK it ends with.
    let script = dir.path().join("block.sql");
    std::fs::write(
        &script,
        "BEGIN;\nINSERT INTO t VALUES (5, 'five');\nCOPY t FROM STDIN;\n6\tsix\n5\tdup\n\\.\nSELECT 1;\nROLLBACK;\n",
    )
    .unwrap();
    let out = server.psql(&["-v", "ON_ERROR_STOP=0", "-At", "-f", script.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 2") && stderr.contains("current transaction is aborted"), "{stderr}");
    assert_eq!(server.query("SELECT count(*) FROM t"), "1\n");

    // Errors before any data: unknown table or column, a file on the server.
    let error = server.query_error("COPY nosuch FROM STDIN");
    assert!(error.contains("42P01"), "{error}");
    let error = server.query_error("COPY t (k, nope) FROM STDIN");
    assert!(error.contains("42703"), "{error}");
    let error = server.query_error("COPY t FROM '/etc/passwd'");
    assert!(error.contains("0A000"), "{error}");
    let error = server.query_error("COPY t TO STDOUT (FORMAT binary)");
    assert!(error.contains("0A000"), "{error}");
    assert_eq!(server.terminate().code(), Some(0));
}
