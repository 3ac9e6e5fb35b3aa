//! The live progress bar on stderr: which configuration runs and its commits/s so far.
//! Hidden when stderr is not a terminal; then each finished configuration is one plain
//! line instead, so logs of CI runs still tell what happened.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::common::thousands;

pub struct Progress {
    bar: ProgressBar,
    label: Mutex<(String, Instant)>,
}

impl Progress {
    pub fn new() -> Progress {
        Progress::with_target(ProgressDrawTarget::stderr())
    }

    fn with_target(target: ProgressDrawTarget) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(0), target);
        let style = ProgressStyle::with_template("{spinner} [{pos}/{len}] {elapsed:>4} {wide_msg}")
            .expect("a valid progress template");
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress { bar, label: Mutex::new((String::new(), Instant::now())) }
    }

    /// Starts a scenario of `configurations` runs.
    pub fn scenario(&self, name: &str, configurations: u64) {
        self.bar.set_length(configurations);
        self.bar.set_position(0);
        self.bar.set_message(name.to_string());
    }

    /// What runs now (set-up steps too).
    pub fn start_config(&self, label: &str) {
        *self.label.lock().expect("label poisoned") = (label.to_string(), Instant::now());
        self.bar.set_message(label.to_string());
    }

    /// The measured window so far.
    pub fn tick(&self, commits: u64, elapsed: Duration) {
        let mut label = self.label.lock().expect("label poisoned");
        if label.1.elapsed() < Duration::from_millis(100) {
            return;
        }
        label.1 = Instant::now();
        let rate = commits as f64 / elapsed.as_secs_f64().max(1e-6);
        self.bar.set_message(format!("{}: {} commits/s", label.0, thousands(rate)));
    }

    /// A configuration finished: `line` says how it went.
    pub fn finish_config(&self, line: &str) {
        self.bar.inc(1);
        self.line(line);
    }

    /// A line above the bar (or on stderr when the bar is hidden).
    pub fn line(&self, line: &str) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    /// Runs `f` with the bar off the screen, for output of its own (tables, other
    /// commands' progress lines).
    pub fn suspend<T>(&self, f: impl FnOnce() -> T) -> T {
        self.bar.suspend(f)
    }

    pub fn done(&self) {
        self.bar.finish_and_clear();
    }
}
