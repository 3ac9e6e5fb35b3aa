//! The `sql` target: arbitrary text executed by a session of the scratch database
//! (`scratch`), one call per line (`Session::execute_batch_until_error`, what a simple
//! query of the wire server runs), so that an error on one line leaves the next to run.
//!
//! Bounds: the input's length (`-max_len`), and a watchdog that cancels the statement
//! running when the input has used its budget (a statement that inserts from its own
//! table doubles it each time: a few lines would otherwise run for minutes).
//!
//! Invariant checked: every row the session committed fits its table as recovery checks
//! it, and its change record decodes back to it (`scratch::check_tables`).

use std::time::Duration;

use crate::scratch::{check_tables, with_scratch_db, Watchdog};

/// The time an input's statements may take before they are cancelled.
pub const BUDGET: Duration = Duration::from_millis(500);

pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    with_scratch_db(|db| {
        let mut session = db.session();
        let cancel = session.cancel_handle();
        let watchdog = Watchdog::start(BUDGET, move || cancel.cancel());
        for line in text.split('\n') {
            if watchdog.expired() {
                break;
            }
            let _ = session.execute_batch_until_error(line);
            session.take_notices();
        }
        drop(watchdog);
        // Rolls back a transaction left open.
        drop(session);
        check_tables(&db.snapshot());
    });
}
