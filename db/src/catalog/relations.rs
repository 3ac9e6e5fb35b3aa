//! The catalog's relations: their columns (PostgreSQL 15's, in its order) and their rows,
//! built for each statement from the schemas committed at that moment.
//!
//! Each relation is defined by PostgreSQL's own column list (`name:type`, as
//! `format_type` prints the types), so a column is checked against the real catalog by
//! reading the two side by side. Rows are built by column name; a column a row does not
//! give is NULL.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::catalog::operators::{CASTS, CAST_FUNCTIONS, OPERATORS, PG_OPERATOR_OID};
use crate::catalog::{
    constraint_oid, deparse, index_oid, object_oid, primary_key_name, type_modifier, type_oid, ObjectKind,
    Objects, Relation, BTREE_AM_OID, BUILTIN_TYPES, DATABASE_OID, DEFAULT_COLLATION_OID, HEAP_AM_OID,
    INFORMATION_SCHEMA_OID, OWNER_OID, PG_CATALOG_OID, PUBLIC_OID,
};
use crate::database::Session;
use crate::error::DbResult;
use crate::schema::{Column, Row, TableSchema};
use crate::value::{Array, CatalogType, DataType, ElemType, Value};

/// A catalog relation: its schema, internal name, OID and PostgreSQL's column list.
struct Definition {
    /// As FROM names it: `pg_class`, `information_schema.tables`.
    name: &'static str,
    oid: i64,
    /// r: a table of PostgreSQL's catalog, v: one of its views.
    kind: char,
    columns: &'static str,
}

const fn def(name: &'static str, oid: i64, kind: char, columns: &'static str) -> Definition {
    Definition { name, oid, kind, columns }
}

const DEFINITIONS: &[Definition] = &[
    def("pg_class", 1259, 'r', "oid:oid relname:name relnamespace:oid reltype:oid reloftype:oid relowner:oid relam:oid relfilenode:oid reltablespace:oid relpages:integer reltuples:real relallvisible:integer reltoastrelid:oid relhasindex:boolean relisshared:boolean relpersistence:\"char\" relkind:\"char\" relnatts:smallint relchecks:smallint relhasrules:boolean relhastriggers:boolean relhassubclass:boolean relrowsecurity:boolean relforcerowsecurity:boolean relispopulated:boolean relreplident:\"char\" relispartition:boolean relrewrite:oid relfrozenxid:xid relminmxid:xid relacl:aclitem[] reloptions:text[] relpartbound:pg_node_tree"),
    def("pg_namespace", 2615, 'r', "oid:oid nspname:name nspowner:oid nspacl:aclitem[]"),
    def("pg_attribute", 1249, 'r', "attrelid:oid attname:name atttypid:oid attstattarget:integer attlen:smallint attnum:smallint attndims:integer attcacheoff:integer atttypmod:integer attbyval:boolean attalign:\"char\" attstorage:\"char\" attcompression:\"char\" attnotnull:boolean atthasdef:boolean atthasmissing:boolean attidentity:\"char\" attgenerated:\"char\" attisdropped:boolean attislocal:boolean attinhcount:integer attcollation:oid attacl:aclitem[] attoptions:text[] attfdwoptions:text[] attmissingval:anyarray"),
    def("pg_type", 1247, 'r', "oid:oid typname:name typnamespace:oid typowner:oid typlen:smallint typbyval:boolean typtype:\"char\" typcategory:\"char\" typispreferred:boolean typisdefined:boolean typdelim:\"char\" typrelid:oid typsubscript:regproc typelem:oid typarray:oid typinput:regproc typoutput:regproc typreceive:regproc typsend:regproc typmodin:regproc typmodout:regproc typanalyze:regproc typalign:\"char\" typstorage:\"char\" typnotnull:boolean typbasetype:oid typtypmod:integer typndims:integer typcollation:oid typdefaultbin:pg_node_tree typdefault:text typacl:aclitem[]"),
    def("pg_index", 2610, 'r', "indexrelid:oid indrelid:oid indnatts:smallint indnkeyatts:smallint indisunique:boolean indnullsnotdistinct:boolean indisprimary:boolean indisexclusion:boolean indimmediate:boolean indisclustered:boolean indisvalid:boolean indcheckxmin:boolean indisready:boolean indislive:boolean indisreplident:boolean indkey:int2vector indcollation:oidvector indclass:oidvector indoption:int2vector indexprs:pg_node_tree indpred:pg_node_tree"),
    def("pg_constraint", 2606, 'r', "oid:oid conname:name connamespace:oid contype:\"char\" condeferrable:boolean condeferred:boolean convalidated:boolean conrelid:oid contypid:oid conindid:oid conparentid:oid confrelid:oid confupdtype:\"char\" confdeltype:\"char\" confmatchtype:\"char\" conislocal:boolean coninhcount:integer connoinherit:boolean conkey:smallint[] confkey:smallint[] conpfeqop:oid[] conppeqop:oid[] conffeqop:oid[] confdelsetcols:smallint[] conexclop:oid[] conbin:pg_node_tree"),
    def("pg_attrdef", 2604, 'r', "oid:oid adrelid:oid adnum:smallint adbin:pg_node_tree"),
    def("pg_depend", 2608, 'r', "classid:oid objid:oid objsubid:integer refclassid:oid refobjid:oid refobjsubid:integer deptype:\"char\""),
    def("pg_description", 2609, 'r', "objoid:oid classoid:oid objsubid:integer description:text"),
    def("pg_am", 2601, 'r', "oid:oid amname:name amhandler:regproc amtype:\"char\""),
    def("pg_collation", 3456, 'r', "oid:oid collname:name collnamespace:oid collowner:oid collprovider:\"char\" collisdeterministic:boolean collencoding:integer collcollate:text collctype:text colliculocale:text collversion:text"),
    def("pg_language", 2612, 'r', "oid:oid lanname:name lanowner:oid lanispl:boolean lanpltrusted:boolean lanplcallfoid:oid laninline:oid lanvalidator:oid lanacl:aclitem[]"),
    def("pg_extension", 3079, 'r', "oid:oid extname:name extowner:oid extnamespace:oid extrelocatable:boolean extversion:text extconfig:oid[] extcondition:text[]"),
    def("pg_enum", 3501, 'r', "oid:oid enumtypid:oid enumsortorder:real enumlabel:name"),
    def("pg_event_trigger", 3466, 'r', "oid:oid evtname:name evtevent:name evtowner:oid evtfoid:oid evtenabled:\"char\" evttags:text[]"),
    def("pg_db_role_setting", 2964, 'r', "setdatabase:oid setrole:oid setconfig:text[]"),
    def("pg_foreign_data_wrapper", 2328, 'r', "oid:oid fdwname:name fdwowner:oid fdwhandler:oid fdwvalidator:oid fdwacl:aclitem[] fdwoptions:text[]"),
    def("pg_foreign_server", 1417, 'r', "oid:oid srvname:name srvowner:oid srvfdw:oid srvtype:text srvversion:text srvacl:aclitem[] srvoptions:text[]"),
    def("pg_auth_members", 1261, 'r', "roleid:oid member:oid grantor:oid admin_option:boolean"),
    def("pg_inherits", 2611, 'r', "inhrelid:oid inhparent:oid inhseqno:integer inhdetachpending:boolean"),
    def("pg_sequence", 2224, 'r', "seqrelid:oid seqtypid:oid seqstart:bigint seqincrement:bigint seqmax:bigint seqmin:bigint seqcache:bigint seqcycle:boolean"),
    def("pg_tablespace", 1213, 'r', "oid:oid spcname:name spcowner:oid spcacl:aclitem[] spcoptions:text[]"),
    def("pg_opclass", 2616, 'r', "oid:oid opcmethod:oid opcname:name opcnamespace:oid opcowner:oid opcfamily:oid opcintype:oid opcdefault:boolean opckeytype:oid"),
    def("pg_database", 1262, 'r', "oid:oid datname:name datdba:oid encoding:integer datlocprovider:\"char\" datistemplate:boolean datallowconn:boolean datconnlimit:integer datfrozenxid:xid datminmxid:xid dattablespace:oid datcollate:text datctype:text daticulocale:text datcollversion:text datacl:aclitem[]"),
    def("pg_tables", 12090, 'v', "schemaname:name tablename:name tableowner:name tablespace:name hasindexes:boolean hasrules:boolean hastriggers:boolean rowsecurity:boolean"),
    def("pg_views", 12085, 'v', "schemaname:name viewname:name viewowner:name definition:text"),
    def("pg_indexes", 12099, 'v', "schemaname:name tablename:name indexname:name tablespace:name indexdef:text"),
    def("pg_roles", 12000, 'v', "rolname:name rolsuper:boolean rolinherit:boolean rolcreaterole:boolean rolcreatedb:boolean rolcanlogin:boolean rolreplication:boolean rolconnlimit:integer rolpassword:text rolvaliduntil:timestamp with time zone rolbypassrls:boolean rolconfig:text[] oid:oid"),
    def("pg_user", 12014, 'v', "usename:name usesysid:oid usecreatedb:boolean usesuper:boolean userepl:boolean usebypassrls:boolean passwd:text valuntil:timestamp with time zone useconfig:text[]"),
    def("pg_proc", 1255, 'r', "oid:oid proname:name pronamespace:oid proowner:oid prolang:oid procost:real prorows:real provariadic:oid prosupport:regproc prokind:\"char\" prosecdef:boolean proleakproof:boolean proisstrict:boolean proretset:boolean provolatile:\"char\" proparallel:\"char\" pronargs:smallint pronargdefaults:smallint prorettype:oid proargtypes:oidvector proallargtypes:oid[] proargmodes:\"char\"[] proargnames:text[] proargdefaults:pg_node_tree protrftypes:oid[] prosrc:text probin:text prosqlbody:pg_node_tree proconfig:text[] proacl:aclitem[]"),
    def("pg_cursors", 12077, 'v', "name:text statement:text is_holdable:boolean is_binary:boolean is_scrollable:boolean creation_time:timestamp with time zone"),
    def("pg_settings", 12104, 'v', "name:text setting:text unit:text category:text short_desc:text extra_desc:text context:text vartype:text source:text min_val:text max_val:text enumvals:text[] boot_val:text reset_val:text sourcefile:text sourceline:integer pending_restart:boolean"),
    def("pg_policy", 3256, 'r', "oid:oid polname:name polrelid:oid polcmd:\"char\" polpermissive:boolean polroles:oid[] polqual:pg_node_tree polwithcheck:pg_node_tree"),
    def("pg_trigger", 2620, 'r', "oid:oid tgrelid:oid tgparentid:oid tgname:name tgfoid:oid tgtype:smallint tgenabled:\"char\" tgisinternal:boolean tgconstrrelid:oid tgconstrindid:oid tgconstraint:oid tgdeferrable:boolean tginitdeferred:boolean tgnargs:smallint tgattr:int2vector tgargs:bytea tgqual:pg_node_tree tgoldtable:name tgnewtable:name"),
    def("pg_rewrite", 2618, 'r', "oid:oid rulename:name ev_class:oid ev_type:\"char\" ev_enabled:\"char\" is_instead:boolean ev_qual:pg_node_tree ev_action:pg_node_tree"),
    def("pg_statistic_ext", 3381, 'r', "oid:oid stxrelid:oid stxname:name stxnamespace:oid stxowner:oid stxstattarget:integer stxkeys:int2vector stxkind:\"char\"[] stxexprs:pg_node_tree"),
    def("pg_publication", 6104, 'r', "oid:oid pubname:name pubowner:oid puballtables:boolean pubinsert:boolean pubupdate:boolean pubdelete:boolean pubtruncate:boolean pubviaroot:boolean"),
    def("pg_publication_rel", 6106, 'r', "oid:oid prpubid:oid prrelid:oid prqual:pg_node_tree prattrs:int2vector"),
    def("pg_publication_namespace", 6237, 'r', "oid:oid pnpubid:oid pnnspid:oid"),
    def("pg_cast", 2605, 'r', "oid:oid castsource:oid casttarget:oid castfunc:oid castcontext:\"char\" castmethod:\"char\""),
    def("pg_operator", 2617, 'r', "oid:oid oprname:name oprnamespace:oid oprowner:oid oprkind:\"char\" oprcanmerge:boolean oprcanhash:boolean oprleft:oid oprright:oid oprresult:oid oprcom:oid oprnegate:oid oprcode:regproc oprrest:regproc oprjoin:regproc"),
    def("pg_opfamily", 2753, 'r', "oid:oid opfmethod:oid opfname:name opfnamespace:oid opfowner:oid"),
    def("pg_conversion", 2607, 'r', "oid:oid conname:name connamespace:oid conowner:oid conforencoding:integer contoencoding:integer conproc:regproc condefault:boolean"),
    def("pg_ts_config", 3602, 'r', "oid:oid cfgname:name cfgnamespace:oid cfgowner:oid cfgparser:oid"),
    def("pg_ts_dict", 3600, 'r', "oid:oid dictname:name dictnamespace:oid dictowner:oid dicttemplate:oid dictinitoption:text"),
    def("pg_ts_parser", 3601, 'r', "oid:oid prsname:name prsnamespace:oid prsstart:regproc prstoken:regproc prsend:regproc prsheadline:regproc prslextype:regproc"),
    def("pg_ts_template", 3764, 'r', "oid:oid tmplname:name tmplnamespace:oid tmplinit:regproc tmpllexize:regproc"),
    def("information_schema.schemata", 13382, 'v', "catalog_name:sql_identifier schema_name:sql_identifier schema_owner:sql_identifier default_character_set_catalog:sql_identifier default_character_set_schema:sql_identifier default_character_set_name:sql_identifier sql_path:character_data"),
    def("information_schema.tables", 13425, 'v', "table_catalog:sql_identifier table_schema:sql_identifier table_name:sql_identifier table_type:character_data self_referencing_column_name:sql_identifier reference_generation:character_data user_defined_type_catalog:sql_identifier user_defined_type_schema:sql_identifier user_defined_type_name:sql_identifier is_insertable_into:yes_or_no is_typed:yes_or_no commit_action:character_data"),
    def("information_schema.columns", 13295, 'v', "table_catalog:sql_identifier table_schema:sql_identifier table_name:sql_identifier column_name:sql_identifier ordinal_position:cardinal_number column_default:character_data is_nullable:yes_or_no data_type:character_data character_maximum_length:cardinal_number character_octet_length:cardinal_number numeric_precision:cardinal_number numeric_precision_radix:cardinal_number numeric_scale:cardinal_number datetime_precision:cardinal_number interval_type:character_data interval_precision:cardinal_number character_set_catalog:sql_identifier character_set_schema:sql_identifier character_set_name:sql_identifier collation_catalog:sql_identifier collation_schema:sql_identifier collation_name:sql_identifier domain_catalog:sql_identifier domain_schema:sql_identifier domain_name:sql_identifier udt_catalog:sql_identifier udt_schema:sql_identifier udt_name:sql_identifier scope_catalog:sql_identifier scope_schema:sql_identifier scope_name:sql_identifier maximum_cardinality:cardinal_number dtd_identifier:sql_identifier is_self_referencing:yes_or_no is_identity:yes_or_no identity_generation:character_data identity_start:character_data identity_increment:character_data identity_maximum:character_data identity_minimum:character_data identity_cycle:yes_or_no is_generated:character_data generation_expression:character_data is_updatable:yes_or_no"),
    def("information_schema.table_constraints", 13411, 'v', "constraint_catalog:sql_identifier constraint_schema:sql_identifier constraint_name:sql_identifier table_catalog:sql_identifier table_schema:sql_identifier table_name:sql_identifier constraint_type:character_data is_deferrable:yes_or_no initially_deferred:yes_or_no enforced:yes_or_no nulls_distinct:yes_or_no"),
    def("information_schema.key_column_usage", 13329, 'v', "constraint_catalog:sql_identifier constraint_schema:sql_identifier constraint_name:sql_identifier table_catalog:sql_identifier table_schema:sql_identifier table_name:sql_identifier column_name:sql_identifier ordinal_position:cardinal_number position_in_unique_constraint:cardinal_number"),
    def("information_schema.referential_constraints", 13339, 'v', "constraint_catalog:sql_identifier constraint_schema:sql_identifier constraint_name:sql_identifier unique_constraint_catalog:sql_identifier unique_constraint_schema:sql_identifier unique_constraint_name:sql_identifier match_option:character_data update_rule:character_data delete_rule:character_data"),
    def("information_schema.sequences", 13386, 'v', "sequence_catalog:sql_identifier sequence_schema:sql_identifier sequence_name:sql_identifier data_type:character_data numeric_precision:cardinal_number numeric_precision_radix:cardinal_number numeric_scale:cardinal_number start_value:character_data minimum_value:character_data maximum_value:character_data increment:character_data cycle_option:yes_or_no"),
    def("information_schema.views", 13483, 'v', "table_catalog:sql_identifier table_schema:sql_identifier table_name:sql_identifier view_definition:character_data check_option:character_data is_updatable:yes_or_no is_insertable_into:yes_or_no is_trigger_updatable:yes_or_no is_trigger_deletable:yes_or_no is_trigger_insertable_into:yes_or_no"),
];

/// The database's type for a PostgreSQL catalog column type.
fn column_type(ty: &str) -> DataType {
    match ty {
        "oid" => DataType::Catalog(CatalogType::Oid),
        "name" | "sql_identifier" => DataType::Catalog(CatalogType::Name),
        "\"char\"" => DataType::Catalog(CatalogType::Char),
        "regproc" => DataType::Catalog(CatalogType::RegProc),
        // Subscripted from 0 and printed `1 2`, as PostgreSQL's.
        "int2vector" => DataType::Catalog(CatalogType::Int2Vector),
        "oidvector" => DataType::Catalog(CatalogType::OidVector),
        // The database keeps every integer as an int8, so smallint[] and oid[] are
        // int8[]; name[], "char"[], aclitem[] (privileges: NULL, as for an object
        // nobody granted anything on) and anyarray are text[].
        "smallint[]" | "oid[]" => DataType::Array(ElemType::Int),
        ty if ty.ends_with("[]") || ty == "anyarray" => DataType::Array(ElemType::Text),
        "smallint" | "integer" | "bigint" | "xid" | "cardinal_number" => DataType::Int,
        "real" => DataType::Float,
        "boolean" => DataType::Bool,
        "bytea" => DataType::Bytea,
        "timestamp with time zone" => DataType::TimestampTz,
        // text, pg_node_tree (kept as the expression's SQL text: see `pg_get_expr`),
        // character_data, yes_or_no.
        _ => DataType::Text { max_chars: None },
    }
}

fn parse_columns(spec: &str) -> Vec<Column> {
    let mut columns = Vec::new();
    // Types may contain blanks ("timestamp with time zone"): a new column starts at a
    // word with a colon.
    let mut current: Option<(String, String)> = None;
    for word in spec.split(' ') {
        match (word.split_once(':'), current.as_mut()) {
            (Some((name, ty)), _) => {
                if let Some(done) = current.take() {
                    columns.push(done);
                }
                current = Some((name.to_string(), ty.to_string()));
            }
            (None, Some((_, ty))) => {
                ty.push(' ');
                ty.push_str(word);
            }
            (None, None) => {}
        }
    }
    columns.extend(current);
    columns.into_iter().map(|(name, ty)| Column { name, ty: column_type(&ty), nullable: true }).collect()
}

struct Built {
    schemas: HashMap<&'static str, Arc<TableSchema>>,
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let schemas = DEFINITIONS
            .iter()
            .map(|d| {
                // Without a primary key: the hidden row id keys the rows.
                let schema = TableSchema::new(d.name, parse_columns(d.columns), Vec::new())
                    .expect("a catalog relation's definition is valid");
                (d.name, Arc::new(schema))
            })
            .collect();
        Built { schemas }
    })
}

/// The schema of catalog relation `name` (as `catalog_name` gives it).
pub fn schema(name: &str) -> Option<Arc<TableSchema>> {
    built().schemas.get(name).cloned()
}

pub fn is_relation(name: &str) -> bool {
    DEFINITIONS.iter().any(|d| d.name == name)
}

/// Every catalog relation's internal name.
pub fn relation_names() -> impl Iterator<Item = &'static str> {
    DEFINITIONS.iter().map(|d| d.name)
}

/// The catalog's own relations as pg_class lists them.
pub(crate) fn catalog_relations() -> impl Iterator<Item = Relation> {
    DEFINITIONS.iter().map(|d| {
        let (namespace, name) = match d.name.strip_prefix("information_schema.") {
            Some(n) => (INFORMATION_SCHEMA_OID, n),
            None => (PG_CATALOG_OID, d.name),
        };
        Relation {
            oid: d.oid,
            name: name.to_string(),
            namespace,
            kind: d.kind,
            table: schema(d.name),
            index: None,
            temp_of: None,
        }
    })
}

/// The functions pg_proc lists: those the SQL layer has (built in, aggregates and
/// window functions) and the catalog's.
/// The set-returning functions (`sql::srf::SetFunction`) and their schemas, as pg_proc
/// lists them (apart from `function_names`: a set-returning function is no scalar
/// call).
const SET_RETURNING_FUNCTIONS: &[(&str, i64)] = &[
    ("generate_series", PG_CATALOG_OID),
    ("generate_subscripts", PG_CATALOG_OID),
    ("unnest", PG_CATALOG_OID),
    ("_pg_expandarray", INFORMATION_SCHEMA_OID),
];

pub fn function_names() -> &'static [&'static str] {
    &[
        "abs",
        "age",
        "array_agg",
        "avg",
        "bool_and",
        "bool_or",
        "btrim",
        "ceil",
        "ceiling",
        "clock_timestamp",
        "coalesce",
        "col_description",
        "concat",
        "concat_ws",
        "count",
        "current_database",
        "current_schema",
        "current_setting",
        "currval",
        "date_part",
        "date_trunc",
        "decode",
        "dense_rank",
        "encode",
        "every",
        "floor",
        "format_type",
        "gen_random_uuid",
        "greatest",
        "has_schema_privilege",
        "has_table_privilege",
        "initcap",
        "json_array_length",
        "json_build_array",
        "json_build_object",
        "json_typeof",
        "jsonb_build_array",
        "jsonb_build_object",
        "jsonb_typeof",
        "lag",
        "lastval",
        "lead",
        "least",
        "left",
        "length",
        "lower",
        "lpad",
        "ltrim",
        "make_date",
        "max",
        "min",
        "mod",
        "nextval",
        "now",
        "nullif",
        "obj_description",
        "octet_length",
        "pg_backend_pid",
        "pg_collation_is_visible",
        "pg_encoding_to_char",
        "pg_get_constraintdef",
        "pg_get_expr",
        "pg_get_indexdef",
        "pg_get_ruledef",
        "pg_get_serial_sequence",
        "pg_get_statisticsobjdef_columns",
        "pg_get_triggerdef",
        "pg_get_userbyid",
        "pg_get_viewdef",
        "pg_is_in_recovery",
        "pg_relation_is_publishable",
        "pg_table_is_visible",
        "pg_type_is_visible",
        "power",
        "quote_ident",
        "random",
        "rank",
        "repeat",
        "replace",
        "reverse",
        "right",
        "round",
        "row_number",
        "rpad",
        "rtrim",
        "set_config",
        "setval",
        "shobj_description",
        "sign",
        "split_part",
        "sqrt",
        "stddev",
        "stddev_pop",
        "stddev_samp",
        "string_agg",
        "strpos",
        "substr",
        "substring",
        "sum",
        "to_char",
        "to_date",
        "to_json",
        "to_jsonb",
        "to_regclass",
        "to_regnamespace",
        "to_regtype",
        "to_timestamp",
        "trunc",
        "upper",
        "var_pop",
        "var_samp",
        "variance",
        "version",
    ]
}

const AGGREGATES: [&str; 16] = [
    "array_agg",
    "avg",
    "bool_and",
    "bool_or",
    "count",
    "every",
    "max",
    "min",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "string_agg",
    "sum",
    "var_pop",
    "var_samp",
    "variance",
];
const WINDOWS: [&str; 5] = ["dense_rank", "lag", "lead", "rank", "row_number"];

/// A row under construction: values by column name (a name set again: the later
/// value wins).
struct Fields(Vec<(&'static str, Value)>);

impl Fields {
    fn new() -> Fields {
        Fields(Vec::with_capacity(32))
    }
    fn set(mut self, name: &'static str, value: impl Into<Value>) -> Fields {
        self.0.push((name, value.into()));
        self
    }
}

fn oid(v: i64) -> Value {
    Value::Int(v)
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

fn flag(b: bool) -> Value {
    Value::Bool(b)
}

fn ch(c: char) -> Value {
    if c == '\0' {
        Value::Text(String::new())
    } else {
        Value::Text(c.to_string())
    }
}

/// An int2vector, oidvector or integer array of `items`.
fn int_array(items: impl IntoIterator<Item = i64>) -> Value {
    Array::new(ElemType::Int, items.into_iter().map(Value::Int).collect()).into_value()
}

/// The attribute numbers (from 1) of columns at `positions` (from 0).
fn attnums(positions: &[usize]) -> Value {
    int_array(positions.iter().map(|&c| c as i64 + 1))
}

fn yes_no(b: bool) -> Value {
    text(if b { "YES" } else { "NO" })
}

/// Lays `rows` out in `schema`'s column order, with the hidden row id last.
fn layout(schema: &TableSchema, rows: Vec<Fields>) -> Vec<Row> {
    let positions: HashMap<&str, usize> =
        schema.columns.iter().enumerate().map(|(i, c)| (c.name.as_str(), i)).collect();
    rows.into_iter()
        .enumerate()
        .map(|(n, fields)| {
            let mut row = vec![Value::Null; schema.columns.len()];
            for (name, value) in fields.0 {
                let at =
                    *positions.get(name).unwrap_or_else(|| panic!("{} has no column {name}", schema.name));
                row[at] = value;
            }
            row[schema.columns.len() - 1] = Value::Int(n as i64);
            Row::from(row)
        })
        .collect()
}

/// The SQL text of a CHECK constraint as pg_get_constraintdef prints it.
pub(crate) fn check_definition(expr: &str) -> String {
    format!("CHECK (({expr}))")
}

/// A table's constraints as pg_constraint has them: (name, type letter, definition, the
/// columns (into the table's), the index that enforces it).
pub(crate) struct ConstraintRow {
    pub oid: i64,
    pub name: String,
    pub kind: char,
    pub columns: Vec<usize>,
    pub index: Option<i64>,
    pub definition: String,
    /// A foreign key's parent, its columns, and the actions.
    pub foreign: Option<(Arc<TableSchema>, Vec<usize>, char, char)>,
    pub check: Option<String>,
}

pub(crate) fn constraints_of(objects: &Objects, table: &Arc<TableSchema>) -> Vec<ConstraintRow> {
    let names = |cols: &[usize], of: &TableSchema| {
        cols.iter().map(|&c| crate::catalog::quote_ident(&of.columns[c].name)).collect::<Vec<_>>().join(", ")
    };
    let mut out = Vec::new();
    if table.view.is_some() || table.sequence.is_some() {
        return out;
    }
    if !table.rowid {
        let name = primary_key_name(table);
        out.push(ConstraintRow {
            oid: constraint_oid(&table.name, &name),
            definition: format!("PRIMARY KEY ({})", names(&table.primary_key, table)),
            index: Some(index_oid(&table.name, &name)),
            name: crate::temp_tables::visible_name(&name).to_string(),
            kind: 'p',
            columns: table.primary_key.clone(),
            foreign: None,
            check: None,
        });
    }
    for index in table.indexes.iter().filter(|i| i.unique && i.constraint) {
        out.push(ConstraintRow {
            oid: constraint_oid(&table.name, &index.name),
            name: crate::temp_tables::visible_name(&index.name).to_string(),
            kind: 'u',
            definition: format!("UNIQUE ({})", names(&index.columns, table)),
            columns: index.columns.clone(),
            index: Some(index_oid(&table.name, &index.name)),
            foreign: None,
            check: None,
        });
    }
    for check in &table.checks {
        out.push(ConstraintRow {
            oid: constraint_oid(&table.name, &check.name),
            name: check.name.clone(),
            kind: 'c',
            definition: check_definition(&check.expr),
            columns: Vec::new(),
            index: None,
            foreign: None,
            check: Some(check.expr.clone()),
        });
    }
    for fk in &table.foreign_keys {
        let Some(parent) = objects.table(&fk.parent) else { continue };
        let parent_columns: Vec<usize> =
            fk.parent_columns.iter().filter_map(|c| parent.column_index(c).ok()).collect();
        let mut definition = format!(
            "FOREIGN KEY ({}) REFERENCES {}({})",
            names(&fk.columns, table),
            crate::catalog::qualified_name(&parent.name),
            names(&parent_columns, parent)
        );
        for (what, action) in [("UPDATE", fk.on_update), ("DELETE", fk.on_delete)] {
            if action != crate::schema::ReferentialAction::NoAction {
                definition.push_str(&format!(" ON {what} {}", action.sql()));
            }
        }
        // The parent's index the key references: its primary key or a unique index.
        let index = if parent_columns == parent.primary_key && !parent.rowid {
            Some(index_oid(&parent.name, &primary_key_name(parent)))
        } else {
            parent
                .indexes
                .iter()
                .find(|i| i.unique && i.columns == parent_columns)
                .map(|i| index_oid(&parent.name, &i.name))
        };
        out.push(ConstraintRow {
            oid: constraint_oid(&table.name, &fk.name),
            name: fk.name.clone(),
            kind: 'f',
            definition,
            columns: fk.columns.clone(),
            index,
            foreign: Some((parent.clone(), parent_columns, fk.on_update.code(), fk.on_delete.code())),
            check: None,
        });
    }
    out
}

/// `information_schema.columns.data_type` of a type.
fn information_type(ty: DataType, width: u8) -> &'static str {
    match ty {
        DataType::Int if width != 8 => {
            crate::catalog::builtin_type(declared_type_oid(ty, width)).map_or("bigint", |t| t.sql_name)
        }
        DataType::Text { max_chars: Some(_) } => "character varying",
        DataType::Char { .. } => "character",
        DataType::Numeric(_) => "numeric",
        DataType::Catalog(CatalogType::Char) => "\"char\"",
        DataType::Array(_) => "ARRAY",
        other => crate::catalog::builtin_type(type_oid(other)).map_or("USER-DEFINED", |t| t.sql_name),
    }
}

impl Session {
    /// The rows of catalog relation `name` now, or None if it is none.
    pub(crate) fn catalog_rows(&self, name: &str) -> DbResult<Option<Vec<Row>>> {
        let Some(schema) = schema(name) else { return Ok(None) };
        let objects = Objects::load_for(&self.db, self.entry.sid);
        let user = self.entry.client().username;
        let database = self.database_name();
        let rows: Vec<Fields> = match name {
            "pg_namespace" => objects
                .all_namespaces()
                .into_iter()
                .map(|(o, n)| {
                    Fields::new().set("oid", oid(o)).set("nspname", n.as_str()).set(
                        "nspowner",
                        oid(if o == PUBLIC_OID { super::DATABASE_OWNER_OID } else { OWNER_OID }),
                    )
                })
                .collect(),
            "pg_class" => objects.relations().iter().map(|r| class_row(&objects, r)).collect(),
            // PostgreSQL's views over pg_class, with pg_class's own answers.
            "pg_tables" => objects
                .relations()
                .iter()
                .filter(|r| r.kind == 'r')
                .map(|r| {
                    let (has_index, has_triggers) = class_flags(&objects, r);
                    Fields::new()
                        .set("schemaname", r.schema_name())
                        .set("tablename", r.name.as_str())
                        .set("tableowner", user.as_str())
                        .set("hasindexes", flag(has_index))
                        .set("hasrules", flag(false))
                        .set("hastriggers", flag(has_triggers))
                        .set("rowsecurity", flag(false))
                })
                .collect(),
            "pg_views" => objects
                .relations()
                .iter()
                .filter(|r| r.kind == 'v')
                .map(|r| {
                    let definition =
                        r.table.as_deref().and_then(|t| t.view.as_ref()).map(|q| format!(" {q};"));
                    Fields::new()
                        .set("schemaname", r.schema_name())
                        .set("viewname", r.name.as_str())
                        .set("viewowner", user.as_str())
                        .set("definition", definition.map_or(Value::Null, Value::Text))
                })
                .collect(),
            "pg_indexes" => objects
                .relations()
                .iter()
                .filter_map(|r| {
                    let definition = index_definition(r)?;
                    Some(
                        Fields::new()
                            .set("schemaname", r.schema_name())
                            .set("tablename", r.table.as_deref()?.name.as_str())
                            .set("indexname", r.name.as_str())
                            .set("indexdef", definition),
                    )
                })
                .collect(),
            "pg_attribute" => objects.relations().iter().flat_map(attribute_rows).collect(),
            "pg_type" => BUILTIN_TYPES
                .iter()
                .map(|t| {
                    Fields::new()
                        .set("oid", oid(t.oid))
                        .set("typname", t.name)
                        .set("typnamespace", oid(PG_CATALOG_OID))
                        .set("typowner", oid(OWNER_OID))
                        .set("typlen", Value::Int(t.len))
                        .set("typbyval", flag(t.by_value))
                        .set("typtype", ch('b'))
                        .set("typcategory", ch(t.category))
                        .set("typispreferred", flag(t.preferred))
                        .set("typisdefined", flag(true))
                        .set("typdelim", ch(','))
                        .set("typrelid", oid(0))
                        .set("typsubscript", oid(0))
                        .set("typelem", oid(0))
                        .set("typarray", oid(t.array))
                        .set("typinput", oid(0))
                        .set("typoutput", oid(0))
                        .set("typreceive", oid(0))
                        .set("typsend", oid(0))
                        .set("typmodin", oid(0))
                        .set("typmodout", oid(0))
                        .set("typanalyze", oid(0))
                        .set("typalign", ch(t.align))
                        .set("typstorage", ch(t.storage))
                        .set("typnotnull", flag(false))
                        .set("typbasetype", oid(0))
                        .set("typtypmod", Value::Int(-1))
                        .set("typndims", Value::Int(0))
                        .set("typcollation", oid(t.collation))
                })
                .collect(),
            "pg_index" => objects.relations().iter().filter_map(index_row).collect(),
            "pg_constraint" => objects
                .tables
                .iter()
                .flat_map(|t| {
                    let relid = object_oid(ObjectKind::Relation, &t.name);
                    constraints_of(&objects, t).into_iter().map(move |c| {
                        let (confrelid, upd, del) = match &c.foreign {
                            Some((parent, _, upd, del)) => {
                                (object_oid(ObjectKind::Relation, &parent.name), ch(*upd), ch(*del))
                            }
                            None => (0, ch(' '), ch(' ')),
                        };
                        // A CHECK constraint's columns are not kept apart from its text.
                        let conkey = if c.kind == 'c' { Value::Null } else { attnums(&c.columns) };
                        let (confkey, eqop) = match &c.foreign {
                            Some((_, parent_columns, ..)) => (
                                attnums(parent_columns),
                                int_array(c.columns.iter().map(|&k| equality_operator(t.columns[k].ty))),
                            ),
                            None => (Value::Null, Value::Null),
                        };
                        Fields::new()
                            .set("oid", oid(c.oid))
                            .set("conname", c.name)
                            .set(
                                "connamespace",
                                oid(super::namespace_oid(crate::namespaces::split(&t.name).0)),
                            )
                            .set("contype", ch(c.kind))
                            .set("condeferrable", flag(false))
                            .set("condeferred", flag(false))
                            .set("convalidated", flag(true))
                            .set("conrelid", oid(relid))
                            .set("contypid", oid(0))
                            .set("conindid", oid(c.index.unwrap_or(0)))
                            .set("conparentid", oid(0))
                            .set("confrelid", oid(confrelid))
                            .set("confupdtype", upd)
                            .set("confdeltype", del)
                            .set("confmatchtype", ch(if c.foreign.is_some() { 's' } else { ' ' }))
                            .set("conislocal", flag(true))
                            .set("coninhcount", Value::Int(0))
                            .set("connoinherit", flag(false))
                            .set("conkey", conkey)
                            .set("confkey", confkey)
                            .set("conpfeqop", eqop.clone())
                            .set("conppeqop", eqop.clone())
                            .set("conffeqop", eqop)
                            .set("conbin", c.check.map_or(Value::Null, Value::Text))
                    })
                })
                .collect(),
            "pg_attrdef" => objects
                .tables
                .iter()
                .flat_map(|t| {
                    let relid = object_oid(ObjectKind::Relation, &t.name);
                    // An identity column's sequence is no default in PostgreSQL's catalog.
                    t.defaults.iter().filter(|(c, _)| t.identity_of(*c).is_none()).map(
                        move |(column, expr)| {
                            Fields::new()
                                .set(
                                    "oid",
                                    oid(object_oid(
                                        ObjectKind::Default,
                                        &format!("{}.{}", t.name, t.columns[*column].name),
                                    )),
                                )
                                .set("adrelid", oid(relid))
                                .set("adnum", Value::Int(*column as i64 + 1))
                                .set(
                                    "adbin",
                                    deparse::default_expr(expr, t.columns[*column].ty, t.int_width(*column)),
                                )
                        },
                    )
                })
                .collect(),
            // The dependencies that have an effect here: a SERIAL or IDENTITY column's
            // sequence goes with its column (psql's `\d` of a sequence shows it), and a
            // view's rule on the view and on what it reads (`stored_views`).
            "pg_depend" => objects
                .tables
                .iter()
                .flat_map(|t| view_dependencies(&objects, t))
                .chain(objects.tables.iter().filter_map(|t| {
                    let (table, column) = t.sequence.as_ref()?.owned_by.as_ref()?;
                    let owner = objects.table(table)?;
                    let at = owner.column_index(column).ok()?;
                    let identity = owner.identity_of(at).is_some();
                    Some(
                        Fields::new()
                            .set("classid", oid(1259))
                            .set("objid", oid(object_oid(ObjectKind::Relation, &t.name)))
                            .set("objsubid", Value::Int(0))
                            .set("refclassid", oid(1259))
                            .set("refobjid", oid(object_oid(ObjectKind::Relation, &owner.name)))
                            .set("refobjsubid", Value::Int(at as i64 + 1))
                            .set("deptype", ch(if identity { 'i' } else { 'a' })),
                    )
                }))
                .collect(),
            // A view's rule, PostgreSQL's `_RETURN`: the view is its query.
            "pg_rewrite" => objects
                .tables
                .iter()
                .filter(|t| t.view.is_some())
                .map(|t| {
                    Fields::new()
                        .set("oid", oid(object_oid(ObjectKind::Rule, &t.name)))
                        .set("rulename", "_RETURN")
                        .set("ev_class", oid(object_oid(ObjectKind::Relation, &t.name)))
                        .set("ev_type", ch('1'))
                        .set("ev_enabled", ch('O'))
                        .set("is_instead", flag(true))
                        .set("ev_qual", "<>")
                })
                .collect(),
            "pg_am" => [(HEAP_AM_OID, "heap", 't'), (BTREE_AM_OID, "btree", 'i')]
                .into_iter()
                .map(|(o, n, t)| {
                    Fields::new()
                        .set("oid", oid(o))
                        .set("amname", n)
                        .set("amhandler", oid(0))
                        .set("amtype", ch(t))
                })
                .collect(),
            "pg_collation" => [
                (DEFAULT_COLLATION_OID, "default", 'd', -1, None),
                (950, "C", 'c', -1, Some("C")),
                (951, "POSIX", 'c', -1, Some("POSIX")),
            ]
            .into_iter()
            .map(|(o, n, provider, encoding, collate)| {
                Fields::new()
                    .set("oid", oid(o))
                    .set("collname", n)
                    .set("collnamespace", oid(PG_CATALOG_OID))
                    .set("collowner", oid(OWNER_OID))
                    .set("collprovider", ch(provider))
                    .set("collisdeterministic", flag(true))
                    .set("collencoding", Value::Int(encoding))
                    .set("collcollate", collate.map_or(Value::Null, text))
                    .set("collctype", collate.map_or(Value::Null, text))
            })
            .collect(),
            "pg_sequence" => objects
                .tables
                .iter()
                .filter_map(|t| {
                    let s = t.sequence.as_ref()?;
                    Some(
                        Fields::new()
                            .set("seqrelid", oid(object_oid(ObjectKind::Relation, &t.name)))
                            .set("seqtypid", oid(20))
                            .set("seqstart", Value::Int(s.start))
                            .set("seqincrement", Value::Int(s.increment))
                            .set("seqmax", Value::Int(s.max))
                            .set("seqmin", Value::Int(s.min))
                            .set("seqcache", Value::Int(s.cache))
                            .set("seqcycle", flag(s.cycle)),
                    )
                })
                .collect(),
            "pg_tablespace" => [(1663, "pg_default"), (1664, "pg_global")]
                .into_iter()
                .map(|(o, n)| {
                    Fields::new().set("oid", oid(o)).set("spcname", n).set("spcowner", oid(OWNER_OID))
                })
                .collect(),
            "pg_opclass" => OPCLASSES
                .iter()
                .map(|&(o, n, ty)| {
                    Fields::new()
                        .set("oid", oid(o))
                        .set("opcmethod", oid(BTREE_AM_OID))
                        .set("opcname", n)
                        .set("opcnamespace", oid(PG_CATALOG_OID))
                        .set("opcowner", oid(OWNER_OID))
                        .set("opcfamily", oid(0))
                        .set("opcintype", oid(ty))
                        .set("opcdefault", flag(true))
                        .set("opckeytype", oid(0))
                })
                .collect(),
            "pg_database" => vec![Fields::new()
                .set("oid", oid(DATABASE_OID))
                .set("datname", database.as_str())
                .set("datdba", oid(OWNER_OID))
                .set("encoding", Value::Int(6))
                .set("datlocprovider", ch('c'))
                .set("datistemplate", flag(false))
                .set("datallowconn", flag(true))
                .set("datconnlimit", Value::Int(-1))
                .set("datfrozenxid", Value::Int(0))
                .set("datminmxid", Value::Int(1))
                .set("dattablespace", oid(1663))
                // Text compares byte by byte (Rust's `str` order): the C collation.
                .set("datcollate", "C")
                .set("datctype", "C")],
            "pg_roles" => vec![Fields::new()
                .set("rolname", user.as_str())
                .set("rolsuper", flag(true))
                .set("rolinherit", flag(true))
                .set("rolcreaterole", flag(true))
                .set("rolcreatedb", flag(true))
                .set("rolcanlogin", flag(true))
                .set("rolreplication", flag(false))
                .set("rolconnlimit", Value::Int(-1))
                .set("rolpassword", "********")
                .set("rolbypassrls", flag(true))
                .set("oid", oid(OWNER_OID))],
            "pg_user" => vec![Fields::new()
                .set("usename", user.as_str())
                .set("usesysid", oid(OWNER_OID))
                .set("usecreatedb", flag(true))
                .set("usesuper", flag(true))
                .set("userepl", flag(false))
                .set("usebypassrls", flag(true))
                .set("passwd", "********")],
            "pg_proc" => function_names()
                .iter()
                .map(|&n| {
                    let kind = if AGGREGATES.contains(&n) {
                        'a'
                    } else if WINDOWS.contains(&n) {
                        'w'
                    } else {
                        'f'
                    };
                    proc_row(n, PG_CATALOG_OID, kind, false)
                })
                // The functions of casts (`operators::CAST_FUNCTIONS`), called as casts.
                .chain(CAST_FUNCTIONS.iter().map(|&n| proc_row(n, PG_CATALOG_OID, 'f', false)))
                // The set-returning functions (`sql::srf`), `_pg_expandarray` in
                // information_schema, where PostgreSQL keeps it.
                .chain(
                    SET_RETURNING_FUNCTIONS.iter().map(|&(n, namespace)| proc_row(n, namespace, 'f', true)),
                )
                .collect(),
            "pg_cursors" => self
                .open_cursors
                .iter()
                .map(|c| {
                    Fields::new()
                        .set("name", c.name.as_str())
                        .set("statement", c.statement.as_str())
                        .set("is_holdable", flag(c.holdable))
                        .set("is_binary", flag(c.binary))
                        .set("is_scrollable", flag(c.scrollable))
                        .set("creation_time", Value::TimestampTz(c.created))
                })
                .collect(),
            "pg_settings" => self
                .show_parameters(None)
                .into_iter()
                .map(|p| {
                    Fields::new()
                        .set("name", p.name)
                        .set("setting", p.value.clone())
                        .set("category", "redodb")
                        .set("short_desc", p.description)
                        .set("context", if p.modifiable == "FALSE" { "postmaster" } else { "user" })
                        .set("vartype", p.type_name)
                        .set("source", "default")
                        .set("reset_val", p.value)
                        .set("pending_restart", flag(false))
                })
                .chain(crate::params::PRESETS.iter().map(|&(name, value, description)| {
                    Fields::new()
                        .set("name", name)
                        .set("setting", value)
                        .set("category", "Preset Options")
                        .set("short_desc", description)
                        .set("context", "internal")
                        .set("vartype", if value.parse::<i64>().is_ok() { "integer" } else { "bool" })
                        .set("source", "default")
                        .set("boot_val", value)
                        .set("reset_val", value)
                        .set("pending_restart", flag(false))
                }))
                .collect(),
            // The languages functions are written in: the built-in ones (their validators
            // PostgreSQL 15's OIDs). No procedural language (plpgsql) is installed: there
            // is no CREATE FUNCTION.
            "pg_language" => [(12, "internal", false, 2246), (13, "c", false, 2247), (14, "sql", true, 2248)]
                .into_iter()
                .map(|(o, name, trusted, validator)| {
                    Fields::new()
                        .set("oid", oid(o))
                        .set("lanname", name)
                        .set("lanowner", oid(OWNER_OID))
                        .set("lanispl", flag(false))
                        .set("lanpltrusted", flag(trusted))
                        .set("lanplcallfoid", oid(0))
                        .set("laninline", oid(0))
                        .set("lanvalidator", oid(validator))
                })
                .collect(),
            // Nothing of these exists in the database: no role memberships,
            // extensions, enum types, event triggers, per-role settings, foreign data,
            // inheritance, row security, triggers, rules other than views', extended
            // statistics or publications.
            // The comments of tables, views and sequences (objsubid 0) and of their
            // columns (objsubid the attnum).
            "pg_description" => objects
                .relations()
                .iter()
                .filter(|r| r.index.is_none())
                .filter_map(|r| Some((r.oid, r.table.as_ref()?)))
                .flat_map(|(relid, table)| {
                    let of_relation = table.comment.iter().map(move |text| (relid, 0, text.clone()));
                    let of_columns = table
                        .column_comments
                        .iter()
                        .map(move |(c, text)| (relid, *c as i64 + 1, text.clone()));
                    of_relation.chain(of_columns).collect::<Vec<_>>()
                })
                .map(|(relid, subid, text)| {
                    Fields::new()
                        .set("objoid", oid(relid))
                        .set("classoid", oid(1259))
                        .set("objsubid", Value::Int(subid))
                        .set("description", text)
                })
                // The built-in operators' descriptions, PostgreSQL's.
                .chain(OPERATORS.iter().map(|o| {
                    Fields::new()
                        .set("objoid", oid(o.oid))
                        .set("classoid", oid(PG_OPERATOR_OID))
                        .set("objsubid", Value::Int(0))
                        .set("description", o.description)
                }))
                .collect(),
            "pg_cast" => CASTS
                .iter()
                .map(|c| {
                    Fields::new()
                        .set("oid", oid(c.oid))
                        .set("castsource", oid(c.source))
                        .set("casttarget", oid(c.target))
                        .set("castfunc", oid(c.function.map_or(0, |f| object_oid(ObjectKind::Function, f))))
                        .set("castcontext", ch(c.context))
                        .set("castmethod", ch(c.method))
                })
                .collect(),
            // `oprcode` 0: the executor evaluates operators inline (see `operators`).
            "pg_operator" => OPERATORS
                .iter()
                .map(|o| {
                    Fields::new()
                        .set("oid", oid(o.oid))
                        .set("oprname", o.name)
                        .set("oprnamespace", oid(PG_CATALOG_OID))
                        .set("oprowner", oid(OWNER_OID))
                        .set("oprkind", ch(o.kind))
                        .set("oprcanmerge", flag(o.can_merge))
                        .set("oprcanhash", flag(o.can_hash))
                        .set("oprleft", oid(o.left))
                        .set("oprright", oid(o.right))
                        .set("oprresult", oid(o.result))
                        .set("oprcom", oid(o.commutator))
                        .set("oprnegate", oid(o.negator))
                        .set("oprcode", oid(0))
                        .set("oprrest", oid(0))
                        .set("oprjoin", oid(0))
                })
                .collect(),
            // No text search and no encoding conversion (the database speaks UTF8 only);
            // the operator classes of `OPCLASSES` belong to no family.
            "pg_conversion" | "pg_ts_config" | "pg_ts_dict" | "pg_ts_parser" | "pg_ts_template"
            | "pg_opfamily" => Vec::new(),
            "pg_auth_members"
            | "pg_extension"
            | "pg_enum"
            | "pg_event_trigger"
            | "pg_db_role_setting"
            | "pg_foreign_data_wrapper"
            | "pg_foreign_server"
            | "pg_inherits"
            | "pg_policy"
            | "pg_trigger"
            | "pg_statistic_ext"
            | "pg_publication"
            | "pg_publication_rel"
            | "pg_publication_namespace" => Vec::new(),
            "information_schema.schemata" => objects
                .all_namespaces()
                .into_iter()
                .filter(|(_, n)| crate::temp_tables::split(&format!("{n}.x")).is_none())
                .map(|(_, n)| {
                    Fields::new()
                        .set("catalog_name", database.as_str())
                        .set("schema_name", n.as_str())
                        .set("schema_owner", user.as_str())
                })
                .collect(),
            "information_schema.tables" => objects
                .relations()
                .iter()
                .filter(|r| matches!(r.kind, 'r' | 'v'))
                .map(|r| {
                    let schema = r.schema_name();
                    let table_type = match (r.kind, r.temp_of) {
                        ('v', _) => "VIEW",
                        (_, Some(_)) => "LOCAL TEMPORARY",
                        _ => "BASE TABLE",
                    };
                    Fields::new()
                        .set("table_catalog", database.as_str())
                        .set("table_schema", schema.as_str())
                        .set("table_name", r.name.as_str())
                        .set("table_type", table_type)
                        .set("is_insertable_into", yes_no(r.kind == 'r' && r.is_user()))
                        .set("is_typed", yes_no(false))
                })
                .collect(),
            "information_schema.columns" => objects
                .relations()
                .iter()
                .filter(|r| matches!(r.kind, 'r' | 'v'))
                .flat_map(|r| information_columns(&database, r))
                .collect(),
            "information_schema.table_constraints" => objects
                .tables
                .iter()
                .flat_map(|t| {
                    let database = database.clone();
                    let mut rows: Vec<Fields> = constraints_of(&objects, t)
                        .into_iter()
                        .map(|c| {
                            let kind = match c.kind {
                                'p' => "PRIMARY KEY",
                                'u' => "UNIQUE",
                                'f' => "FOREIGN KEY",
                                _ => "CHECK",
                            };
                            table_constraint(&database, &c.name, &t.name, kind)
                        })
                        .collect();
                    // NOT NULL columns are CHECK constraints here, as PostgreSQL lists them.
                    if t.view.is_none() && t.sequence.is_none() {
                        let relid = object_oid(ObjectKind::Relation, &t.name);
                        for (i, c) in t.visible_columns().iter().enumerate() {
                            if !c.nullable {
                                let name = format!("{}_{}_{}_not_null", PUBLIC_OID, relid, i + 1);
                                rows.push(table_constraint(&database, &name, &t.name, "CHECK"));
                            }
                        }
                    }
                    rows
                })
                .collect(),
            "information_schema.key_column_usage" => objects
                .tables
                .iter()
                .flat_map(|t| {
                    let database = database.clone();
                    let objects = &objects;
                    constraints_of(objects, t)
                        .into_iter()
                        .filter(|c| matches!(c.kind, 'p' | 'u' | 'f'))
                        .flat_map(move |c| {
                            let database = database.clone();
                            let t = t.clone();
                            let unique_positions = c.foreign.as_ref().map(|(parent, pcols, ..)| {
                                let _ = parent;
                                (1..=pcols.len() as i64).collect::<Vec<_>>()
                            });
                            c.columns.clone().into_iter().enumerate().map(move |(n, col)| {
                                Fields::new()
                                    .set("constraint_catalog", database.as_str())
                                    .set("constraint_schema", crate::namespaces::split(&t.name).0)
                                    .set("constraint_name", c.name.as_str())
                                    .set("table_catalog", database.as_str())
                                    .set("table_schema", crate::namespaces::split(&t.name).0)
                                    .set("table_name", crate::namespaces::split(&t.name).1)
                                    .set("column_name", t.columns[col].name.as_str())
                                    .set("ordinal_position", Value::Int(n as i64 + 1))
                                    .set(
                                        "position_in_unique_constraint",
                                        unique_positions.as_ref().map_or(Value::Null, |p| Value::Int(p[n])),
                                    )
                            })
                        })
                })
                .collect(),
            "information_schema.referential_constraints" => objects
                .tables
                .iter()
                .flat_map(|t| {
                    let database = database.clone();
                    constraints_of(&objects, t).into_iter().filter_map(move |c| {
                        let (parent, pcols, _, _) = c.foreign.as_ref()?;
                        let fk = t.foreign_keys.iter().find(|f| f.name == c.name)?;
                        let unique = if *pcols == parent.primary_key && !parent.rowid {
                            primary_key_name(parent)
                        } else {
                            parent.indexes.iter().find(|i| i.unique && i.columns == *pcols)?.name.clone()
                        };
                        Some(
                            Fields::new()
                                .set("constraint_catalog", database.as_str())
                                .set("constraint_schema", crate::namespaces::split(&t.name).0)
                                .set("constraint_name", c.name.as_str())
                                .set("unique_constraint_catalog", database.as_str())
                                .set("unique_constraint_schema", crate::namespaces::split(&parent.name).0)
                                .set("unique_constraint_name", crate::namespaces::split(&unique).1)
                                .set("match_option", "NONE")
                                .set("update_rule", fk.on_update.sql())
                                .set("delete_rule", fk.on_delete.sql()),
                        )
                    })
                })
                .collect(),
            "information_schema.sequences" => objects
                .tables
                .iter()
                .filter_map(|t| {
                    let s = t.sequence.as_ref()?;
                    // An IDENTITY column's sequence is internal to it: not listed.
                    let internal = s.owned_by.as_ref().is_some_and(|(table, column)| {
                        objects.table(table).is_some_and(|o| {
                            o.column_index(column).is_ok_and(|at| o.identity_of(at).is_some())
                        })
                    });
                    if internal {
                        return None;
                    }
                    Some(
                        Fields::new()
                            .set("sequence_catalog", database.as_str())
                            .set("sequence_schema", crate::namespaces::split(&t.name).0)
                            .set("sequence_name", crate::namespaces::split(&t.name).1)
                            .set("data_type", "bigint")
                            .set("numeric_precision", Value::Int(64))
                            .set("numeric_precision_radix", Value::Int(2))
                            .set("numeric_scale", Value::Int(0))
                            .set("start_value", s.start.to_string())
                            .set("minimum_value", s.min.to_string())
                            .set("maximum_value", s.max.to_string())
                            .set("increment", s.increment.to_string())
                            .set("cycle_option", yes_no(s.cycle)),
                    )
                })
                .collect(),
            "information_schema.views" => objects
                .tables
                .iter()
                .filter_map(|t| {
                    // As pg_get_viewdef shows it: under today's names (renames since).
                    let query = t.view.as_ref().map(|_| crate::sql::stored_views::definition_now(t))?;
                    Some(
                        Fields::new()
                            .set("table_catalog", database.as_str())
                            .set("table_schema", crate::namespaces::split(&t.name).0)
                            .set("table_name", crate::namespaces::split(&t.name).1)
                            .set("view_definition", format!(" {query};"))
                            .set("check_option", "NONE")
                            .set("is_updatable", yes_no(false))
                            .set("is_insertable_into", yes_no(false))
                            .set("is_trigger_updatable", yes_no(false))
                            .set("is_trigger_deletable", yes_no(false))
                            .set("is_trigger_insertable_into", yes_no(false)),
                    )
                })
                .collect(),
            other => unreachable!("catalog relation {other} has a schema but no rows"),
        };
        Ok(Some(layout(&schema, rows)))
    }

    /// The name of the database the session is connected to, as its client named it
    /// (`set_database_name`), `redodb` for an embedded session.
    pub fn database_name(&self) -> String {
        self.database_name.clone().unwrap_or_else(|| "redodb".into())
    }

    /// Tells the session the database name its client connected with (a wire
    /// server's startup packet names one; the instance serves every name alike).
    pub fn set_database_name(&mut self, name: &str) {
        self.database_name = Some(name.to_string());
    }
}

/// Whether `oid` is one of the operator classes pg_opclass lists.
pub(crate) fn is_opclass(oid: i64) -> bool {
    OPCLASSES.iter().any(|&(o, ..)| o == oid)
}

/// The default btree operator classes of the types (PostgreSQL's OIDs).
const OPCLASSES: [(i64, &str, i64); 17] = [
    (10003, "bool_ops", 16),
    (10004, "bpchar_ops", 1042),
    (10006, "bytea_ops", 17),
    (10007, "char_ops", 18),
    (3122, "date_ops", 1082),
    (3123, "float8_ops", 701),
    (3124, "int8_ops", 20),
    (10022, "interval_ops", 1186),
    (10028, "name_ops", 19),
    (3125, "numeric_ops", 1700),
    (1981, "oid_ops", 26),
    (3126, "text_ops", 25),
    (10038, "time_ops", 1083),
    (3127, "timestamptz_ops", 1184),
    (3128, "timestamp_ops", 1114),
    (10065, "uuid_ops", 2950),
    (10088, "jsonb_ops", 3802),
];

fn table_constraint(database: &str, name: &str, table: &str, kind: &'static str) -> Fields {
    Fields::new()
        .set("constraint_catalog", database)
        .set("constraint_schema", crate::namespaces::split(table).0)
        .set("constraint_name", name)
        .set("table_catalog", database)
        .set("table_schema", crate::namespaces::split(table).0)
        .set("table_name", crate::namespaces::split(table).1)
        .set("constraint_type", kind)
        .set("is_deferrable", yes_no(false))
        .set("initially_deferred", yes_no(false))
        .set("enforced", yes_no(true))
        .set(
            "nulls_distinct",
            if kind == "UNIQUE" || kind == "PRIMARY KEY" { yes_no(true) } else { Value::Null },
        )
}

/// pg_get_indexdef's text of an index (None: `r` is no index).
pub(crate) fn index_definition(r: &Relation) -> Option<String> {
    let (table, (columns, unique, _)) = (r.table.as_deref()?, r.index_shape()?);
    let names: Vec<String> =
        columns.iter().map(|&c| crate::catalog::quote_ident(&table.columns[c].name)).collect();
    // A temporary table, or one of another schema than public, is stored under a
    // qualified name, and shown by its own with its schema before it.
    let table_name = crate::temp_tables::visible_name(&table.name);
    Some(format!(
        "CREATE {}INDEX {} ON {}.{} USING btree ({})",
        if unique { "UNIQUE " } else { "" },
        crate::catalog::quote_ident(&r.name),
        crate::catalog::quote_ident(&r.schema_name()),
        crate::catalog::quote_ident(table_name),
        names.join(", ")
    ))
}

/// A relation's relhasindex and relhastriggers.
fn class_flags(objects: &Objects, r: &Relation) -> (bool, bool) {
    let table = r.table.as_deref();
    let user_table = r.kind == 'r' && r.is_user();
    let has_index = user_table && table.is_some_and(|t| !t.rowid || !t.indexes.is_empty());
    // PostgreSQL enforces a foreign key with triggers on both tables, and psql lists a
    // table's foreign keys (and those referencing it) only when it has triggers.
    let has_triggers = user_table
        && table.is_some_and(|t| {
            !t.foreign_keys.is_empty()
                || objects.tables.iter().any(|o| o.foreign_keys.iter().any(|fk| fk.parent == t.name))
        });
    (has_index, has_triggers)
}

fn class_row(objects: &Objects, r: &Relation) -> Fields {
    let table = r.table.as_deref();
    let natts = match (r.kind, table, r.index_shape()) {
        ('i', _, Some((cols, ..))) => cols.len(),
        (_, Some(t), _) => t.visible_columns().len(),
        _ => 0,
    };
    let user_table = r.kind == 'r' && r.is_user();
    let checks = match table {
        Some(t) if user_table => t.checks.len(),
        _ => 0,
    };
    let (has_index, has_triggers) = class_flags(objects, r);
    Fields::new()
        .set("oid", oid(r.oid))
        .set("relname", r.name.as_str())
        .set("relnamespace", oid(r.namespace))
        .set("reltype", oid(0))
        .set("reloftype", oid(0))
        .set("relowner", oid(OWNER_OID))
        .set(
            "relam",
            oid(match r.kind {
                'i' => BTREE_AM_OID,
                'r' => HEAP_AM_OID,
                _ => 0,
            }),
        )
        .set("relfilenode", oid(if r.kind == 'v' { 0 } else { r.oid }))
        .set("reltablespace", oid(0))
        .set("relpages", Value::Int(0))
        .set("reltuples", Value::Float(-1.0))
        .set("relallvisible", Value::Int(0))
        .set("reltoastrelid", oid(0))
        .set("relhasindex", flag(has_index))
        .set("relisshared", flag(false))
        .set("relpersistence", ch(if r.temp_of.is_some() { 't' } else { 'p' }))
        .set("relkind", ch(r.kind))
        .set("relnatts", Value::Int(natts as i64))
        .set("relchecks", Value::Int(checks as i64))
        .set("relhasrules", flag(r.kind == 'v'))
        .set("relhastriggers", flag(has_triggers))
        .set("relhassubclass", flag(false))
        .set("relrowsecurity", flag(false))
        .set("relforcerowsecurity", flag(false))
        .set("relispopulated", flag(true))
        .set("relreplident", ch(if r.kind == 'r' { 'd' } else { 'n' }))
        .set("relispartition", flag(false))
        .set("relrewrite", oid(0))
        .set("relfrozenxid", Value::Int(0))
        .set("relminmxid", Value::Int(0))
}

/// The type OID a column is shown with: int4 or int2 for an integer column declared
/// INTEGER or SMALLINT (`width` 4 or 2), else its type's.
fn declared_type_oid(ty: DataType, width: u8) -> i64 {
    match (ty, width) {
        (DataType::Int, 4) => 23,
        (DataType::Int, 2) => 21,
        (ty, _) => type_oid(ty),
    }
}

fn attribute(relid: i64, attnum: i64, column: &Column) -> Fields {
    attribute_declared(relid, attnum, column, 8)
}

/// A column's pg_attribute row, an integer column's type as declared (`width`).
fn attribute_declared(relid: i64, attnum: i64, column: &Column, width: u8) -> Fields {
    let type_id = declared_type_oid(column.ty, width);
    let builtin = crate::catalog::builtin_type(type_id);
    Fields::new()
        .set("attrelid", oid(relid))
        .set("attname", column.name.as_str())
        .set("atttypid", oid(type_id))
        .set("attstattarget", Value::Int(-1))
        .set("attlen", Value::Int(builtin.map_or(-1, |t| t.len)))
        .set("attnum", Value::Int(attnum))
        .set("attndims", Value::Int(0))
        .set("attcacheoff", Value::Int(-1))
        .set("atttypmod", Value::Int(type_modifier(column.ty)))
        .set("attbyval", flag(builtin.is_some_and(|t| t.by_value)))
        .set("attalign", ch(builtin.map_or('i', |t| t.align)))
        .set("attstorage", ch(builtin.map_or('x', |t| t.storage)))
        .set("attcompression", ch('\0'))
        .set("attnotnull", flag(!column.nullable))
        .set("atthasdef", flag(false))
        .set("atthasmissing", flag(false))
        .set("attidentity", ch('\0'))
        .set("attgenerated", ch('\0'))
        .set("attisdropped", flag(false))
        .set("attislocal", flag(true))
        .set("attinhcount", Value::Int(0))
        .set("attcollation", oid(builtin.map_or(0, |t| t.collation)))
}

fn attribute_rows(r: &Relation) -> Vec<Fields> {
    let Some(table) = r.table.as_deref() else { return Vec::new() };
    if let Some((columns, ..)) = r.index_shape() {
        return columns
            .iter()
            .enumerate()
            .map(|(n, &c)| {
                attribute_declared(r.oid, n as i64 + 1, &table.columns[c], table.int_width(c))
                    .set("attnotnull", flag(false))
            })
            .collect();
    }
    if r.kind == 'S' {
        // A sequence's one row, as PostgreSQL's sequences show it.
        return [("last_value", DataType::Int), ("log_cnt", DataType::Int), ("is_called", DataType::Bool)]
            .into_iter()
            .enumerate()
            .map(|(n, (name, ty))| {
                attribute(r.oid, n as i64 + 1, &Column { name: name.into(), ty, nullable: false })
            })
            .collect();
    }
    let user = r.is_user();
    table
        .visible_columns()
        .iter()
        .enumerate()
        .map(|(n, c)| {
            let has_default =
                user && table.identity_of(n).is_none() && table.defaults.iter().any(|(d, _)| *d == n);
            let identity = if user { table.identity_of(n).unwrap_or('\0') } else { '\0' };
            attribute_declared(r.oid, n as i64 + 1, c, table.int_width(n))
                .set("atthasdef", flag(has_default))
                .set("attidentity", ch(identity))
        })
        .collect()
}

fn index_row(r: &Relation) -> Option<Fields> {
    let (columns, unique, primary) = r.index_shape()?;
    let table = r.table.as_deref()?;
    Some(
        Fields::new()
            .set("indexrelid", oid(r.oid))
            .set("indrelid", oid(object_oid(ObjectKind::Relation, &table.name)))
            .set("indnatts", Value::Int(columns.len() as i64))
            .set("indnkeyatts", Value::Int(columns.len() as i64))
            .set("indisunique", flag(unique))
            .set("indnullsnotdistinct", flag(false))
            .set("indisprimary", flag(primary))
            .set("indisexclusion", flag(false))
            .set("indimmediate", flag(true))
            .set("indisclustered", flag(false))
            .set("indisvalid", flag(true))
            .set("indcheckxmin", flag(false))
            .set("indisready", flag(true))
            .set("indislive", flag(true))
            .set("indisreplident", flag(false))
            .set("indkey", attnums(&columns))
            .set("indcollation", int_array(columns.iter().map(|&c| type_collation(table.columns[c].ty))))
            .set("indclass", int_array(columns.iter().map(|&c| default_opclass(table.columns[c].ty))))
            // Every key ascending, NULLs last: the one order the database's indexes keep.
            .set("indoption", int_array(columns.iter().map(|_| 0))),
    )
}

/// The collation of a column of type `ty` (pg_attribute.attcollation): the default
/// one for the text types, none (0) for the others.
fn type_collation(ty: DataType) -> i64 {
    crate::catalog::builtin_type(type_oid(ty)).map_or(0, |t| t.collation)
}

/// The default btree operator class of a key of type `ty` (varchar and bpchar keys as
/// PostgreSQL's: text_ops and bpchar_ops), 0 for a type without one.
fn default_opclass(ty: DataType) -> i64 {
    let input = match type_oid(ty) {
        1043 => 25,
        other => other,
    };
    OPCLASSES.iter().find(|(_, _, t)| *t == input).map_or(0, |(o, _, _)| *o)
}

/// The equality operator (pg_operator's OID) a foreign key compares a key of type `ty`
/// with (pg_constraint.conpfeqop), PostgreSQL's; 0 for a type without one.
fn equality_operator(ty: DataType) -> i64 {
    match type_oid(ty) {
        16 => 91,
        17 => 1955,
        20 => 410,
        26 => 607,
        25 | 1043 => 98,
        701 => 670,
        1042 => 1054,
        1082 => 1093,
        1083 => 1108,
        1114 => 2060,
        1184 => 1320,
        1186 => 1330,
        1700 => 1752,
        2950 => 2972,
        3802 => 3240,
        _ => 0,
    }
}

fn information_columns(database: &str, r: &Relation) -> Vec<Fields> {
    let Some(table) = r.table.as_deref() else { return Vec::new() };
    let user = r.is_user();
    table
        .visible_columns()
        .iter()
        .enumerate()
        .map(|(n, c)| {
            let identity = user && table.identity_of(n).is_some();
            let default = match user && !identity {
                true => table
                    .defaults
                    .iter()
                    .find(|(d, _)| *d == n)
                    .map(|(_, e)| deparse::default_expr(e, c.ty, table.int_width(n))),
                false => None,
            };
            let (char_len, precision, radix, scale, datetime) = match c.ty {
                DataType::Text { max_chars } => (max_chars.map(|n| n as i64), None, None, None, None),
                DataType::Char { len } => (Some(len.unwrap_or(1) as i64), None, None, None, None),
                DataType::Int => (None, Some(8 * table.int_width(n) as i64), Some(2), Some(0), None),
                DataType::Float => (None, Some(53), Some(2), None, None),
                DataType::Float4 => (None, Some(24), Some(2), None, None),
                DataType::Numeric(spec) => {
                    (None, spec.map(|s| s.precision as i64), Some(10), spec.map(|s| s.scale as i64), None)
                }
                DataType::Date => (None, None, None, None, Some(0)),
                DataType::Time | DataType::Timestamp | DataType::TimestampTz | DataType::Interval => {
                    (None, None, None, None, Some(6))
                }
                _ => (None, None, None, None, None),
            };
            let int = |v: Option<i64>| v.map_or(Value::Null, Value::Int);
            let type_id = declared_type_oid(c.ty, table.int_width(n));
            Fields::new()
                .set("table_catalog", database)
                .set("table_schema", r.schema_name().as_str())
                .set("table_name", r.name.as_str())
                .set("column_name", c.name.as_str())
                .set("ordinal_position", Value::Int(n as i64 + 1))
                .set("column_default", default.map_or(Value::Null, Value::Text))
                .set("is_nullable", yes_no(c.nullable))
                .set("data_type", information_type(c.ty, table.int_width(n)))
                .set("character_maximum_length", int(char_len))
                .set("character_octet_length", int(char_len.map(|n| n * 4)))
                .set("numeric_precision", int(precision))
                .set("numeric_precision_radix", int(radix))
                .set("numeric_scale", int(scale))
                .set("datetime_precision", int(datetime))
                .set("udt_catalog", database)
                .set("udt_schema", "pg_catalog")
                .set("udt_name", crate::catalog::builtin_type(type_id).map_or("", |t| t.name))
                .set("dtd_identifier", (n + 1).to_string())
                .set("is_self_referencing", yes_no(false))
                .set("is_identity", yes_no(identity))
                .set(
                    "identity_generation",
                    match table.identity_of(n).filter(|_| user) {
                        Some('a') => text("ALWAYS"),
                        Some(_) => text("BY DEFAULT"),
                        None => Value::Null,
                    },
                )
                .set("is_generated", "NEVER")
                .set("is_updatable", yes_no(user && r.kind == 'r'))
        })
        .collect()
}

/// The pg_depend rows of view `view`'s rule, as PostgreSQL's: internal on the view,
/// normal on the view itself (its query's own range table), and normal on each column it
/// reads, or on the whole relation when it reads none of its columns.
fn view_dependencies<'o>(objects: &'o Objects, view: &'o TableSchema) -> Vec<Fields> {
    if view.view.is_none() {
        return Vec::new();
    }
    let rule = object_oid(ObjectKind::Rule, &view.name);
    let row = |refobj: &str, refsub: i64, deptype: char| {
        Fields::new()
            .set("classid", oid(2618))
            .set("objid", oid(rule))
            .set("objsubid", Value::Int(0))
            .set("refclassid", oid(1259))
            .set("refobjid", oid(object_oid(ObjectKind::Relation, refobj)))
            .set("refobjsubid", Value::Int(refsub))
            .set("deptype", ch(deptype))
    };
    let mut rows = vec![row(&view.name, 0, 'i'), row(&view.name, 0, 'n')];
    for read in &view.view_reads {
        let Some(relation) = objects.table(&read.relation) else { continue };
        if read.columns.is_empty() {
            rows.push(row(&relation.name, 0, 'n'));
        }
        for column in &read.columns {
            if let Ok(i) = relation.column_index(&column.name) {
                rows.push(row(&relation.name, i as i64 + 1, 'n'));
            }
        }
    }
    rows
}

/// A `pg_proc` row of the built-in function `name` (language `internal`, OID 12).
fn proc_row(name: &str, namespace: i64, kind: char, returns_set: bool) -> Fields {
    Fields::new()
        .set("oid", oid(object_oid(ObjectKind::Function, name)))
        .set("proname", name)
        .set("pronamespace", oid(namespace))
        .set("proowner", oid(OWNER_OID))
        .set("prolang", oid(12))
        .set("prokind", ch(kind))
        .set("proretset", flag(returns_set))
        .set("prosrc", name)
}
