//! Progress of the long commands (`eval`, `ingest`, `reindex`, `migrate`,
//! `import`, `export`, `setup`), so that a slow run can be told from a hung
//! one. On a terminal, a bar per phase with its rate and ETA; otherwise (a
//! log file, a CI job, a container) a log line when a phase starts, one
//! every [`LOG_EVERY`] while it runs, whether or not it moved, and one when
//! it ends. A run that stops early (an error, Ctrl-C) says in which phase
//! and at which count ([`Reporter::stopped`], [`Reporter::interrupted`]).
//!
//! One [`Reporter`] per command; it is the eval's [`Progress`], and the
//! commands whose engine calls take a callback (`add_bulk`, `reindex`,
//! `copy_store`, the export and import) feed it through
//! [`Reporter::set`] and [`Progress::advance`].
//!
//! Threading: the state is behind a mutex; the periodic lines come from one
//! thread per reporter that sleeps on a condition variable between them and
//! ends when the reporter is dropped.

use std::io::IsTerminal;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::eval::Progress;

/// How often a log line reports a running phase when stderr is not a
/// terminal.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// A bar on stderr, which is a terminal.
    Bar,
    /// Log lines (tracing `info`).
    Lines,
}

/// The phase a command is in.
struct Phase {
    name: String,
    /// What inside the phase (`migrate`'s table), when the command says.
    detail: Option<String>,
    done: u64,
    /// 0: not known.
    total: u64,
    started: Instant,
}

impl Phase {
    /// `scifact: ingest: 12000/49385 (24.3%), 812/s, eta 46 s, 15 s in`.
    fn describe(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64();
        let rate = self.done as f64 / secs.max(1e-3);
        let mut s = self.name.clone();
        if let Some(d) = &self.detail {
            s.push_str(&format!(" ({d})"));
        }
        if self.total > 0 {
            s.push_str(&format!(
                ": {}/{} ({:.1}%), {rate:.0}/s",
                self.done,
                self.total,
                100.0 * self.done as f64 / self.total as f64
            ));
        } else if self.done > 0 {
            s.push_str(&format!(": {}, {rate:.0}/s", self.done));
        }
        if self.total > self.done && self.done > 0 {
            let eta = (self.total - self.done) as f64 / rate;
            s.push_str(&format!(", eta {}", human_secs(eta)));
        }
        s.push_str(&format!(", {} in", human_secs(secs)));
        s
    }

    /// Where a run that stops now was.
    fn position(&self) -> String {
        let mut s = self.name.clone();
        if let Some(d) = &self.detail {
            s.push_str(&format!(" ({d})"));
        }
        if self.total > 0 {
            s.push_str(&format!(" at {}/{}", self.done, self.total));
        } else {
            s.push_str(&format!(" at {}", self.done));
        }
        s
    }
}

fn human_secs(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..=99 => format!("{s} s"),
        100..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s / 60) % 60),
    }
}

#[derive(Default)]
struct State {
    phase: Option<Phase>,
    bar: Option<ProgressBar>,
    /// When the last log line was written.
    logged: Option<Instant>,
    /// The reporter is dropped: the log thread ends.
    closed: bool,
}

struct Shared {
    command: &'static str,
    mode: Mode,
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn log(&self, state: &mut State, end: &str) {
        if let Some(p) = &state.phase {
            tracing::info!("{} progress: {}{end}", self.command, p.describe());
            state.logged = Some(Instant::now());
        }
    }
}

/// The progress of one command (see the module documentation).
pub struct Reporter {
    shared: Arc<Shared>,
    ticker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Reporter {
    /// A bar when stderr is a terminal, log lines otherwise.
    pub fn new(command: &'static str) -> Self {
        let mode = if std::io::stderr().is_terminal() {
            Mode::Bar
        } else {
            Mode::Lines
        };
        Self::with_mode(command, mode)
    }

    fn with_mode(command: &'static str, mode: Mode) -> Self {
        Reporter {
            shared: Arc::new(Shared {
                command,
                mode,
                state: Mutex::new(State::default()),
                wake: Condvar::new(),
            }),
            ticker: Mutex::new(None),
        }
    }

    /// Starts the periodic lines on the first phase of a run without a
    /// terminal.
    fn ensure_ticker(&self) {
        if self.shared.mode != Mode::Lines {
            return;
        }
        let mut ticker = self.ticker.lock().unwrap_or_else(|e| e.into_inner());
        if ticker.is_some() {
            return;
        }
        let shared = self.shared.clone();
        // Wakes every second and writes a line when the last one is
        // LOG_EVERY old, whatever the phase did meanwhile.
        *ticker = Some(std::thread::spawn(move || {
            let mut state = shared.lock();
            while !state.closed {
                let (mut next, _) = shared
                    .wake
                    .wait_timeout(state, Duration::from_secs(1))
                    .unwrap_or_else(|e| e.into_inner());
                if !next.closed && next.logged.is_some_and(|t| t.elapsed() >= LOG_EVERY) {
                    shared.log(&mut next, "");
                }
                state = next;
            }
        }));
    }

    /// The phase's position: `done` of `total` (0: not known).
    pub fn set(&self, done: u64, total: u64) {
        let mut state = self.shared.lock();
        if let Some(p) = &mut state.phase {
            p.done = done;
            p.total = total;
        }
        if let Some(b) = &state.bar {
            if total > 0 && b.length() != Some(total) {
                b.set_length(total);
                b.set_style(bar_style(self.shared.command, true));
            }
            b.set_position(done);
        }
    }

    /// What the phase is working on now (`migrate`'s table).
    pub fn detail(&self, detail: &str) {
        let mut state = self.shared.lock();
        if let Some(p) = &mut state.phase {
            if p.detail.as_deref() == Some(detail) {
                return;
            }
            p.detail = Some(detail.to_string());
        }
        if let Some(b) = &state.bar {
            b.set_message(format!("({detail})"));
        }
    }

    /// A step of a command whose steps have no count (`setup`'s downloads):
    /// said at once (above the bar on a terminal), then timed as a phase.
    pub fn step(&self, what: &str) {
        if self.shared.mode == Mode::Bar {
            if let Some(b) = self.shared.lock().bar.take() {
                b.finish_and_clear();
            }
            eprintln!("{what}");
        }
        self.start(what, 0);
    }

    /// The error a run that stopped early ends with: where it was, then why.
    pub fn stopped(&self, error: anyhow::Error) -> anyhow::Error {
        match self.clear() {
            Some(at) => error.context(format!("{} stopped during {at}", self.shared.command)),
            None => error,
        }
    }

    /// Says where an interrupted run was (on stderr, whatever the log filter).
    pub fn interrupted(&self) {
        let at = self.clear();
        eprintln!(
            "{} interrupted{}",
            self.shared.command,
            at.map(|a| format!(" during {a}")).unwrap_or_default()
        );
    }

    /// Clears the bar; the position of the phase that was running, if any.
    fn clear(&self) -> Option<String> {
        let mut state = self.shared.lock();
        if let Some(b) = state.bar.take() {
            b.abandon();
        }
        state.phase.take().map(|p| p.position())
    }
}

fn bar_style(command: &str, known_total: bool) -> ProgressStyle {
    let template = if known_total {
        format!(
            "{command} {{prefix}} {{msg}} {{bar:30}} {{pos}}/{{len}} ({{per_sec}}, eta {{eta}})"
        )
    } else {
        format!("{command} {{prefix}} {{msg}} {{spinner}} {{pos}} ({{per_sec}}, {{elapsed}})")
    };
    ProgressStyle::with_template(&template).expect("a valid template")
}

impl Progress for Reporter {
    fn start(&self, phase: &str, total: u64) {
        self.ensure_ticker();
        let mut state = self.shared.lock();
        if let Some(b) = state.bar.take() {
            b.finish_and_clear();
        }
        state.phase = Some(Phase {
            name: phase.to_string(),
            detail: None,
            done: 0,
            total,
            started: Instant::now(),
        });
        match self.shared.mode {
            Mode::Bar => {
                let bar =
                    ProgressBar::new(total).with_style(bar_style(self.shared.command, total > 0));
                bar.set_prefix(phase.to_string());
                bar.enable_steady_tick(Duration::from_millis(250));
                state.bar = Some(bar);
            }
            Mode::Lines => self.shared.log(&mut state, ""),
        }
    }

    fn advance(&self, n: u64) {
        let mut state = self.shared.lock();
        if let Some(p) = &mut state.phase {
            p.done += n;
        }
        if let Some(b) = &state.bar {
            b.inc(n);
        }
    }

    fn finish(&self) {
        let mut state = self.shared.lock();
        if let Some(b) = state.bar.take() {
            b.finish_and_clear();
        }
        if self.shared.mode == Mode::Lines {
            self.shared.log(&mut state, " (done)");
        }
        state.phase = None;
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.wake.notify_all();
        let ticker = self.ticker.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = ticker.take() {
            let _ = t.join();
        }
        if let Some(b) = self.shared.lock().bar.take() {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_reads_as_position_rate_and_eta() {
        let p = Phase {
            name: "scifact: ingest".into(),
            detail: None,
            done: 250,
            total: 1000,
            started: Instant::now() - Duration::from_secs(10),
        };
        let s = p.describe();
        assert!(
            s.starts_with("scifact: ingest: 250/1000 (25.0%), 25/s, eta 30 s"),
            "{s}"
        );
        assert_eq!(p.position(), "scifact: ingest at 250/1000");
        let unknown = Phase {
            total: 0,
            detail: Some("memories".into()),
            ..p
        };
        assert!(unknown
            .describe()
            .starts_with("scifact: ingest (memories): 250, 25/s, 10 s in"));
        assert_eq!(human_secs(3725.0), "1h02m");
        assert_eq!(human_secs(125.0), "2m05s");
    }

    #[test]
    fn a_stopped_run_names_its_phase_and_count() {
        let r = Reporter::with_mode("ingest", Mode::Lines);
        r.start("write", 100);
        r.advance(40);
        r.set(42, 100);
        let e = r.stopped(anyhow::anyhow!("disk full"));
        assert_eq!(
            format!("{e:#}"),
            "ingest stopped during write at 42/100: disk full"
        );
        // Between phases there is nowhere to name.
        r.start("optimize", 0);
        r.finish();
        assert_eq!(format!("{:#}", r.stopped(anyhow::anyhow!("x"))), "x");
    }
}
