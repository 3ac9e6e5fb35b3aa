//! redodb's PostgreSQL wire protocol server (protocol 3.0), on top of the embedded
//! database (`db`). Each connection's session lives on a dedicated OS thread
//! (`worker`), so a call waiting on `log file sync` or a row lock never blocks the async
//! runtime; the async side (`connection`) only moves bytes.
//!
//! - `config`: flags and TOML file, validated;
//! - `listener`: open the database (recovery), listen, shut down cleanly;
//! - `connection`: startup (TLS, authentication, cancel requests), framing, one write
//!   per round trip;
//! - `auth`: trust, SCRAM-SHA-256 and md5; `tls`: the certificate and the acceptor;
//! - `protocol`: simple and extended query, transaction blocks, replies;
//! - `client_sql`: the settings and statement bookkeeping the server answers itself;
//!   `settings_txn`: what a transaction's SETs changed, put back when it ends;
//! - `cursors`, `copy`, `catalog`: DECLARE/FETCH/CLOSE, COPY FROM STDIN / TO STDOUT, and
//!   the pg_catalog queries of psql's `\d` (`words`: their small lexer);
//! - `types`: type OIDs, text and binary values.

pub mod auth;
pub mod catalog;
pub mod client_sql;
pub mod config;
pub mod connection;
pub mod copy;
pub mod cursors;
pub mod listener;
pub mod protocol;
pub mod settings_txn;
pub mod tls;
pub mod types;
pub mod words;
pub mod worker;

pub use config::{ConfigError, ServerConfig, Settings};
pub use listener::{run, ServerError};
