//! redodb's database layer: tables, transactions, SQL, sessions, parameters and
//! checkpoints, built on the redo log engine (`redo`). It knows nothing of the network.

pub mod error;
pub mod sql;
pub mod value;

pub use error::{DbError, DbResult};
pub use value::{DataType, Value};
