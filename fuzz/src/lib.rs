//! What the fuzz targets in `fuzz_targets/` run: each target is one line calling a `run`
//! here, so the harnesses can share their pieces (a redo log laid out on the simulated
//! disk, a scratch database, a watchdog, an in-process client connection) and the seed
//! generator (`examples/seeds.rs`) builds its inputs with the same layout the targets read.
//!
//! Every target drives the product's own entry points, never a copy of its code: the
//! engine's `RedoLog::open_with` on the simulated disk, `db::database::replay`,
//! `db::checkpoint::decode_image`, `Database::open` and `Session` on a scratch directory,
//! and the server's `connection::serve_stream` on an in-memory pipe.
//!
//! What is a finding: a panic (libFuzzer's hook aborts on every panic, also one the
//! server would catch), an input that runs past libFuzzer's `-timeout` (each harness
//! bounds the legitimate work of one input well below it: sizes, and a watchdog that
//! cancels long statements), an allocation over `-malloc_limit_mb`, and an `assert!`
//! here: the invariants each harness checks after a successful run (an accepted log keeps
//! working and recovers what it acknowledged, an image reads back as it was written, what
//! SQL committed survives a reopen).

pub mod control;
pub mod image;
pub mod redo_files;
pub mod scratch;
pub mod seeds;
pub mod sql;
pub mod wire;
