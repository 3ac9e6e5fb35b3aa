//! SQL: the statements redodb understands. Standard SQL goes through the `sqlparser`
//! crate; the Oracle-style statements (COMMIT WRITE, ALTER SESSION/SYSTEM, SHOW
//! PARAMETER) and PostgreSQL's session settings are parsed in `oracle`.

pub mod cache;
pub mod oracle;

pub use oracle::{
    parse_commit_write, parse_special, split_statements, ParamValue, Persistence, Piece, Scope, Special,
    SqlText,
};
