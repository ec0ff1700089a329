//! Whether a stopped container still is what its launch recipe makes (tier 1's drift check): its
//! image, its mounts, the names of its variables, its run shape (run_shape.rs) and its network. Pure: plan.rs decides on it
//! from an observation, run.rs checks a replacement with it before the old container goes.
//!
//! No false positives: every recipe in use was either captured from the very container (jackin
//! created it: its `Config.Env` holds its image's variables and its mounts its image's anonymous
//! volumes, which the recipe leaves to the image) or made it (restore created it, and labelled it
//! with the recipe's fingerprint).

use std::collections::BTreeSet;

mod network;
mod run_shape;

pub(crate) use network::{network_is_recipes, not_its_network};

use super::observe::Observation;
use crate::engines::docker::{ContainerDetails, ImageDefaults};
use crate::state::recipe::{self, ContainerRecipe, LaunchRecipe, MountSpec};

/// Which of a stopped session's containers no longer match the launch recipe, and how: each
/// container's name and a phrase for each thing of it that does not match.
#[derive(Debug, Default)]
pub(crate) struct Drifted {
    role: (String, Vec<String>),
    sidecar: Option<(String, Vec<String>)>,
}

/// Which containers tier 1 replaces from the launch recipe instead of starting them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Replacing {
    pub(crate) role: bool,
    pub(crate) sidecar: bool,
}

impl Drifted {
    /// The role container and the sidecar there, each against its recipe (a sidecar the recipe
    /// does not hold by its name is not compared).
    pub(crate) fn of(recipe: &LaunchRecipe, role: &ContainerDetails, seen: &Observation) -> Drifted {
        let image = |there: &ContainerDetails| seen.image_defaults.get(&there.spec.image_id);
        let sidecar = match (&seen.sidecar, &recipe.sidecar) {
            (Some(there), Some(recorded)) if there.name == recorded.spec.name => {
                Some((there.name.clone(), drift(recorded, there, image(there))))
            }
            _ => None,
        };
        Drifted { role: (role.name.clone(), drift(&recipe.role, role, image(role))), sidecar }
    }

    /// Says the drift (a plan's `drift`), a line per container, and returns what to replace:
    /// nothing with `--as-is`, which starts them as they are.
    pub(crate) fn noted(self, drift: &mut Vec<String>, as_is: bool) -> Replacing {
        let replacing = Replacing {
            role: !as_is && !self.role.1.is_empty(),
            sidecar: !as_is && self.sidecar.as_ref().is_some_and(|(_, found)| !found.is_empty()),
        };
        // A sidecar made anew starts its Docker-in-Docker empty.
        let lines = [(self.role, ""), (self.sidecar.unwrap_or_default(), ", without what its Docker-in-Docker kept")];
        for ((name, found), loses) in lines.into_iter().filter(|((_, found), _)| !found.is_empty()) {
            let then = match as_is {
                true => "started as it is, though it differs from its launch recipe (--as-is)".to_owned(),
                false => format!(
                    "replaced from the launch recipe at tier 2{loses}; the old container, with what its writable \
                     layer held outside the mounts, is removed once the new one is checked (--as-is starts it as it is)"
                ),
            };
            drift.push(format!("{name}: {}: {then}", found.join("; ")));
        }
        replacing
    }
}

/// What of `there` no longer matches `recorded`, a phrase each; empty when nothing does. Always
/// field by field: the fingerprint label restore puts on its containers is something anyone with
/// the engine can copy onto another container, so it vouches for one thing only, the image: a
/// container labelled with the fingerprint of the recipe and of the image it runs may run that
/// image (tier 3's rebuild of the role image has another ID than the recipe's), and the label
/// names the image by its content, so a copy vouches for no other. Its mounts, variables, run
/// shape and network are compared as any container's.
pub(crate) fn drift(
    recorded: &ContainerRecipe,
    there: &ContainerDetails,
    image: Option<&ImageDefaults>,
) -> Vec<String> {
    compare(recorded, there, image, !made_from(recorded, there))
}

/// Whether restore made `there` from `recorded` (its label, [`recipe::MADE_FROM_LABEL`]).
pub(crate) fn made_from(recorded: &ContainerRecipe, there: &ContainerDetails) -> bool {
    there.spec.made_from.as_deref() == Some(recipe::fingerprint(recorded, &there.spec.image_id).as_str())
}

/// `there` compared with `recorded` field by field, whatever its label says. `image` is what the
/// image `there` runs gives every container made from it (its variables, its anonymous volumes);
/// without it only what the recipe has and `there` lacks can be told, never what `there` adds.
pub(crate) fn differences(
    recorded: &ContainerRecipe,
    there: &ContainerDetails,
    image: Option<&ImageDefaults>,
) -> Vec<String> {
    compare(recorded, there, image, true)
}

/// [`differences`], its image compared or not.
fn compare(
    recorded: &ContainerRecipe,
    there: &ContainerDetails,
    image: Option<&ImageDefaults>,
    its_image: bool,
) -> Vec<String> {
    let (want, have) = (&recorded.spec, &there.spec);
    let mut found = Vec::new();
    if its_image && !want.image_id.is_empty() && want.image_id != have.image_id {
        found.push(format!("its image is {} now, the launch recipe's is {}", have.image_id, want.image_id));
    }
    let volumes = image.map(|i| i.volumes.as_slice()).unwrap_or_default();
    let (recorded_mounts, mounts) = (mount_keys(&want.mounts, volumes), mount_keys(&have.mounts, volumes));
    let lost = recorded_mounts.difference(&mounts).map(|m| m.destination.as_str());
    let added = mounts.difference(&recorded_mounts).map(|m| m.destination.as_str()).filter(|_| image.is_some());
    let destinations: BTreeSet<&str> = lost.chain(added).collect();
    if !destinations.is_empty() {
        let listed = destinations.into_iter().collect::<Vec<_>>().join(", ");
        found.push(format!("what it mounts at {listed} is not what the launch recipe mounts there"));
    }
    found.extend(env_drift(recorded, there, image));
    found.extend(run_shape::differences(want, have));
    found.extend(network_drift(recorded, there));
    found
}

/// A mount as the comparison sees it: an anonymous volume by where it is mounted (its name is the
/// engine's, new with each container); the image's own anonymous volumes left to the image, as a
/// recipe leaves them (`recipe::mounts_of_launch`).
fn mount_keys(mounts: &[MountSpec], image_volumes: &[String]) -> BTreeSet<MountSpec> {
    recipe::mounts_of_launch(mounts, image_volumes)
        .into_iter()
        .map(|mut m| {
            if recipe::is_anonymous_volume(&m) {
                m.source.clear();
            }
            m
        })
        .collect()
}

/// The variables by name only (a value is never compared, nor written): each of the recipe's must
/// be there, and each one there must be the recipe's or its image's.
fn env_drift(recorded: &ContainerRecipe, there: &ContainerDetails, image: Option<&ImageDefaults>) -> Vec<String> {
    let name = |entry: &String| entry.split_once('=').map_or(entry.clone(), |(n, _)| n.to_owned());
    let want: BTreeSet<String> = recorded.env.iter().map(|b| b.name.clone()).collect();
    let have: BTreeSet<String> = there.env.iter().map(name).collect();
    let mut found = Vec::new();
    let lost: Vec<&str> = want.difference(&have).map(String::as_str).collect();
    if !lost.is_empty() {
        found.push(format!("its environment lacks {} (the launch recipe's)", lost.join(", ")));
    }
    let Some(image) = image else { return found };
    let of_image: BTreeSet<String> = image.env.iter().map(name).collect();
    let added: Vec<&str> =
        have.iter().filter(|n| !want.contains(*n) && !of_image.contains(*n)).map(String::as_str).collect();
    if !added.is_empty() {
        found.push(format!(
            "its environment has {}, which neither the launch recipe nor its image sets",
            added.join(", ")
        ));
    }
    found
}

fn network_drift(recorded: &ContainerRecipe, there: &ContainerDetails) -> Option<String> {
    let (want, have) = (&recorded.spec.network, &there.spec.network);
    let named = |network: &Option<String>| network.as_ref().map_or("no network".to_owned(), |n| format!("network {n}"));
    (want != have).then(|| format!("it is on {} now, the launch recipe's is {}", named(have), named(want)))
}
