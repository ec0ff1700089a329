//! `--watch`: follow the engine's events and reconcile the instances they concern.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::{reconcile, Options, Report, Selection};
use crate::engines::docker::{Engine, EventSubscription};
use crate::engines::endpoint::Endpoint;
use crate::state::names::{instance_of, DockerKind, InstanceName};
use crate::state::store::Store;

/// The engine events that can change what an instance's row should say.
pub const WATCHED_EVENTS: [&str; 4] = ["die", "destroy", "start", "oom"];

/// How often a wait looks at the stop flag, and how long the engine is asked for an event.
const POLL: Duration = Duration::from_millis(250);
/// After an event, how long to wait for the next one of the same moment.
const SETTLE: Duration = Duration::from_millis(500);
/// A burst that never pauses is still reconciled this often.
const BURST: Duration = Duration::from_secs(5);

/// The wait before the next try at the engine: one second, doubling up to thirty.
struct Backoff {
    step: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_secs(1);
    const MAX: Duration = Duration::from_secs(30);

    /// Waits one step (cut short when `stop` is set), then doubles the next.
    fn wait(&mut self, stop: &AtomicBool) {
        let until = Instant::now() + self.step;
        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
        }
        self.step = (self.step * 2).min(Self::MAX);
    }
}

/// How following the engine ended, when not by `stop`.
enum Lost {
    /// Say this, wait a backoff step, then connect again.
    Retry(String),
    /// Connect again at once (the engine was followed for a while; its backoff was reset).
    Reconnect,
}

/// Where reports and notices go.
struct Out<S, N> {
    sink: S,
    say: N,
}

/// Follows the engine's events and reconciles the instance each one concerns, after one full
/// pass; reconnects with backoff to the same resolved engine when it goes away (and makes a full
/// pass again, since events were missed). Returns when `stop` is set. `sink` gets every report; `say` the notices.
pub fn watch(
    endpoint: &Endpoint,
    store: &Store,
    options: &Options,
    stop: &AtomicBool,
    sink: impl FnMut(Report) -> Result<()>,
    say: impl FnMut(String),
) -> Result<()> {
    let mut out = Out { sink, say };
    let mut backoff = Backoff { step: Backoff::FIRST };
    let mut connected_once = false;
    while !stop.load(Ordering::Relaxed) {
        let lost = match Engine::connect(endpoint) {
            Ok(engine) => {
                connected_once = true;
                follow(&engine, store, options, stop, &mut backoff, &mut out)?
            }
            Err(e) if !connected_once => return Err(e),
            Err(e) => Lost::Retry(format!("{e:#}; retrying in {}s", backoff.step.as_secs())),
        };
        if let Lost::Retry(notice) = lost {
            (out.say)(notice);
            backoff.wait(stop);
        }
    }
    Ok(())
}

/// One connection: a full pass, then a reconciliation per moment of events, until `stop` is set
/// (`Reconnect`, which the caller's loop then ends on) or the engine is lost.
fn follow(
    engine: &Engine,
    store: &Store,
    options: &Options,
    stop: &AtomicBool,
    backoff: &mut Backoff,
    out: &mut Out<impl FnMut(Report) -> Result<()>, impl FnMut(String)>,
) -> Result<Lost> {
    let mut events = engine.subscribe_events(&WATCHED_EVENTS);
    // Sends the subscription before the full pass, so nothing between the two is lost.
    if let Err(e) = engine.next_event(&mut events, Duration::from_millis(200)) {
        return Ok(Lost::Retry(format!("{e:#}; reconnecting")));
    }
    match reconcile(engine, store, &Selection::All, options) {
        Ok(report) => (out.sink)(report)?,
        Err(e) => return Ok(Lost::Retry(format!("{e:#}; retrying in {}s", backoff.step.as_secs()))),
    }
    backoff.step = Backoff::FIRST;
    (out.say)("watching the engine's events".to_owned());
    while !stop.load(Ordering::Relaxed) {
        let affected = match gather(engine, &mut events, &mut out.say) {
            Ok(affected) => affected,
            Err(e) => {
                (out.say)(format!("{e:#}; reconnecting"));
                return Ok(Lost::Reconnect);
            }
        };
        if affected.is_empty() {
            continue;
        }
        match reconcile(engine, store, &Selection::Instances(affected), options) {
            Ok(report) => (out.sink)(report)?,
            Err(e) => {
                (out.say)(format!("{e:#}; reconnecting"));
                return Ok(Lost::Reconnect);
            }
        }
    }
    Ok(Lost::Reconnect)
}

/// The instances the events of a moment concern. The engine sends `die` before its container
/// list shows the exit, so the events of a moment are gathered (which also coalesces a burst)
/// before one reconciliation.
fn gather(
    engine: &Engine,
    events: &mut EventSubscription<'_>,
    say: &mut impl FnMut(String),
) -> Result<Vec<InstanceName>> {
    let mut affected: Vec<InstanceName> = Vec::new();
    let mut wait = POLL;
    let gathering = Instant::now();
    while let Some(event) = engine.next_event(events, wait)? {
        say(format!("event: {} {}", event.action, event.name));
        if let Some(instance) = instance_of(DockerKind::Container, &event.name, &event.labels) {
            if !affected.contains(&instance) {
                affected.push(instance);
            }
        }
        wait = SETTLE;
        if gathering.elapsed() >= BURST {
            break;
        }
    }
    Ok(affected)
}
