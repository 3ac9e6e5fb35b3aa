//! pg_catalog and information_schema through SQL (see `db::catalog`): the rows of the
//! catalog relations for a schema with every kind of object, compared with what
//! PostgreSQL 15 answers for the same DDL (`catalog_schema.sql`, run on PostgreSQL
//! 15.20; the differences are named where they are), the `reg*` casts and their errors,
//! the catalog functions, and OIDs that stay put.

use crate::common::{cells, fails, one, open, pipe_rows as rows, run};

/// Every kind of object: tables with and without a primary key, a SERIAL and an
/// IDENTITY column, a UNIQUE constraint, a CHECK, a foreign key with an action, a
/// secondary index, a view and a sequence.
const SCHEMA: &str = include_str!("catalog_schema.sql");

fn create_schema(s: &mut db::Session) {
    for statement in SCHEMA.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        run(s, statement);
    }
}

#[test]
fn pg_class_lists_tables_indexes_sequences_and_views_as_postgresql_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    create_schema(&mut s);
    // PostgreSQL 15, the same query on the same DDL.
    assert_eq!(
        rows(
            &mut s,
            "SELECT relname, relkind, relnatts, relchecks, relhasindex, relam FROM pg_class \
             WHERE relnamespace = 'public'::regnamespace ORDER BY 1"
        ),
        [
            "big_children|v|2|0|false|0",
            "child|r|4|1|true|2",
            "child_id_seq|S|3|0|false|0",
            "child_made_idx|i|1|0|false|403",
            "child_pkey|i|1|0|false|403",
            "events|r|2|0|true|2",
            "events_id_seq|S|3|0|false|0",
            "events_pkey|i|1|0|false|403",
            "logs|r|1|0|false|2",
            "parent|r|3|0|true|2",
            "parent_code_key|i|1|0|false|403",
            "parent_pkey|i|1|0|false|403",
            "tickets|S|3|0|false|0",
        ]
    );
    // The catalog's own relations are in pg_catalog with PostgreSQL's OIDs, and
    // `pg_class` is `pg_catalog.pg_class`.
    assert_eq!(one(&mut s, "SELECT 'pg_class'::regclass::oid"), "1259");
    assert_eq!(
        one(&mut s, "SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'pg_catalog' AND c.relname = 'pg_attribute'"),
        "1"
    );
    assert_eq!(
        rows(&mut s, "SELECT oid, nspname FROM pg_namespace ORDER BY oid"),
        ["11|pg_catalog", "99|pg_toast", "2200|public", "13207|information_schema"]
    );
}

#[test]
fn constraints_indexes_columns_and_defaults_match_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    create_schema(&mut s);
    // PostgreSQL deparses a CHECK's condition (`qty > (0)::numeric`); the database
    // keeps it as written.
    assert_eq!(
        rows(
            &mut s,
            "SELECT conname, contype, pg_get_constraintdef(oid), conrelid::regclass, confrelid <> 0, \
             confupdtype, confdeltype FROM pg_constraint ORDER BY 1"
        ),
        [
            "child_parent_id_fkey|f|FOREIGN KEY (parent_id) REFERENCES parent(id) ON DELETE CASCADE|child|true|a|c",
            "child_pkey|p|PRIMARY KEY (id)|child|false| | ",
            "child_qty_check|c|CHECK ((qty > 0))|child|false| | ",
            "events_pkey|p|PRIMARY KEY (id)|events|false| | ",
            "parent_code_key|u|UNIQUE (code)|parent|false| | ",
            "parent_pkey|p|PRIMARY KEY (id)|parent|false| | ",
        ]
    );
    assert_eq!(
        one(&mut s, "SELECT pg_get_constraintdef(oid, true) FROM pg_constraint WHERE contype = 'c'"),
        "CHECK (qty > 0)"
    );
    // A foreign key's index is the parent's key it references.
    assert_eq!(
        one(&mut s, "SELECT conindid::regclass FROM pg_constraint WHERE contype = 'f'"),
        "parent_pkey"
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT c.relname, i.indisunique, i.indisprimary, pg_get_indexdef(i.indexrelid) \
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid ORDER BY 1"
        ),
        [
            "child_made_idx|false|false|CREATE INDEX child_made_idx ON public.child USING btree (made)",
            "child_pkey|true|true|CREATE UNIQUE INDEX child_pkey ON public.child USING btree (id)",
            "events_pkey|true|true|CREATE UNIQUE INDEX events_pkey ON public.events USING btree (id)",
            "parent_code_key|true|false|CREATE UNIQUE INDEX parent_code_key ON public.parent USING btree (code)",
            "parent_pkey|true|true|CREATE UNIQUE INDEX parent_pkey ON public.parent USING btree (id)",
        ]
    );
    assert_eq!(one(&mut s, "SELECT pg_get_indexdef('child_made_idx'::regclass, 1, true)"), "made");
    assert_eq!(
        rows(
            &mut s,
            "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.atthasdef, \
             a.attidentity FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid \
             WHERE c.relname IN ('parent', 'child', 'events', 'logs', 'big_children') AND a.attnum > 0 \
             ORDER BY c.relname, a.attnum"
        ),
        [
            "big_children|id|bigint|false|false|",
            "big_children|qty|numeric(10,2)|false|false|",
            "child|id|bigint|true|true|",
            "child|parent_id|bigint|true|false|",
            "child|qty|numeric(10,2)|false|false|",
            "child|made|timestamp with time zone|false|false|",
            "events|id|bigint|true|false|a",
            "events|tag|character(3)|false|false|",
            "logs|msg|text|false|false|",
            "parent|id|bigint|true|false|",
            "parent|code|character varying(10)|false|false|",
            "parent|note|text|false|true|",
        ]
    );
    // As PostgreSQL prints them: the text default with its type (`catalog::deparse`).
    assert_eq!(
        rows(
            &mut s,
            "SELECT adrelid::regclass, adnum, pg_get_expr(adbin, adrelid) FROM pg_attrdef ORDER BY 1, 2"
        )
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>(),
        ["child|1|nextval('child_id_seq'::regclass)", "parent|3|'none'::text"].map(String::from).into()
    );
    assert_eq!(
        rows(&mut s, "SELECT seqrelid::regclass, seqstart, seqincrement, seqmin, seqmax, seqcycle FROM pg_sequence WHERE seqrelid = 'tickets'::regclass"),
        ["tickets|100|1|1|9223372036854775807|false"]
    );
    // A relation's own dependencies (classid pg_class): the sequences' on their columns.
    // (The view's rule depends on what it reads: `view_dependencies.rs`.)
    assert_eq!(
        rows(
            &mut s,
            "SELECT objid::regclass, refobjid::regclass, refobjsubid, deptype FROM pg_depend \
             WHERE classid = 'pg_class'::regclass ORDER BY 1"
        ),
        ["child_id_seq|child|1|a", "events_id_seq|events|1|i"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT r.rulename, c.relname, d.refobjid::regclass, d.refobjsubid, d.deptype FROM pg_depend d \
             JOIN pg_rewrite r ON r.oid = d.objid JOIN pg_class c ON c.oid = r.ev_class \
             WHERE d.classid = 'pg_rewrite'::regclass ORDER BY 3, 4, 5"
        )
        .len(),
        2 + 2,
        "the view's rule: internal and normal on the view, normal on the two columns it reads"
    );
}

#[test]
fn information_schema_answers_as_postgresql_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    create_schema(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1"
        ),
        ["big_children|VIEW", "child|BASE TABLE", "events|BASE TABLE", "logs|BASE TABLE", "parent|BASE TABLE"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT table_name, column_name, data_type, is_nullable, character_maximum_length, numeric_precision, \
             numeric_scale, column_default, is_identity FROM information_schema.columns \
             WHERE table_schema = 'public' AND table_name IN ('parent', 'child', 'events') \
             ORDER BY table_name, ordinal_position"
        ),
        [
            "child|id|bigint|NO|NULL|64|0|nextval('child_id_seq'::regclass)|NO",
            "child|parent_id|bigint|NO|NULL|64|0|NULL|NO",
            "child|qty|numeric|YES|NULL|10|2|NULL|NO",
            "child|made|timestamp with time zone|YES|NULL|NULL|NULL|NULL|NO",
            "events|id|bigint|NO|NULL|64|0|NULL|YES",
            "events|tag|character|YES|3|NULL|NULL|NULL|NO",
            "parent|id|bigint|NO|NULL|64|0|NULL|NO",
            "parent|code|character varying|YES|10|NULL|NULL|NULL|NO",
            "parent|note|text|YES|NULL|NULL|NULL|'none'::text|NO",
        ]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT constraint_name, table_name, constraint_type FROM information_schema.table_constraints \
             WHERE table_schema = 'public' AND constraint_type <> 'CHECK' ORDER BY 1"
        ),
        [
            "child_parent_id_fkey|child|FOREIGN KEY",
            "child_pkey|child|PRIMARY KEY",
            "events_pkey|events|PRIMARY KEY",
            "parent_code_key|parent|UNIQUE",
            "parent_pkey|parent|PRIMARY KEY",
        ]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT constraint_name, table_name, column_name, ordinal_position, position_in_unique_constraint \
             FROM information_schema.key_column_usage WHERE table_schema = 'public' ORDER BY 1"
        ),
        [
            "child_parent_id_fkey|child|parent_id|1|1",
            "child_pkey|child|id|1|NULL",
            "events_pkey|events|id|1|NULL",
            "parent_code_key|parent|code|1|NULL",
            "parent_pkey|parent|id|1|NULL",
        ]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT constraint_name, unique_constraint_name, match_option, update_rule, delete_rule \
             FROM information_schema.referential_constraints"
        ),
        ["child_parent_id_fkey|parent_pkey|NONE|NO ACTION|CASCADE"]
    );
    // An IDENTITY column's sequence is internal to it, as in PostgreSQL.
    assert_eq!(
        rows(
            &mut s,
            "SELECT sequence_name, data_type, start_value, minimum_value, maximum_value, increment, cycle_option \
             FROM information_schema.sequences ORDER BY 1"
        ),
        ["child_id_seq|bigint|1|1|9223372036854775807|1|NO", "tickets|bigint|100|1|9223372036854775807|1|NO"]
    );
    assert_eq!(one(&mut s, "SELECT view_definition LIKE '%qty > 10%' FROM information_schema.views"), "true");
    // `tables` alone is the user's: only information_schema.tables is the catalog's.
    let error = fails(&mut s, "SELECT * FROM tables");
    assert_eq!(error.sqlstate(), "42P01", "{error}");
    let error = fails(&mut s, "SELECT * FROM information_schema.nosuch");
    assert_eq!(error.sqlstate(), "42P01", "{error}");
    let error = fails(&mut s, "DELETE FROM pg_class");
    assert!(error.to_string().contains("pg_class"), "{error}");
}

#[test]
fn reg_casts_name_objects_and_refuse_names_that_name_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    create_schema(&mut s);
    assert_eq!(one(&mut s, "SELECT 'child'::regclass"), "child");
    assert_eq!(one(&mut s, "SELECT 'public.child'::regclass = 'CHILD'::regclass"), "true");
    assert_eq!(one(&mut s, "SELECT 'child'::regclass::oid::regclass::text"), "child");
    assert_eq!(one(&mut s, "SELECT 'pg_catalog.pg_type'::regclass::oid"), "1247");
    assert_eq!(
        rows(
            &mut s,
            "SELECT 23::regtype, 'int4'::regtype::oid, 'character varying'::regtype, 2200::regnamespace"
        ),
        ["integer|23|character varying|public"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT to_regclass('nope'), to_regtype('nope'), to_regnamespace('nope'), to_regtype('integer')"
        ),
        ["NULL|NULL|NULL|integer"]
    );
    assert_eq!(fails(&mut s, "SELECT 'nope'::regclass").sqlstate(), "42P01");
    assert_eq!(fails(&mut s, "SELECT 'nope'::regtype").sqlstate(), "42704");
    assert_eq!(fails(&mut s, "SELECT 'nope'::regnamespace").sqlstate(), "3F000");
    assert_eq!(fails(&mut s, "SELECT 'x'::oid").sqlstate(), "22P02");
    // An OID is unsigned: -1 is 4294967295, as PostgreSQL reads it.
    assert_eq!(one(&mut s, "SELECT '-1'::oid"), "4294967295");
    // A text literal compares with an OID column as its number (psql's `c.oid = '16385'`).
    let oid = one(&mut s, "SELECT oid FROM pg_class WHERE relname = 'child'");
    assert_eq!(one(&mut s, &format!("SELECT relname FROM pg_class WHERE oid = '{oid}'")), "child");
}

#[test]
fn oids_stay_the_same_across_queries_other_ddl_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let named = "SELECT relname, oid FROM pg_class WHERE relname IN ('child', 'parent', 'child_pkey', 'child_parent_id_fkey') \
                 UNION ALL SELECT conname, oid FROM pg_constraint WHERE conname = 'child_parent_id_fkey' ORDER BY 1";
    let before = {
        let db = open(dir.path());
        let mut s = db.session();
        create_schema(&mut s);
        let before = cells(&mut s, "SELECT relname, oid FROM pg_class WHERE relnamespace = 2200 ORDER BY 1");
        assert!(before.iter().all(|r| r[1].parse::<i64>().is_ok_and(|o| (16384..1 << 31).contains(&o))));
        let distinct: std::collections::BTreeSet<_> = before.iter().map(|r| r[1].clone()).collect();
        assert_eq!(distinct.len(), before.len(), "one OID each: {before:?}");
        run(&mut s, "CREATE TABLE other (id BIGINT PRIMARY KEY)");
        run(&mut s, "DROP TABLE logs");
        let after_ddl = cells(&mut s, named);
        assert_eq!(after_ddl.len(), 4, "{after_ddl:?}");
        assert!(
            after_ddl.iter().all(|r| before.contains(r) || r[0] == "child_parent_id_fkey"),
            "{after_ddl:?}"
        );
        after_ddl
    };
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(cells(&mut s, named), before, "after a restart");
}

#[test]
fn catalog_functions_and_regex_operators_answer_as_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    create_schema(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT pg_get_serial_sequence('child', 'id'), pg_get_serial_sequence('events', 'id'), \
             format_type(1043, 14), format_type(1700, 655366), format_type(20, NULL), pg_encoding_to_char(6)"
        ),
        ["public.child_id_seq|public.events_id_seq|character varying(10)|numeric(10,2)|bigint|UTF8"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT pg_table_is_visible('child'::regclass), pg_type_is_visible(20), pg_get_userbyid(10), \
             has_table_privilege('child', 'SELECT'), current_database(), pg_is_in_recovery(), \
             obj_description('child'::regclass, 'pg_class'), pg_get_viewdef('big_children'::regclass) LIKE '%qty > 10%'"
        ),
        ["true|true|embedded|true|redodb|false|NULL|true"]
    );
    assert_eq!(fails(&mut s, "SELECT pg_get_serial_sequence('nope', 'id')").sqlstate(), "42P01");
    // No table is partitioned: a table has no partition ancestors, in FROM (as psql's `\d`
    // triggers query reads it, WITH ORDINALITY) or in a select list, as in PostgreSQL.
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM pg_catalog.pg_partition_ancestors('child') WITH ORDINALITY AS a(relid, depth)"),
        ["0"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT c.relname FROM pg_class c WHERE c.oid IN (SELECT pg_catalog.pg_partition_ancestors('child') \
             UNION ALL VALUES ('child'::pg_catalog.regclass))"
        ),
        ["child"]
    );
    assert_eq!(run(&mut s, "SELECT * FROM pg_partition_ancestors('child')").columns()[0].name, "relid");
    // Nobody is a member of a role.
    assert_eq!(rows(&mut s, "SELECT count(*) FROM pg_auth_members"), ["0"]);
    // The system column tableoid: the relation's OID on every row, qualified or not.
    assert_eq!(
        rows(
            &mut s,
            "SELECT c.tableoid = 'pg_class'::regclass, l.tableoid::regclass FROM pg_class c, pg_language l \
             WHERE c.relname = 'child' AND l.lanname = 'sql'"
        ),
        ["true|pg_language"]
    );
    run(&mut s, "INSERT INTO parent VALUES (77, 'tableoid')");
    assert_eq!(rows(&mut s, "SELECT tableoid = 'parent'::regclass FROM parent WHERE id = 77"), ["true"]);
    run(&mut s, "ROLLBACK");
    // current_setting of a name read from each row, as psql's \dconfig asks; an unknown
    // name is 42704 unless missing_ok.
    assert_eq!(
        rows(
            &mut s,
            "SELECT count(*) FROM pg_settings s WHERE current_setting(s.name) IS DISTINCT FROM s.setting"
        ),
        ["0"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT current_setting(x, true) FROM (VALUES ('nope'), ('server_version_num')) v(x) ORDER BY 1"
        ),
        ["160000", "NULL"]
    );
    assert_eq!(fails(&mut s, "SELECT current_setting(x) FROM (VALUES ('nope')) v(x)").sqlstate(), "42704");
    // The database's size is its directory's; privileges are all the owner's.
    assert_eq!(
        rows(
            &mut s,
            "SELECT pg_database_size(current_database()) > 0, pg_database_size('other') IS NULL, \
             has_database_privilege(current_database(), 'CONNECT'), pg_tablespace_location(1663)"
        ),
        ["true|true|true|"]
    );
    assert_eq!(
        rows(&mut s, "SELECT lanname, lanpltrusted FROM pg_language ORDER BY oid"),
        ["internal|false", "c|false", "sql|true"]
    );
    // `~`, `~*`, `!~`, `!~*`, and psql's spelling of them with a collation.
    assert_eq!(
        rows(
            &mut s,
            "SELECT 'abc' ~ '^a', 'ABC' ~ '^a', 'ABC' ~* '^a', 'abc' !~ 'z', 'abc' !~* 'A', NULL ~ 'a'"
        ),
        ["true|false|true|true|false|NULL"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(child.*)$' \
             COLLATE pg_catalog.default AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 1"
        ),
        ["child", "child_id_seq", "child_made_idx", "child_pkey"]
    );
    assert_eq!(fails(&mut s, "SELECT 'a' ~ '('").sqlstate(), "2201B");
}

/// The queries PgJDBC 42.5 sends for `DatabaseMetaData.getPrimaryKeys`,
/// `getCrossReference` (getImportedKeys and getExportedKeys are the same query with
/// one side's condition) and `getIndexInfo`, as PostgreSQL 15's log recorded them
/// (`log_statement = all`) for the schema of issue 20's PgJDBC judge
/// (`cli/tests/clients/JdbcMetadataJudge.java`), answered here through the catalog as
/// PostgreSQL answers them: `information_schema._pg_expandarray` of an int2vector,
/// `(f(x)).n` and `(result.KEYS).x`, `con.confkey[pos.n]` over
/// `generate_series(1, 32) pos(n)`, `I_INDOPTION[ORDINAL_POSITION - 1] & 1::smallint`.
#[test]
fn pgjdbcs_metadata_queries_give_postgresqls_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    for statement in include_str!("pgjdbc_schema.sql").split(';').map(str::trim).filter(|s| !s.is_empty()) {
        run(&mut s, statement);
    }
    // The named columns of each row, joined by `|` (NULL as nothing, as psql -A).
    let mut columns = |sql: &str, names: &[&str]| -> Vec<String> {
        let result = run(&mut s, sql);
        let at: Vec<usize> = names
            .iter()
            .map(|n| {
                result.columns().iter().position(|c| c.name == *n).unwrap_or_else(|| panic!("no column {n}"))
            })
            .collect();
        let text = |v: &db::Value| if v.is_null() { String::new() } else { v.to_string() };
        result
            .rows()
            .iter()
            .map(|row| at.iter().map(|&i| text(&row[i])).collect::<Vec<_>>().join("|"))
            .collect()
    };
    assert_eq!(
        columns(
            include_str!("pgjdbc_primary_keys.sql"),
            &["table_cat", "table_schem", "table_name", "column_name", "key_seq", "pk_name"]
        ),
        ["|public|jm_line|order_id|1|jm_line_pkey", "|public|jm_line|line_no|2|jm_line_pkey"]
    );
    assert_eq!(
        columns(
            include_str!("pgjdbc_cross_reference.sql"),
            &[
                "pktable_cat",
                "pktable_schem",
                "pktable_name",
                "pkcolumn_name",
                "fktable_cat",
                "fktable_schem",
                "fktable_name",
                "fkcolumn_name",
                "key_seq",
                "update_rule",
                "delete_rule",
                "fk_name",
                "pk_name",
                "deferrability",
            ]
        ),
        [
            "|public|jm_line|order_id||public|jm_note|order_id|1|0|2|jm_note_line_fk|jm_line_pkey|7",
            "|public|jm_line|line_no||public|jm_note|line_no|2|0|2|jm_note_line_fk|jm_line_pkey|7",
        ]
    );
    // Without the cardinality and pages columns: the database keeps no statistics of
    // its indexes (PostgreSQL answers 0 and 1 for an index of an empty table).
    assert_eq!(
        columns(
            include_str!("pgjdbc_index_info.sql"),
            &[
                "table_cat",
                "table_schem",
                "table_name",
                "non_unique",
                "index_qualifier",
                "index_name",
                "type",
                "ordinal_position",
                "column_name",
                "asc_or_desc",
                "filter_condition",
            ]
        ),
        [
            "|public|jm_line|false||jm_line_pkey|3|1|order_id|A|",
            "|public|jm_line|false||jm_line_pkey|3|2|line_no|A|",
            "|public|jm_line|true||jm_line_shipped_amount_idx|3|1|shipped|A|",
            "|public|jm_line|true||jm_line_shipped_amount_idx|3|2|amount|A|",
        ]
    );
}

/// COMMENT ON TABLE / VIEW / COLUMN: read back through obj_description, col_description
/// and pg_description, kept in step by DROP COLUMN, removed by NULL or '', and recovered
/// from the redo after a reopen; PostgreSQL 15's errors.
#[test]
fn comments_on_tables_views_and_columns_are_kept_and_recovered() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE TABLE ct (id INT PRIMARY KEY, name TEXT, gone INT, price INT)");
        run(&mut s, "CREATE VIEW cv AS SELECT id FROM ct");
        run(&mut s, "COMMENT ON TABLE ct IS 'The table'");
        run(&mut s, "COMMENT ON COLUMN ct.name IS 'Its name'");
        run(&mut s, "COMMENT ON COLUMN public.ct.price IS 'Its price'");
        run(&mut s, "COMMENT ON VIEW cv IS 'A view'");
        assert_eq!(
            rows(
                &mut s,
                "SELECT obj_description('ct'::regclass, 'pg_class'), col_description('ct'::regclass, 2), \
                 col_description('ct'::regclass, 1) IS NULL, obj_description('cv'::regclass)"
            ),
            ["The table|Its name|true|A view"]
        );
        // A replaced view is the same view: its comments stay, as PostgreSQL keeps them.
        run(&mut s, "COMMENT ON COLUMN cv.id IS 'Its id'");
        run(&mut s, "CREATE OR REPLACE VIEW cv AS SELECT id, name FROM ct");
        assert_eq!(
            rows(&mut s, "SELECT obj_description('cv'::regclass), col_description('cv'::regclass, 1)"),
            ["A view|Its id"]
        );
        // The columns after a dropped one move down a place (as redodb numbers them).
        run(&mut s, "ALTER TABLE ct DROP COLUMN gone");
        assert_eq!(
            rows(
                &mut s,
                "SELECT objsubid, description FROM pg_description WHERE objoid = 'ct'::regclass ORDER BY 1"
            ),
            ["0|The table", "2|Its name", "3|Its price"]
        );
        assert_eq!(fails(&mut s, "COMMENT ON TABLE cv IS 'x'").sqlstate(), "42809");
        assert_eq!(fails(&mut s, "COMMENT ON COLUMN ct.nope IS 'x'").sqlstate(), "42703");
        assert_eq!(fails(&mut s, "COMMENT ON TABLE nope IS 'x'").sqlstate(), "42P01");
    }
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(
        rows(
            &mut s,
            "SELECT objsubid, description FROM pg_description WHERE objoid = 'ct'::regclass ORDER BY 1"
        ),
        ["0|The table", "2|Its name", "3|Its price"]
    );
    assert_eq!(
        rows(&mut s, "SELECT obj_description('cv'::regclass), col_description('cv'::regclass, 1)"),
        ["A view|Its id"]
    );
    run(&mut s, "COMMENT ON COLUMN ct.name IS NULL");
    run(&mut s, "COMMENT ON TABLE ct IS ''");
    assert_eq!(rows(&mut s, "SELECT objsubid FROM pg_description WHERE objoid = 'ct'::regclass"), ["3"]);
}

/// pg_cast and pg_operator hold PostgreSQL 15's rows for the casts and operators the
/// executor implements (the same queries on PostgreSQL 15 give these rows), each cast's
/// function is in pg_proc and runs as the cast, and the catalogs of what the database
/// has none of (conversions, text search, operator families) are empty with
/// PostgreSQL's columns.
#[test]
fn casts_and_operators_are_postgresqls_and_text_search_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(
        rows(
            &mut s,
            "SELECT castsource::regtype, casttarget::regtype, castcontext, castmethod FROM pg_cast \
             WHERE castsource = 'int8'::regtype AND casttarget IN ('int2'::regtype, 'int4'::regtype, \
             'numeric'::regtype, 'float8'::regtype) ORDER BY casttarget"
        ),
        ["bigint|smallint|a|f", "bigint|integer|a|f", "bigint|double precision|i|f", "bigint|numeric|i|f"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT c.castmethod, p.proname FROM pg_cast c JOIN pg_proc p ON p.oid = c.castfunc \
             WHERE c.castsource = 'int8'::regtype AND c.casttarget = 'int4'::regtype"
        ),
        ["f|int4"]
    );
    // Every cast through a function names one pg_proc lists; the others name none.
    assert_eq!(
        one(
            &mut s,
            "SELECT count(*) FROM pg_cast c LEFT JOIN pg_proc p ON p.oid = c.castfunc \
             WHERE (c.castmethod = 'f') <> (p.oid IS NOT NULL)"
        ),
        "0"
    );
    // Every listed cast runs: from each source type's sample to its target (the
    // samples cover every source pg_cast names).
    let casts =
        rows(&mut s, "SELECT format_type(castsource, NULL), format_type(casttarget, NULL) FROM pg_cast");
    assert!(casts.len() > 60, "{casts:?}");
    for pair in &casts {
        let (source, target) = pair.split_once('|').unwrap();
        let sample = match source {
            "boolean" => "true",
            "\"char\"" | "character" | "character varying" | "text" => "'1'",
            "json" | "jsonb" => "'{\"a\": 1}'",
            "date" => "'2020-01-02'",
            "time without time zone" => "'01:02:03'",
            "timestamp without time zone" | "timestamp with time zone" => "'2020-01-02 01:02:03'",
            "interval" => "'1 hour'",
            "oid" => "1",
            _ => "1.5",
        };
        one(&mut s, &format!("SELECT CAST(CAST({sample} AS {source}) AS {target})"));
    }
    assert_eq!(one(&mut s, "SELECT int2(4.6)"), "5");

    assert_eq!(
        rows(
            &mut s,
            "SELECT oid, oprname, oprkind, oprleft::regtype, oprright::regtype, oprresult::regtype, \
             oprcom, oprnegate, oprcanhash FROM pg_operator WHERE oprname = '->>' ORDER BY 1"
        ),
        [
            "3477|->>|b|jsonb|text|text|0|0|false",
            "3481|->>|b|jsonb|integer|text|0|0|false",
            "3963|->>|b|json|text|text|0|0|false",
            "3965|->>|b|json|integer|text|0|0|false",
        ]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT oprname, obj_description(oid, 'pg_operator'), pg_operator_is_visible(oid) \
             FROM pg_operator WHERE oid IN (98, 531) ORDER BY 1"
        ),
        ["<>|not equal|true", "=|equal|true"]
    );
    // An operator's types are types, its commutator and negator operators.
    assert_eq!(
        one(
            &mut s,
            "SELECT count(*) FROM pg_operator o LEFT JOIN pg_type r ON r.oid = o.oprright \
             LEFT JOIN pg_type t ON t.oid = o.oprresult \
             WHERE r.oid IS NULL OR t.oid IS NULL \
             OR (o.oprcom <> 0 AND o.oprcom NOT IN (SELECT oid FROM pg_operator)) \
             OR (o.oprnegate <> 0 AND o.oprnegate NOT IN (SELECT oid FROM pg_operator))"
        ),
        "0"
    );
    assert_eq!(one(&mut s, "SELECT pg_operator_is_visible(1)"), "NULL");
    // `~~` and its kin, as pg_operator names LIKE and ILIKE, are LIKE and ILIKE.
    assert_eq!(
        rows(
            &mut s,
            "SELECT 'abc' ~~ 'a%', 'abc' !~~ 'a_c', 'ABC' ~~* 'a%', 'ABC' !~~* 'x%', 'a%' ~~ 'a\\%'"
        ),
        ["true|false|true|true|true"]
    );

    for query in [
        "SELECT conname, connamespace, conforencoding, contoencoding, conproc, condefault FROM pg_conversion",
        "SELECT cfgname, cfgnamespace, cfgparser FROM pg_ts_config",
        "SELECT dictname, dictnamespace, dicttemplate, dictinitoption FROM pg_ts_dict",
        "SELECT prsname, prsnamespace, prsstart, prslextype FROM pg_ts_parser",
        "SELECT tmplname, tmplnamespace, tmplinit, tmpllexize FROM pg_ts_template",
        "SELECT opfname, opfmethod, opfnamespace FROM pg_opfamily",
    ] {
        assert_eq!(cells(&mut s, query), Vec::<Vec<String>>::new(), "{query}");
    }
    assert_eq!(
        rows(
            &mut s,
            "SELECT pg_ts_config_is_visible(1), pg_conversion_is_visible(1), pg_opclass_is_visible(3124)"
        ),
        ["NULL|NULL|true"]
    );
    // A bare bpchar: `character` when no modifier is asked about, `bpchar` for -1.
    assert_eq!(rows(&mut s, "SELECT format_type(1042, NULL), format_type(1042, -1)"), ["character|bpchar"]);
}
