//! SQL: the statements redodb understands. Standard SQL goes through the `sqlparser`
//! crate; the Oracle-style statements (COMMIT WRITE, ALTER SESSION/SYSTEM, SHOW
//! PARAMETER) and PostgreSQL's session settings are parsed in `oracle`.
//!
//! - `exec`: `Session::execute` / `execute_batch`, statement dispatch, DDL and DML;
//! - `query`: SELECT and VALUES;
//! - `expr`: expressions, compiled against a table's columns and evaluated;
//! - `functions`: the string and numeric functions and every function's argument
//!   checks; `formatting`: `to_char`, `to_date`, `to_timestamp`;
//! - `access`: access paths by primary key (point lookups, range scans);
//! - `explain`: EXPLAIN, the access path a statement would take;
//! - `binds`: Oracle-style `:name` placeholders, numbered by position before parsing;
//! - `bulk`: bulk load (a wire client's COPY FROM) as one statement over many calls.

pub mod access;
pub(crate) mod alter_sequence;
pub(crate) mod array_assign;
pub(crate) mod arrays;
pub(crate) mod binds;
pub mod bulk;
pub mod cache;
pub(crate) mod comments;
pub(crate) mod create_table_as;
pub(crate) mod ddl;
pub mod describe;
pub(crate) mod dml_with;
pub mod exec;
pub(crate) mod explain;
pub mod expr;
pub(crate) mod formatting;
pub(crate) mod frame_exclusion;
pub(crate) mod functions;
pub(crate) mod group_by_distinct;
pub(crate) mod join;
pub(crate) mod joined_dml;
pub(crate) mod json_ops;
pub(crate) mod like_all;
pub(crate) mod merge;
pub mod oracle;
pub(crate) mod ordered_set;
pub(crate) mod point_select;
pub mod prepared;
pub mod query;
pub(crate) mod record_star;
pub(crate) mod recursive;
pub(crate) mod references;
pub(crate) mod schemas;
pub(crate) mod srf;
pub(crate) mod stored_views;
pub(crate) mod tablesample;
pub(crate) mod temporal;
pub(crate) mod window;

pub use access::rows_visited;
pub use bulk::{BulkLoad, BulkRowError};
pub use describe::StatementDescription;
pub use exec::{QueryResult, ResultColumn, Tag};
pub use oracle::{
    parse_commit_write, parse_special, split_statements, ParamValue, Persistence, Piece, Scope, Special,
    SqlText,
};
pub use prepared::{Cursor, PreparedStatement};
