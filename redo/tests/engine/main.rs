//! The redo log engine's integration tests through its public API, one test binary:
//! `behaviour` on real files, `faults` and `sim_crash` on the simulated disk, `golden`
//! against the committed files of format version 1. Each test opens its logs in a
//! temporary directory or on a simulated disk of its own, so tests in parallel threads
//! never share one (the one that looks for its log writer among the process's threads
//! allows for the others').
//!
//! One binary rather than one per module: each test binary is a link of its own. A
//! test's name is its module path: `cargo test -p redodb-redo --test engine faults::`
//! runs one module.

mod common;

mod behaviour;
mod faults;
mod golden;
mod sim_crash;
