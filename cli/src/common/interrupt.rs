//! Ctrl-C as an orderly stop: the first SIGINT (or SIGTERM) only raises a flag, which the
//! benchmark's loops check, so that the run ends through its ordinary error path and
//! every guard drops: the throwaway servers are stopped and the temporary directories
//! removed. A second signal ends the process at once (the handler puts the default
//! action back).
//!
//! The servers a run starts are in this process's group, so a Ctrl-C in the terminal
//! reaches them as well and they begin their own clean shutdown at the same moment.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Result};

static REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(signal: libc::c_int) {
    REQUESTED.store(true, Ordering::SeqCst);
    // SAFETY: signal(2) is async-signal-safe; the next signal of this kind ends the
    // process the default way.
    unsafe { libc::signal(signal, libc::SIG_DFL) };
}

/// Installs the handler for SIGINT and SIGTERM.
pub fn install() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic and calls signal(2), both
        // async-signal-safe.
        unsafe { libc::signal(signal, on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t) };
    }
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// An error once a stop was asked for: for the loops of a run to return through.
pub fn check() -> Result<()> {
    if requested() {
        bail!("interrupted (Ctrl-C): stopping");
    }
    Ok(())
}
