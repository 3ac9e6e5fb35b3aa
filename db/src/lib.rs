//! redodb's database layer: tables, transactions, SQL, sessions, parameters and
//! checkpoints, built on the redo log engine (`redo`). It knows nothing of the network.

pub mod array;
pub mod awr;
pub mod bytea;
mod call_clock;
pub mod catalog;
pub mod change;
pub mod checkpoint;
pub mod checkpointer;
pub mod counters;
pub mod database;
pub mod datetime;
pub mod durability;
pub mod error;
pub mod float4;
mod foreign_keys;
pub mod json;
mod lock_wait;
pub mod locks;
pub mod namespaces;
pub mod numeric;
pub mod out_of_line;
pub mod params;
pub mod record;
pub mod schema;
pub mod sequences;
pub mod sessions;
pub mod sql;
pub mod state;
pub mod temp_tables;
pub mod uuid;
pub mod value;
pub mod views;

/// The arbitrary-precision decimal NUMERIC values are made of.
pub use bigdecimal::BigDecimal;
pub use change::Change;
pub use counters::SystemCounters;
pub use database::{CallTimes, Database, DbConfig, Session, SqlStats};
pub use durability::DurabilityWait;
pub use error::{DbError, DbResult, Notice, Severity, Termination};
pub use lock_wait::RowLockWait;
pub use numeric::NumericSpec;
pub use schema::{Column, IndexDef, Key, Row, TableSchema};
pub use value::{CatalogType, DataType, Value};
