//! The database's integration tests through its public API (`Database`, `Session`), one
//! test binary: each module opens its databases in temporary directories of its own, so
//! tests in parallel threads never share one. The deterministic simulation is a binary
//! of its own (`simulation.rs`): it runs its seeds on worker threads of its own, installs
//! a process-wide logger, and `scripts/simulate.sh` runs it alone at length.
//!
//! One binary rather than one per module: each test binary links the whole dependency
//! graph, and the links were a large part of a clean CI build's time. A test's name is its
//! module path: `cargo test -p redodb-db --test database transactions::` runs one module.

mod common;

mod aggregates;
mod arrays;
mod bulk;
mod cancel;
mod catalog;
mod checkpoint_faults;
mod checkpoints;
mod create_view;
mod describe;
mod distinct_on;
mod dml_with;
mod fail_stop;
mod float4;
mod foreign_keys;
mod functions;
mod grouping_sets;
mod index_joins;
mod index_paths;
mod instance;
mod joined_dml;
mod json_aggregates;
mod lateral;
mod merge;
mod ordered_sets;
mod params;
mod patterns;
mod records;
mod recursive;
mod relational;
mod row_comparisons;
mod schemas;
mod sequences;
mod shared_pool;
mod sql;
mod tablesample;
mod temp_tables;
mod temporal_and_alter;
mod time_model;
mod timed_statistics;
mod transactions;
mod types;
mod view_dependencies;
mod views;
mod whole_rows;
mod windows;
