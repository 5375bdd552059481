//! Progress on standard error while a long command runs (`get --all`, `bench`, a replica
//! catching up with its group): a counter with its rate, or a spinner with the time taken,
//! drawn only when standard error is a terminal (a script's output stays as it was) and
//! cleared at the end.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Duration;

/// A running count of `what` (e.g. "got") in `unit`s, out of `total` when it is known.
pub fn counter(what: &str, unit: &str, total: Option<u64>) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
    let template = match total {
        Some(_) => format!("{{prefix}} {{pos}}/{{len}} {unit} ({{per_sec}}) {{wide_bar}} {{eta}}"),
        None => format!("{{spinner}} {{prefix}} {{pos}} {unit} ({{per_sec}}, {{elapsed}})"),
    };
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar.set_prefix(what.to_string());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// A spinner saying what runs and for how long (a benchmark's rounds).
pub fn spinner(what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.set_message(what.to_string());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
