//! The server's end-to-end tests, one test binary: each module drives the real `redodb
//! serve` binary with real clients (psql, pgbench, psycopg, PgJDBC, Prometheus, a raw
//! protocol client), starting its servers through `common` (each on a port the system
//! chooses, in a temporary directory of its own, so tests in parallel threads never share
//! one).
//!
//! One binary rather than one per module: each test binary links the whole dependency
//! graph, and that link was most of a clean CI build's time. A test's name is its module
//! path: `cargo test -p redodb --test server psql::` runs one module.

mod common;

mod analytics;
mod auth;
mod cancel;
mod checkpoint_faults;
mod client_jdbc;
mod client_jdbc_metadata;
mod client_psycopg;
mod client_sqlalchemy;
mod config;
mod copy;
mod crash;
mod fail_stop;
mod metrics;
mod pgbench;
mod protocol;
mod psql;
mod restart;
mod robustness;
mod schemas;
mod sessions;
mod temp_tables;
mod wait_interface;
mod workers;
