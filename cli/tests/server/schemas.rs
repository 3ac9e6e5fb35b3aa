//! Schemas over the wire, driven by psql (issue 20): `\dn`, `\dt app.*`, `\d app.t` and
//! `\dt` under a changed search path print what PostgreSQL 15's psql prints against
//! PostgreSQL 15 (the expected texts below are its output, the owner aside: the role the
//! test connects as); SET / SET LOCAL / set_config / RESET of search_path, a quoted
//! schema name, COPY of a qualified table, DROP SCHEMA ... CASCADE's notice; schemas and
//! their rows after a kill -9.

use crate::common::{require_tool, Server};

/// Runs `script` in one psql session (aligned output, going on after errors); returns
/// (stdout, stderr).
fn run_script(server: &Server, script: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.sql");
    std::fs::write(&path, script).unwrap();
    let out = server.psql(&["-v", "ON_ERROR_STOP=0", "-f", path.to_str().unwrap()]);
    (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn psql_describes_schemas_and_their_relations_as_postgresql_does() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let (out, err) = run_script(
        &server,
        "CREATE SCHEMA app;
CREATE TABLE app.parent (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE app.t (id int PRIMARY KEY, parent_id int REFERENCES app.parent(id), v text);
CREATE INDEX t_v ON app.t (v);
CREATE TABLE pub (x int);
\\dn
\\dt app.*
\\d app.t
\\dt
SET search_path = app, public;
\\dt
SELECT current_schemas(true);
",
    );
    assert_eq!(err, "");
    let expected = "CREATE SCHEMA
CREATE TABLE
CREATE TABLE
CREATE INDEX
CREATE TABLE
      List of schemas
  Name  |       Owner       
--------+-------------------
 app    | test
 public | pg_database_owner
(2 rows)

        List of relations
 Schema |  Name  | Type  | Owner 
--------+--------+-------+-------
 app    | parent | table | test
 app    | t      | table | test
(2 rows)

                    Table \"app.t\"
  Column   |  Type   | Collation | Nullable | Default 
-----------+---------+-----------+----------+---------
 id        | integer |           | not null | 
 parent_id | integer |           |          | 
 v         | text    |           |          | 
Indexes:
    \"t_pkey\" PRIMARY KEY, btree (id)
    \"t_v\" btree (v)
Foreign-key constraints:
    \"t_parent_id_fkey\" FOREIGN KEY (parent_id) REFERENCES app.parent(id)

       List of relations
 Schema | Name | Type  | Owner 
--------+------+-------+-------
 public | pub  | table | test
(1 row)

SET
        List of relations
 Schema |  Name  | Type  | Owner 
--------+--------+-------+-------
 app    | parent | table | test
 app    | t      | table | test
 public | pub    | table | test
(3 rows)

     current_schemas     
-------------------------
 {pg_catalog,app,public}
(1 row)

";
    assert_eq!(out, expected);
    assert!(server.terminate().success());
}

#[test]
fn search_path_settings_qualified_names_copy_and_drop_cascade_over_the_wire() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let (out, err) = run_script(
        &server,
        "CREATE SCHEMA \"App\";
CREATE TABLE \"App\".items (id int PRIMARY KEY, name text);
INSERT INTO \"App\".items VALUES (1, 'one'), (2, 'two');
CREATE TABLE items (id int PRIMARY KEY, name text);
INSERT INTO items VALUES (1, 'public');
BEGIN;
SET LOCAL search_path = \"App\";
SHOW search_path;
SELECT name FROM items ORDER BY id;
COMMIT;
SHOW search_path;
SELECT name FROM items;
SELECT set_config('search_path', '\"App\", public', false);
SHOW search_path;
SELECT current_schema(), name FROM items WHERE id = 2;
UPDATE items SET name = 'deux' WHERE id = 2;
SELECT i.name, p.name FROM \"App\".items i JOIN public.items p USING (id);
\\dt
RESET search_path;
COPY \"App\".items TO STDOUT;
COPY nope.items FROM STDIN;
DROP SCHEMA \"App\" CASCADE;
SELECT * FROM \"App\".items;
",
    );
    let expected = "CREATE SCHEMA
CREATE TABLE
INSERT 0 2
CREATE TABLE
INSERT 0 1
BEGIN
SET
 search_path 
-------------
 \"App\"
(1 row)

 name 
------
 one
 two
(2 rows)

COMMIT
   search_path   
-----------------
 \"$user\", public
(1 row)

  name  
--------
 public
(1 row)

  set_config   
---------------
 \"App\", public
(1 row)

  search_path  
---------------
 \"App\", public
(1 row)

 current_schema | name 
----------------+------
 App            | two
(1 row)

UPDATE 1
 name |  name  
------+--------
 one  | public
(1 row)

       List of relations
 Schema | Name  | Type  | Owner 
--------+-------+-------+-------
 App    | items | table | test
(1 row)

RESET
1\tone
2\tdeux
DROP SCHEMA
";
    assert_eq!(out, expected);
    let err_lines: Vec<&str> = err.lines().map(|l| l.split_once(": ").map_or(l, |(_, rest)| rest)).collect();
    assert!(err_lines.iter().any(|l| l.ends_with("NOTICE:  drop cascades to table \"App\".items")), "{err}");
    assert!(err_lines.iter().any(|l| l.ends_with("ERROR:  schema \"nope\" does not exist")), "{err}");
    assert!(err_lines.iter().any(|l| l.ends_with("ERROR:  relation \"App.items\" does not exist")), "{err}");
    assert!(server.terminate().success());
}

#[test]
fn schemas_and_their_rows_survive_a_kill_9() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    // Checkpoints every 100 ms: the schemas made first are in an image by the kill.
    let server = Server::start(dir.path(), &["--checkpoint-interval-ms", "100"]);
    server.commands(&[
        "CREATE SCHEMA app",
        "CREATE TABLE app.t (id serial PRIMARY KEY, v text)",
        "INSERT INTO app.t (v) VALUES ('kept')",
        "CREATE SCHEMA dropped",
        "DROP SCHEMA dropped",
    ]);
    let images = || {
        std::fs::read_dir(dir.path().join("data"))
            .map(|d| {
                d.filter_map(Result::ok).filter(|e| e.file_name().to_string_lossy().ends_with(".img")).count()
            })
            .unwrap_or(0)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while images() == 0 {
        assert!(std::time::Instant::now() < deadline, "no checkpoint image written");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    server.commands(&[
        "CREATE SCHEMA after_checkpoint",
        "CREATE TABLE after_checkpoint.x (k int)",
        "INSERT INTO after_checkpoint.x VALUES (42)",
    ]);
    server.kill9();
    let server = Server::start(dir.path(), &[]);
    assert_eq!(
        server.query("SELECT nspname FROM pg_namespace WHERE nspname IN ('app', 'dropped', 'after_checkpoint') ORDER BY 1"),
        "after_checkpoint\napp\n"
    );
    assert_eq!(server.query("SELECT v FROM app.t"), "kept\n");
    assert_eq!(server.commands(&["SET search_path = after_checkpoint", "SELECT k FROM x"]), "SET\n42\n");
    assert!(server.terminate().success());
}
