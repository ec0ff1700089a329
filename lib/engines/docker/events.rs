//! The engine's container events, read one at a time with a deadline.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use anyhow::Result;
use bollard::errors::Error as BollardError;
use bollard::query_parameters::EventsOptionsBuilder;
use futures_util::StreamExt;

use super::{filters, Engine};

/// An engine event about a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContainerEvent {
    pub(crate) action: String,
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
}

/// A subscription to the engine's container events, read one event at a time with a deadline so
/// that the caller can make other engine calls and check for signals between events.
pub(crate) struct EventSubscription<'a> {
    stream:
        std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<bollard::models::EventMessage, BollardError>> + 'a>>,
}

impl Engine {
    /// Subscribes to container events of jackin's containers with these actions. The request is
    /// sent on the first [`Engine::next_event`].
    pub(crate) fn subscribe_events(&self, actions: &[&str]) -> EventSubscription<'_> {
        let mut pairs = vec![("type", "container"), ("label", "jackin.managed=true")];
        pairs.extend(actions.iter().map(|a| ("event", *a)));
        let options = EventsOptionsBuilder::new().filters(&filters(&pairs)).build();
        super::count_call();
        EventSubscription { stream: Box::pin(self.api.events(Some(options))) }
    }

    /// The next event, waiting at most `wait`: `Ok(None)` when none came in time, an error when
    /// the stream broke or ended (the engine went away).
    pub(crate) fn next_event(
        &self,
        subscription: &mut EventSubscription<'_>,
        wait: Duration,
    ) -> Result<Option<ContainerEvent>> {
        let next = self.runtime.block_on(async { tokio::time::timeout(wait, subscription.stream.next()).await });
        match next {
            Err(_) => Ok(None),
            Ok(None) => Err(anyhow::anyhow!(self.doing("the engine closed its event stream"))),
            Ok(Some(Err(e))) => Err(anyhow::Error::new(e).context(self.doing("reading the engine's events"))),
            Ok(Some(Ok(event))) => {
                let attributes = event.actor.unwrap_or_default().attributes.unwrap_or_default();
                Ok(Some(ContainerEvent {
                    action: event.action.unwrap_or_default(),
                    name: attributes.get("name").cloned().unwrap_or_default(),
                    labels: attributes.into_iter().collect(),
                }))
            }
        }
    }
}

impl Engine {
    /// What the engine remembers of the container named `name` since `since`, up to now: each
    /// event's action (`create`, `start`, `die`, `destroy`) and time, oldest first. The engine
    /// keeps its last few hundred events in memory only: an empty answer says nothing (the
    /// events may have been dropped, or the engine restarted).
    pub(crate) fn container_history(&self, name: &str, since: SystemTime) -> Result<Vec<(String, SystemTime)>> {
        let stamp = |at: SystemTime| {
            let d = at.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
            format!("{}.{:09}", d.as_secs(), d.subsec_nanos())
        };
        let pairs = [("type", "container"), ("container", name)];
        let (since, until) = (stamp(since), stamp(SystemTime::now()));
        let options = EventsOptionsBuilder::new().since(&since).until(&until).filters(&filters(&pairs)).build();
        super::count_call();
        let read = async {
            let mut stream = self.api.events(Some(options));
            let mut history = Vec::new();
            while let Some(event) = stream.next().await {
                let event = event?;
                let named = event.actor.as_ref().and_then(|a| a.attributes.as_ref()).and_then(|a| a.get("name"));
                if named.is_some_and(|n| n == name) {
                    let nanos = event.time_nano.unwrap_or_default();
                    let at = crate::base::time::at_epoch_offset(
                        nanos.div_euclid(1_000_000_000),
                        nanos.rem_euclid(1_000_000_000),
                    );
                    history.push((event.action.unwrap_or_default(), at));
                }
            }
            Ok::<_, BollardError>(history)
        };
        let answer = self.runtime.block_on(async { tokio::time::timeout(HISTORY_WAIT, read).await });
        match answer {
            Err(_) => Err(anyhow::anyhow!(self.doing("the engine's events did not end in time"))),
            Ok(Err(e)) => Err(anyhow::Error::new(e).context(self.doing("reading the engine's events"))),
            Ok(Ok(history)) => Ok(history),
        }
    }
}

/// An events query with an end time is answered from memory at once; this only bounds an
/// engine that does not.
const HISTORY_WAIT: Duration = Duration::from_secs(5);
