//! Whether a network there is the session's: by what the engine says of it now (the ID a stopped
//! container's endpoint names, the labels and driver the launch gave it), never by its name.

use super::super::observe::Observation;
use crate::engines::docker::ContainerDetails;
use crate::state::recipe::NetworkRecipe;

/// Whether a network there carries every label the launch gave the session's, and its driver
/// when the recipe recorded one. Labels can be copied: the endpoint's network ID
/// ([`not_its_network`]) is what proves a stopped container's network; this keeps a network made
/// by hand under the name from being taken for the session's.
pub(crate) fn network_is_recipes(recorded: &NetworkRecipe, there: &NetworkRecipe) -> bool {
    let labels = recorded.labels.iter().all(|(k, v)| there.labels.get(k) == Some(v));
    labels && (recorded.driver.is_none() || recorded.driver == there.driver)
}

/// Why the network of `container`'s name there now is not the one it was on (its endpoint names
/// another network ID): that one was removed and another made under its name, by someone else
/// (a network the tools make anew is joined again by a step of their own). Starting the container
/// would fail on the gone network, and joining it to the other would put the session on a
/// network that is not proved its own.
pub(crate) fn not_its_network(
    container: &ContainerDetails,
    seen: &Observation,
    made_anew: &[String],
) -> Option<String> {
    let name = container.spec.network.as_ref().filter(|n| !made_anew.contains(n))?;
    let (was_on, there) = (container.network_id.as_deref()?, seen.network(name)?.id.as_deref()?);
    (was_on != there).then(|| {
        format!(
            "network {name} there now is not the one {} was on (that one was removed, and another made under its \
             name): not joined; remove it (docker network rm {name}) and the resume makes the session's from the \
             launch recipe",
            container.name
        )
    })
}
