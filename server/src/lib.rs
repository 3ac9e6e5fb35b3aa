//! redodb's PostgreSQL wire protocol server (protocol 3.0), on top of the embedded
//! database (`db`). Each connection is a task on a runtime of `worker_threads` threads,
//! and its session is called inside that task (`worker`); nothing a session waits for
//! holds a worker: a WAIT commit's `log file sync` is awaited as a future, and a row lock
//! wait or other sleep first hands the worker's other connections to another thread.
//!
//! - `config`: flags and TOML file, validated;
//! - `listener`: open the database (recovery), listen, shut down cleanly;
//! - `connection`: startup (TLS, authentication, cancel requests), framing, one write
//!   per round trip;
//! - `auth`: trust, SCRAM-SHA-256 and md5; `tls`: the certificate and the acceptor;
//! - `protocol`: simple and extended query, transaction blocks, replies;
//! - `client_sql`: the settings and statement bookkeeping the server answers itself;
//!   `settings_txn`: what a transaction's SETs changed, put back when it ends;
//! - `cursors`, `copy`: DECLARE/FETCH/CLOSE, COPY FROM STDIN / TO STDOUT (`words`: their
//!   small lexer); the catalog is the database's (`db::catalog`), pg_cursors included:
//!   the server tells the db session which cursors are open (`set_open_cursors`);
//! - `types`: type OIDs, text and binary values;
//! - `metrics`: `/metrics` over HTTP for Prometheus (`metrics_port`, off by default), from
//!   the database's counter snapshot (`db::SystemCounters`).

pub mod auth;
pub mod client_sql;
pub mod config;
pub mod connection;
pub mod copy;
pub mod cursors;
pub mod listener;
pub mod metrics;
pub mod protocol;
pub mod settings_txn;
pub mod tls;
pub mod types;
pub mod words;
pub mod worker;

pub use config::{ConfigError, ServerConfig, Settings};
pub use listener::{run, ServerError};
