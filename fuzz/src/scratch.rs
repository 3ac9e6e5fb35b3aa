//! The scratch database the SQL and wire targets run their inputs on, put back after each
//! input, and a watchdog that bounds an input's run.
//!
//! One database per process, in a directory of its own (on /dev/shm when there is one: a
//! tmpfs, where syncs cost nothing), removed when the process ends normally. Opening one
//! for every input cost more than the input itself (two thirds of the time went to
//! creating log files and opening them); instead, after each input:
//! - every table is dropped (the redo log and its checkpoints go on as in any database);
//! - if the system parameters differ from those the database opened with (ALTER SYSTEM),
//!   or a workload repository snapshot was written (EXEC snapshot), the database is
//!   checkpointed, closed, its snapshots removed, and opened again.
//!
//! What an input can still see of the ones before it: commit numbers and log positions,
//! statistics, the statement cache, session ids. None should change what a statement
//! does; a finding that does not replay from its input alone would say otherwise.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use db::sql::QueryResult;
use db::state::DbState;
use db::{Change, Database, DbConfig};

/// A small database: three 256 KiB log files (switches, and the checkpoints they ask for,
/// happen every few thousand rows), syncs by fdatasync (tmpfs has no O_DIRECT), and
/// nothing on a timer (no interval checkpoints, no automatic snapshots), so that what an
/// input does depends on the input.
pub fn config() -> DbConfig {
    let mut config = DbConfig::default();
    config.log.log_groups = 3;
    config.log.log_file_size = 256 << 10;
    config.log.log_buffer = 64 << 10;
    config.log.sync_method = redo::SyncMethod::Fdatasync;
    config.checkpoint_interval_ms = 0;
    config.snapshot_interval_override = Some(Duration::ZERO);
    config
}

struct Scratch {
    dir: PathBuf,
    /// None only while it is reopened.
    db: Option<Arc<Database>>,
    /// `v$parameter` as the database opened.
    parameters: String,
}

/// Runs `input` on the process's scratch database, then puts the database back (see the
/// module's doc). Whoever `input` gave the database to must have let go when it returns.
pub fn with_scratch_db<R>(input: impl FnOnce(&Arc<Database>) -> R) -> R {
    static SCRATCH: Mutex<Option<Scratch>> = Mutex::new(None);
    let mut scratch = SCRATCH.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let scratch = scratch.get_or_insert_with(Scratch::create);
    let result = input(scratch.db());
    scratch.reset();
    result
}

impl Scratch {
    fn create() -> Scratch {
        let shm = PathBuf::from("/dev/shm");
        let base = if shm.is_dir() { shm } else { std::env::temp_dir() };
        remove_abandoned(&base);
        let dir = base.join(format!("{PREFIX}{}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).expect("removing an old scratch database");
        }
        let db = Arc::new(Database::open(&dir, config()).expect("a new scratch database opens"));
        let parameters = parameters(&db);
        Scratch { dir, db: Some(db), parameters }
    }

    fn db(&self) -> &Arc<Database> {
        self.db.as_ref().expect("the scratch database is open")
    }

    fn reset(&mut self) {
        let db = self.db().clone();
        let mut session = db.session();
        let tables: Vec<String> = db.snapshot().schemas().map(|s| s.name.clone()).collect();
        for table in tables {
            session.drop_table(&table).expect("a table an input made is dropped");
        }
        drop(session);
        drop(db);
        let awr = db::awr::awr_dir(&self.dir);
        let snapshots = std::fs::read_dir(&awr).is_ok_and(|mut entries| entries.next().is_some());
        if snapshots || parameters(self.db()) != self.parameters {
            // An image of the (empty) state first: the reopen then replays no redo.
            self.db().checkpoint().expect("a checkpoint of the scratch database");
            let db = self.db.take().expect("the scratch database is open");
            drop(Arc::into_inner(db).expect("nothing holds the scratch database after an input"));
            let _ = std::fs::remove_dir_all(&awr);
            let db = Database::open(&self.dir, config()).expect("the scratch database reopens");
            assert_eq!(parameters(&db), self.parameters, "a reopen gives back the configured parameters");
            self.db = Some(Arc::new(db));
        }
    }
}

/// Scratch databases are named after their process.
const PREFIX: &str = "redodb-fuzz-";

/// Removes the scratch databases of processes that have ended (libFuzzer ends a process
/// with `exit`, which runs no destructor).
fn remove_abandoned(base: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else { continue };
        if pid.parse::<u32>().is_ok() && !PathBuf::from("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The system parameters, as `v$parameter` shows them to a new session.
fn parameters(db: &Database) -> String {
    let mut session = db.session();
    match session.execute("SELECT name, value FROM v$parameter ORDER BY name", &[]) {
        Ok(QueryResult::Rows { rows, .. }) => format!("{rows:?}"),
        other => panic!("v$parameter cannot be read: {other:?}"),
    }
}

/// Every committed row fits its table exactly as recovery checks it
/// (`TableSchema::check_stored_row`), and its change record decodes back to it: what SQL
/// commits, the database can replay after a crash.
pub fn check_tables(state: &DbState) {
    for schema in state.schemas() {
        let table = state.table(&schema.name).expect("a table of the state");
        for row in table.rows.values() {
            if let Err(e) = schema.check_stored_row(row) {
                panic!("a committed row recovery would refuse: {e}");
            }
            let mut bytes = Vec::new();
            Change::encode_insert(&schema.name, row, &mut bytes);
            let decoded = Change::decode(&bytes).expect("a change record this build wrote decodes");
            let mut again = Vec::new();
            decoded.encode(&mut again);
            assert!(again == bytes, "a row's change record decodes to another row");
        }
    }
}

/// Cancels the work of an input that runs past its budget: once the budget is spent,
/// `cancel` is called every 10 ms until the watchdog is dropped, and `expired` says so,
/// so the harness starts nothing more. A statement that never looks at its cancel flag
/// still runs on, into libFuzzer's `-timeout`: that is a finding.
pub struct Watchdog {
    done: Arc<(Mutex<bool>, Condvar)>,
    expired: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    pub fn start(budget: Duration, cancel: impl Fn() + Send + 'static) -> Watchdog {
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let expired = Arc::new(AtomicBool::new(false));
        let (thread_done, thread_expired) = (done.clone(), expired.clone());
        let thread = std::thread::spawn(move || {
            let (lock, cv) = &*thread_done;
            let deadline = Instant::now() + budget;
            let mut finished = lock.lock().expect("watchdog poisoned");
            // The input may be done before this thread first looks.
            while !*finished {
                let now = Instant::now();
                if now >= deadline {
                    thread_expired.store(true, Ordering::SeqCst);
                    cancel();
                }
                let wait = if now < deadline { deadline - now } else { Duration::from_millis(10) };
                finished = cv.wait_timeout(finished, wait).expect("watchdog poisoned").0;
            }
        });
        Watchdog { done, expired, thread: Some(thread) }
    }

    pub fn expired(&self) -> bool {
        self.expired.load(Ordering::SeqCst)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let (lock, cv) = &*self.done;
        *lock.lock().expect("watchdog poisoned") = true;
        cv.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
