//! The engine's container events, read one at a time with a deadline.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

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
        self.calls.fetch_add(1, Ordering::Relaxed);
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
