//! The `redodb` command's end-to-end tests, one test binary: each module runs the real
//! binary's commands (`bench`, `probe`, `report`, `snapshot`, `engine-bench`, `sql-bench`,
//! `sqllogictest`, `versus-postgres`, `soak`, and the crash-test workloads it kills with
//! SIGKILL) in temporary directories of their own, so tests in parallel threads never
//! share a database or a server.
//!
//! One binary rather than one per module: each test binary links the whole dependency
//! graph, and that link was most of a clean CI build's time. A test's name is its module
//! path: `cargo test -p redodb --test commands soak::` runs one module.

mod common;
// The server helpers of the `server` test binary, for `bench_wire`'s `redodb serve`.
#[path = "../server/common/mod.rs"]
mod server_common;
// The crash workloads' configurations, shared with the child processes (the binary's
// `crash-workload` and `db-crash-workload` commands), so both sides open the same files
// the same way.
#[path = "../../src/crash_configs.rs"]
mod crash_configs;

mod bench;
mod bench_wire;
mod crash;
mod db_crash;
mod engine_bench;
mod report;
mod soak;
mod sql_bench;
mod sqllogictest;
mod versus_postgres;
