//! The restore plan decided from observations made by hand: each tier and each branch of it,
//! without an engine. What the engine says about real sessions is tests/tool/restore.rs's.
use super::*;
use crate::engines::docker::{ImageDefaults, RunState};
use crate::state::recipe::{ContainerRecipe, EnvBinding};
use crate::tools::restore::observe::NoCommit;

/// What a drift line says of a container replaced from the recipe, and of one `--as-is` starts.
const REPLACED: &str = "; the old container, with what its writable layer held outside the mounts, is removed once \
                        the new one is checked (--as-is starts it as it is)";
const AS_IS: &str = "started as it is, though it differs from its launch recipe (--as-is)";

const C: &str = "jk-a1b2c3d4-app";

fn sidecar_name() -> String {
    format!("{C}-dind")
}
fn net() -> String {
    format!("{C}-net")
}
fn volume() -> String {
    format!("{C}-dind-certs")
}

fn spec(name: &str, image: &str, id: &str) -> ContainerSpec {
    ContainerSpec {
        name: name.into(),
        image: image.into(),
        image_id: id.into(),
        network: Some(net()),
        aliases: vec![format!("{name}-alias")],
        ..ContainerSpec::default()
    }
}

fn recipe() -> LaunchRecipe {
    LaunchRecipe {
        format: RECIPE_FORMAT,
        captured_at: "2026-12-01T12:00:00Z".into(),
        captured_by: "jackin-keep".into(),
        role: ContainerRecipe { spec: spec(C, "role:latest", "sha256:role"), env: Vec::new(), health: None },
        sidecar: Some(ContainerRecipe {
            spec: spec(&sidecar_name(), "docker:dind", "sha256:dind"),
            env: Vec::new(),
            health: Some(vec!["docker".into(), "version".into()]),
        }),
        network: Some(NetworkRecipe {
            id: None,
            name: net(),
            labels: Default::default(),
            driver: None,
            internal: true,
            options: Default::default(),
        }),
        certs_volume: Some(volume()),
        agent_toml: Some("role = \"agentsmith\"\n".into()),
        config_literals: Default::default(),
    }
}

fn details(recipe: &ContainerRecipe, running: bool) -> ContainerDetails {
    ContainerDetails {
        id: format!("id-{}", recipe.spec.name),
        name: recipe.spec.name.clone(),
        state: RunState { running, ..RunState::default() },
        spec: recipe.spec.clone(),
        env: Vec::new(),
        network_id: None,
    }
}

/// Everything of the recipe there: both containers as `role`/`sidecar` say, the network (as
/// recorded), the volume and both images.
fn seen(role: Option<bool>, sidecar: Option<bool>) -> Observation {
    let r = recipe();
    let mut seen = Observation {
        role: role.map(|running| details(&r.role, running)),
        sidecar: sidecar.map(|running| details(r.sidecar.as_ref().unwrap(), running)),
        agent_toml_there: true,
        ..Observation::default()
    };
    seen.networks.insert(net(), r.network.clone());
    seen.volumes.insert(volume(), true);
    for s in [&r.role.spec, &r.sidecar.as_ref().unwrap().spec] {
        seen.images.insert(s.image.clone(), Some(s.image_id.clone()));
        seen.images.insert(s.image_id.clone(), Some(s.image_id.clone()));
    }
    seen
}

fn texts(plan: &Plan) -> Vec<String> {
    plan.actions()
}

fn manifest() -> Manifest {
    Manifest::sample(C, "restore_available")
}

#[test]
fn tier_0_with_everything_up_has_nothing_to_start() {
    let plan = decide(&manifest(), Some(&recipe()), seen(Some(true), Some(true)), false);
    assert_eq!(plan.tier, Some(Tier::Running));
    assert!(plan.ready());
    assert_eq!(texts(&plan), [format!("{C} is running: nothing to start")]);
}

#[test]
fn tier_0_starts_a_stopped_sidecar_by_its_own_healthcheck_else_the_recipes() {
    let mut observed = seen(Some(true), Some(false));
    let plan = decide(&manifest(), Some(&recipe()), observed, false);
    let health = vec!["docker".to_owned(), "version".to_owned()];
    assert_eq!(plan.steps, [Step::StartSidecar { name: sidecar_name(), health }]);
    observed = seen(Some(true), Some(false));
    observed.sidecar.as_mut().unwrap().spec.healthcheck = Some(vec!["CMD".into(), "true".into()]);
    let plan = decide(&manifest(), Some(&recipe()), observed, false);
    assert_eq!(plan.steps, [Step::StartSidecar { name: sidecar_name(), health: vec!["true".into()] }]);
}

/// Tier 0 whose sidecar was removed, with its certs volume: the volume comes back first, then
/// the sidecar from the recipe; the removal is drift. Without a recipe that holds it, nothing.
#[test]
fn tier_0_recreates_a_removed_sidecar_and_its_volume() {
    let mut observed = seen(Some(true), None);
    observed.volumes.insert(volume(), false);
    let plan = decide(&manifest(), Some(&recipe()), observed, false);
    assert_eq!(plan.tier, Some(Tier::Running));
    let steps = texts(&plan);
    assert_eq!(steps[0], format!("create volume {}", volume()));
    assert!(steps[1].starts_with(&format!("recreate {} from the launch recipe", sidecar_name())), "{steps:?}");
    assert_eq!(steps.len(), 2);
    assert!(plan.drift.iter().any(|d| d.contains("was removed")), "{plan:?}");
    let plan = decide(&manifest(), None, seen(Some(true), None), false);
    assert!(!plan.ready() && plan.missing[0].contains("no launch recipe holds it"), "{plan:?}");
}

/// Tier 1 after jackin's garbage collection took the network: agent.toml, the network, each
/// stopped container joined to it again, the sidecar, the role container, in that order.
#[test]
fn tier_1_makes_the_network_again_and_joins_the_stopped_containers_to_it() {
    let mut observed = seen(Some(false), Some(false));
    observed.networks.insert(net(), None);
    let plan = decide(&manifest(), Some(&recipe()), observed, false);
    assert_eq!(plan.tier, Some(Tier::Restart));
    assert_eq!(
        texts(&plan),
        [
            "rewrite agent.toml from the launch recipe".to_owned(),
            format!("create network {} (internal)", net()),
            format!("connect {} to network {} again", sidecar_name(), net()),
            format!("connect {C} to network {} again", net()),
            format!("start {} and wait until it is healthy", sidecar_name()),
            format!("start {C}"),
        ]
    );
    let Step::Reconnect { aliases, .. } = &plan.steps[3] else { panic!("{plan:?}") };
    assert_eq!(aliases, &[format!("{C}-alias")]);
}

/// A network there that is not internal, for a session launched on an internal one, stops
/// the resume: it would give the agent a route out.
#[test]
fn tier_1_never_resumes_an_internal_session_on_a_network_with_a_route_out() {
    let mut observed = seen(Some(false), Some(false));
    observed.networks.get_mut(&net()).unwrap().as_mut().unwrap().internal = false;
    let plan = decide(&manifest(), Some(&recipe()), observed, false);
    assert!(!plan.ready());
    assert!(plan.missing[0].contains("route out"), "{plan:?}");
}

#[test]
fn tier_1_without_agent_toml_anywhere_cannot_resume() {
    let mut observed = seen(Some(false), Some(false));
    observed.agent_toml_there = false;
    let mut without = recipe();
    without.agent_toml = None;
    let plan = decide(&manifest(), Some(&without), observed, false);
    assert_eq!(plan.missing, ["agent.toml is gone and no launch recipe holds it"]);
}

/// Tier 2: the tagged image when it is still the recorded one, else the recorded id with the
/// tag's move as drift; the containers are created in the recipe's shape with its variables.
#[test]
fn tier_2_creates_from_the_recorded_image_and_says_when_the_tag_moved() {
    let mut r = recipe();
    r.role.env = vec![EnvBinding { name: "TERM".into(), source: "literal".into(), value: Some("xterm".into()) }];
    let plan = decide(&manifest(), Some(&r), seen(None, None), false);
    assert_eq!(plan.tier, Some(Tier::Recreate));
    assert_eq!(
        texts(&plan),
        [
            format!("create and start {} and wait until it is healthy", sidecar_name()),
            "rewrite agent.toml from the launch recipe".to_owned(),
            format!("create and start {C}"),
        ]
    );
    let Some(Step::CreateRole(role)) = plan.steps.last() else { panic!("{plan:?}") };
    assert_eq!((role.image.as_str(), role.env.len()), ("role:latest", 1));
    let mut moved = seen(None, None);
    moved.images.insert("role:latest".into(), Some("sha256:other".into()));
    let plan = decide(&manifest(), Some(&r), moved, false);
    let Some(Step::CreateRole(role)) = plan.steps.last() else { panic!("{plan:?}") };
    assert_eq!(role.image, "sha256:role");
    assert!(plan.drift.iter().any(|d| d.contains("moved to sha256:other")), "{plan:?}");
}

/// A variable that cannot be resolved now stops the plan by its name and source.
#[test]
fn a_variable_that_cannot_be_resolved_is_named_with_its_source() {
    let mut r = recipe();
    let name = "JACKIN_PLAN_TEST_SURELY_UNSET";
    r.role.env = vec![EnvBinding { name: name.into(), source: format!("env:{name}"), value: None }];
    let plan = decide(&manifest(), Some(&r), seen(None, None), false);
    assert!(!plan.ready());
    assert_eq!(plan.missing_env, [name]);
    assert!(plan.missing[0].starts_with(&format!("needs {name}")), "{plan:?}");
}

/// A first-format recipe recorded the image's own variables and volumes with the launch's:
/// those of the image are left to the image.
#[test]
fn a_first_format_recipe_leaves_the_images_own_variables_to_the_image() {
    let mut r = recipe();
    r.format = 1;
    r.role.env = vec![
        EnvBinding { name: "PATH".into(), source: "literal".into(), value: Some("/bin".into()) },
        EnvBinding { name: "TERM".into(), source: "literal".into(), value: Some("xterm".into()) },
    ];
    let mut observed = seen(None, None);
    observed
        .image_defaults
        .insert("role:latest".into(), ImageDefaults { env: vec!["PATH=/bin".into()], volumes: Vec::new() });
    let plan = decide(&manifest(), Some(&r), observed, false);
    let Some(Step::CreateRole(role)) = plan.steps.last() else { panic!("{plan:?}") };
    assert_eq!(role.env.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(), ["TERM"]);
}

/// Tier 3: the image gone, the role commit resolved (or only at resume, which keeps the plan
/// from being ready); no source at all, or one that cannot be had, stops it.
#[test]
fn tier_3_builds_at_the_resolved_commit_and_says_what_only_the_resume_can_tell() {
    let mut m = manifest();
    m.role_source_git = "https://example.invalid/role.git".into();
    m.role_git_sha = Some("abc1234".into());
    let gone = || {
        let mut observed = seen(None, None);
        observed.images.insert("role:latest".into(), None);
        observed.images.insert("sha256:role".into(), None);
        observed
    };
    let full = "abc1234".to_owned() + &"0".repeat(33);
    let mut observed = gone();
    observed.role_commit = Some(Ok(Some(full.clone())));
    let plan = decide(&m, Some(&recipe()), observed, false);
    assert_eq!(plan.tier, Some(Tier::Rebuild));
    assert!(plan.ready(), "{plan:?}");
    assert_eq!(texts(&plan)[0], format!("build t from https://example.invalid/role.git at abc1234 ({full})"));
    let mut observed = gone();
    observed.role_commit = Some(Ok(None));
    let plan = decide(&m, Some(&recipe()), observed, false);
    assert_eq!(plan.tier, Some(Tier::Rebuild));
    assert!(!plan.ready() && plan.missing.is_empty() && plan.at_resume.len() == 1, "{plan:?}");
    let mut observed = gone();
    observed.role_commit = Some(Err(NoCommit { why: "no such commit".into(), unreachable: false }));
    let plan = decide(&m, Some(&recipe()), observed, false);
    assert_eq!(plan.tier, None);
    assert!(plan.missing.iter().any(|w| w.contains("cannot be rebuilt: no such commit")), "{plan:?}");
    let plan = decide(&manifest(), Some(&recipe()), gone(), false);
    assert!(plan.missing.iter().any(|w| w.contains("no source to rebuild it from")), "{plan:?}");
}

/// What stops a resume before any tier: a recipe of a newer format, a container by the
/// session's name that is another home's, a gone session without a recipe.
#[test]
fn a_newer_recipe_a_foreign_container_or_no_recipe_stops_before_any_tier() {
    let mut newer = recipe();
    newer.format = RECIPE_FORMAT + 1;
    let plan = decide(&manifest(), Some(&newer), seen(Some(true), Some(true)), false);
    assert!(plan.tier.is_none() && plan.missing[0].contains("newer than"), "{plan:?}");
    let mut foreign = seen(Some(true), Some(true));
    foreign.foreign = Some("bound into another home".into());
    let plan = decide(&manifest(), Some(&recipe()), foreign, false);
    assert!(plan.tier.is_none() && plan.steps.is_empty(), "{plan:?}");
    let plan = decide(&manifest(), None, seen(None, None), false);
    assert!(plan.missing[0].starts_with("no launch recipe"), "{plan:?}");
}

#[test]
fn what_only_the_resume_can_tell_keeps_a_plan_from_being_ready() {
    let plan = Plan { tier: Some(Tier::Rebuild), ..Plan::default() };
    assert!(plan.ready());
    let left = Plan { at_resume: vec!["role_git_sha abc1234 is resolved at resume".into()], ..plan };
    assert!(!left.ready());
    assert_eq!(left.not_ready(), "role_git_sha abc1234 is resolved at resume");
    let both = Plan { missing: vec!["needs TOKEN".into()], ..left };
    assert_eq!(both.not_ready(), "needs TOKEN; role_git_sha abc1234 is resolved at resume");
}

#[test]
fn the_tiers_keep_their_numbers() {
    let tiers = [Tier::Running, Tier::Restart, Tier::Recreate, Tier::Rebuild];
    assert_eq!(tiers.map(Tier::number), [0, 1, 2, 3]);
}

// --- tier 1's drift check (drift.rs) ------------------------------------------------------

const ANONYMOUS: &str = "5d0f6c3e9b8a7f1e2d4c6b8a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f10";

fn mount(kind: &str, source: &str, destination: &str) -> recipe::MountSpec {
    recipe::MountSpec { kind: kind.into(), source: source.into(), destination: destination.into(), read_only: false }
}

fn literal(name: &str, value: &str) -> EnvBinding {
    EnvBinding { name: name.into(), source: "literal".into(), value: Some(value.into()) }
}

/// A recipe captured from a real session: the role container's image has its own `ENV`, the
/// sidecar's image declares `VOLUME /var/lib/docker`; the recipe holds only what the launch chose.
fn captured() -> LaunchRecipe {
    let mut r = recipe();
    r.role.env = vec![
        literal("TERM", "xterm"),
        EnvBinding { name: "SECRET_TOKEN".into(), source: "env:SECRET_TOKEN".into(), value: None },
    ];
    r.role.spec.mounts = vec![mount("bind", "/home/op/.jackin/data/x/home", "/home/agent")];
    r.sidecar.as_mut().unwrap().spec.mounts = vec![mount("volume", &volume(), "/certs")];
    r
}

/// The stopped session the recipe was captured from, as the engine shows it: the images' own
/// variables in `Config.Env`, the image's anonymous volume among the sidecar's mounts.
fn stopped_as_captured(r: &LaunchRecipe) -> Observation {
    let mut observed = seen(Some(false), Some(false));
    let role = observed.role.as_mut().unwrap();
    role.spec = r.role.spec.clone();
    role.env =
        vec!["PATH=/bin".into(), "NODE_VERSION=22.11.0".into(), "TERM=xterm".into(), "SECRET_TOKEN=hunter2".into()];
    let sidecar = observed.sidecar.as_mut().unwrap();
    sidecar.spec = r.sidecar.as_ref().unwrap().spec.clone();
    sidecar.spec.mounts.push(mount("volume", ANONYMOUS, "/var/lib/docker"));
    sidecar.env = vec!["PATH=/bin".into(), "DOCKER_VERSION=28.0.4".into()];
    let role_image =
        ImageDefaults { env: vec!["PATH=/bin".into(), "NODE_VERSION=22.11.0".into()], volumes: Vec::new() };
    let dind_image = ImageDefaults {
        env: vec!["PATH=/bin".into(), "DOCKER_VERSION=28.0.4".into()],
        volumes: vec!["/var/lib/docker".into()],
    };
    observed.image_defaults.insert("sha256:role".into(), role_image);
    observed.image_defaults.insert("sha256:dind".into(), dind_image);
    observed
}

fn role_of(observed: &mut Observation) -> &mut ContainerDetails {
    observed.role.as_mut().unwrap()
}

fn sidecar_of(observed: &mut Observation) -> &mut ContainerDetails {
    observed.sidecar.as_mut().unwrap()
}

/// Tier 1 as it always was: the stopped containers started, nothing said.
fn started_as_they_are(plan: &Plan) {
    assert_eq!(plan.tier, Some(Tier::Restart), "{plan:?}");
    assert!(plan.drift.is_empty(), "no drift: {:?}", plan.drift);
    assert!(plan.ready(), "{plan:?}");
    assert_eq!(plan.steps.last(), Some(&Step::StartRole { name: C.into() }));
}

/// What the recipe was captured from is no drift, whatever the images add (their variables,
/// their anonymous volumes), in every recipe format.
#[test]
fn a_container_as_its_recipe_was_captured_from_it_has_not_drifted() {
    let r = captured();
    started_as_they_are(&decide(&manifest(), Some(&r), stopped_as_captured(&r), false));

    // A second-format recipe has the same shape.
    let mut second = r.clone();
    second.format = 2;
    started_as_they_are(&decide(&manifest(), Some(&second), stopped_as_captured(&r), false));

    // The first format recorded the whole `Config.Env` and every mount, the image's included.
    let mut first = r.clone();
    first.format = 1;
    first.role.env.extend([literal("PATH", "/bin"), literal("NODE_VERSION", "22.11.0")]);
    let sidecar = first.sidecar.as_mut().unwrap();
    sidecar.env = vec![literal("PATH", "/bin"), literal("DOCKER_VERSION", "28.0.4")];
    sidecar.spec.mounts.push(mount("volume", ANONYMOUS, "/var/lib/docker"));
    started_as_they_are(&decide(&manifest(), Some(&first), stopped_as_captured(&r), false));

    // Values are never compared: the same names with other values are no drift.
    let mut observed = stopped_as_captured(&r);
    role_of(&mut observed).env = vec!["TERM=dumb".into(), "SECRET_TOKEN=other".into(), "PATH=/usr/bin".into()];
    started_as_they_are(&decide(&manifest(), Some(&r), observed, false));

    // What the image gives cannot be told (the engine did not say): only what is missing counts.
    let mut observed = stopped_as_captured(&r);
    observed.image_defaults.clear();
    started_as_they_are(&decide(&manifest(), Some(&r), observed, false));
}

/// Another image: the container is replaced from the recipe at tier 2, the new one made from the
/// recipe's image, and the drift says why in plain words.
#[test]
fn a_container_on_another_image_is_replaced_at_tier_2() {
    let r = captured();
    let mut observed = stopped_as_captured(&r);
    role_of(&mut observed).spec.image_id = "sha256:other".into();
    observed.image_defaults.insert("sha256:other".into(), observed.image_defaults["sha256:role"].clone());
    let plan = decide(&manifest(), Some(&r), observed, false);
    assert_eq!(plan.tier, Some(Tier::Recreate));
    assert_eq!(
        plan.drift,
        [format!(
            "{C}: its image is sha256:other now, the launch recipe's is sha256:role: replaced from the launch recipe \
             at tier 2{REPLACED}"
        )]
    );
    assert_eq!(
        texts(&plan),
        [
            "rewrite agent.toml from the launch recipe".to_owned(),
            format!("start {} and wait until it is healthy", sidecar_name()),
            format!(
                "replace {C} with one made from the launch recipe, checked before the old one is removed, and start it"
            ),
        ]
    );
    let Some(Step::ReplaceRole(role)) = plan.steps.last() else { panic!("{plan:?}") };
    assert_eq!(role.image, "role:latest");
    assert_eq!(role.spec.name, C);
    assert_eq!(role.env, r.role.env);
    // Replacing it needs what creating it needs: the secret, by name.
    assert_eq!(plan.missing_env, ["SECRET_TOKEN"], "{plan:?}");
}

/// `--as-is`: the same container is started as it is at tier 1, and the drift is still said.
#[test]
fn as_is_starts_a_drifted_container_as_it_is_and_says_so() {
    let r = captured();
    let mut observed = stopped_as_captured(&r);
    role_of(&mut observed).spec.image_id = "sha256:other".into();
    let plan = decide(&manifest(), Some(&r), observed, true);
    assert_eq!(plan.tier, Some(Tier::Restart));
    assert!(plan.ready(), "{plan:?}");
    assert_eq!(plan.steps.last(), Some(&Step::StartRole { name: C.into() }));
    assert_eq!(
        plan.drift,
        [format!("{C}: its image is sha256:other now, the launch recipe's is sha256:role: {AS_IS}")]
    );
}

/// Mounts, variable names and the network are each drift, said in plain words; a variable is
/// named, its value never.
#[test]
fn mounts_variable_names_and_the_network_are_each_drift() {
    let r = captured();
    let drift_of = |edit: &dyn Fn(&mut ContainerDetails)| {
        let mut observed = stopped_as_captured(&r);
        edit(role_of(&mut observed));
        let plan = decide(&manifest(), Some(&r), observed, false);
        assert_eq!(plan.tier, Some(Tier::Recreate), "{plan:?}");
        assert!(matches!(plan.steps.last(), Some(Step::ReplaceRole(_))), "{plan:?}");
        assert_eq!(plan.drift.len(), 1, "{plan:?}");
        plan.drift[0].clone()
    };
    let moved = drift_of(&|role| role.spec.mounts[0].source = "/elsewhere".into());
    assert!(moved.contains("what it mounts at /home/agent is not what the launch recipe mounts there"), "{moved}");
    let added = drift_of(&|role| role.spec.mounts.push(mount("bind", "/tmp", "/scratch")));
    assert!(added.contains("what it mounts at /scratch"), "{added}");
    let read_only = drift_of(&|role| role.spec.mounts[0].read_only = true);
    assert!(read_only.contains("/home/agent"), "{read_only}");
    let lost = drift_of(&|role| role.env.retain(|e| !e.starts_with("SECRET_TOKEN=")));
    assert!(lost.contains("its environment lacks SECRET_TOKEN (the launch recipe's)"), "{lost}");
    let more = drift_of(&|role| role.env.push("EXTRA_KEY=s3cr3t-value".into()));
    assert!(
        more.contains("its environment has EXTRA_KEY, which neither the launch recipe nor its image sets"),
        "{more}"
    );
    assert!(!more.contains("s3cr3t-value") && !more.contains("hunter2"), "no value is ever said: {more}");
    let other_network = drift_of(&|role| role.spec.network = Some("other-net".into()));
    assert!(
        other_network.contains(&format!("it is on network other-net now, the launch recipe's is network {}", net()))
    );
}

/// A container restore made carries the fingerprint of its recipe and of the image it runs:
/// equal, it may run that image (tier 3's rebuilt image is another ID); another fingerprint
/// (labels copied onto a container on another image, or the recipe captured again since) or
/// none: its image is compared too. Everything else is compared whatever the label says: a
/// label copied onto a container with a mount, a variable or a capability more is drift.
#[test]
fn the_fingerprint_label_says_what_a_container_was_made_from() {
    let r = captured();
    let rebuilt = |made_from: Option<String>| {
        let mut observed = stopped_as_captured(&r);
        let role = role_of(&mut observed);
        role.spec.image_id = "sha256:rebuilt".into();
        role.spec.made_from = made_from;
        // The rebuilt image gives its containers what the recipe's did.
        let defaults = observed.image_defaults["sha256:role"].clone();
        observed.image_defaults.insert("sha256:rebuilt".into(), defaults);
        observed
    };
    let fingerprint = recipe::fingerprint(&r.role, "sha256:rebuilt");
    started_as_they_are(&decide(&manifest(), Some(&r), rebuilt(Some(fingerprint.clone())), false));
    let copied = recipe::fingerprint(&r.role, "sha256:role");
    for made_from in [Some(copied), Some("sha256:0123".to_owned()), None] {
        let plan = decide(&manifest(), Some(&r), rebuilt(made_from.clone()), false);
        assert_eq!(plan.tier, Some(Tier::Recreate), "{made_from:?}: {plan:?}");
        assert!(plan.drift[0].contains("its image is sha256:rebuilt now"), "{plan:?}");
    }
    let mut recaptured = stopped_as_captured(&r);
    role_of(&mut recaptured).spec.made_from = Some("sha256:of-an-earlier-recipe".into());
    started_as_they_are(&decide(&manifest(), Some(&r), recaptured, false));

    let with_label = |change: fn(&mut ContainerDetails)| {
        let mut observed = rebuilt(Some(fingerprint.clone()));
        change(role_of(&mut observed));
        decide(&manifest(), Some(&r), observed, false)
    };
    let mounted = with_label(|c| c.spec.mounts.push(mount("bind", "/", "/host")));
    assert!(mounted.drift[0].contains("what it mounts at /host"), "{mounted:?}");
    let variable = with_label(|c| c.env.push("LD_PRELOAD=/x.so".into()));
    assert!(variable.drift[0].contains("LD_PRELOAD"), "{variable:?}");
    let privileged = with_label(|c| {
        c.spec
            .host_config
            .get_or_insert_with(Default::default)
            .insert("CapAdd".into(), serde_json::json!(["SYS_ADMIN"]));
    });
    assert!(privileged.drift[0].contains("CapAdd"), "{privileged:?}");
    for plan in [mounted, variable, privileged] {
        assert_eq!(plan.tier, Some(Tier::Recreate), "{plan:?}");
    }

    let mut moved = rebuilt(Some(fingerprint));
    role_of(&mut moved).spec.network = Some("other-net".into());
    let plan = decide(&manifest(), Some(&r), moved, false);
    assert_eq!(plan.tier, Some(Tier::Recreate));
    assert_eq!(plan.drift.len(), 1, "{plan:?}");
    assert!(plan.drift[0].starts_with(&format!("{C}: it is on network other-net now")), "{plan:?}");
}

/// The fingerprint is the image the container runs and the recipe's mounts, variable names and
/// network: not the variables' order or values, nor anything else of the recipe.
#[test]
fn the_fingerprint_covers_image_mounts_variable_names_and_network() {
    let r = captured().role;
    let same = |edit: &dyn Fn(&mut ContainerRecipe)| {
        let mut other = r.clone();
        edit(&mut other);
        recipe::fingerprint(&other, "sha256:role") == recipe::fingerprint(&r, "sha256:role")
    };
    assert!(recipe::fingerprint(&r, "sha256:role").starts_with("sha256:"));
    assert_ne!(recipe::fingerprint(&r, "sha256:role"), recipe::fingerprint(&r, "sha256:other"));
    assert!(same(&|c| c.env.reverse()));
    assert!(same(&|c| c.env[0].value = Some("dumb".into())));
    assert!(same(&|c| c.spec.cmd = Some(vec!["true".into()])));
    assert!(same(&|c| c.spec.image_id = "sha256:recorded-elsewhere".into()));
    assert!(!same(&|c| c.env.push(literal("LANG", "C"))));
    assert!(!same(&|c| c.spec.mounts[0].read_only = true));
    assert!(!same(&|c| c.spec.network = None));
}

/// A sidecar there whose image no longer matches the recipe's is replaced (the role container
/// started as it is), and the drift says its Docker-in-Docker's state does not come back.
#[test]
fn a_drifted_sidecar_is_replaced_and_the_role_container_started() {
    let r = captured();
    let mut observed = stopped_as_captured(&r);
    sidecar_of(&mut observed).spec.image_id = "sha256:other-dind".into();
    let plan = decide(&manifest(), Some(&r), observed, false);
    assert_eq!(plan.tier, Some(Tier::Recreate));
    assert_eq!(plan.drift.len(), 1, "{plan:?}");
    assert!(
        plan.drift[0].starts_with(&format!(
            "{}: its image is sha256:other-dind now, the launch recipe's is sha256:dind: replaced from the launch \
             recipe at tier 2, without what its Docker-in-Docker kept",
            sidecar_name()
        )),
        "{plan:?}"
    );
    let Some(Step::ReplaceSidecar(sidecar)) = plan.steps.get(1) else { panic!("{plan:?}") };
    assert_eq!((sidecar.image.as_str(), sidecar.health.join(" ")), ("sha256:dind", "docker version".to_owned()));
    assert_eq!(plan.steps.last(), Some(&Step::StartRole { name: C.into() }));

    // With `--as-is`, started as it is.
    let mut observed = stopped_as_captured(&r);
    sidecar_of(&mut observed).spec.network = None;
    let plan = decide(&manifest(), Some(&r), observed, true);
    assert_eq!(plan.tier, Some(Tier::Restart));
    assert!(matches!(plan.steps[1], Step::StartSidecar { .. }), "{plan:?}");
    assert!(plan.drift[0].ends_with(AS_IS), "{plan:?}");
}

/// A role container replaced after jackin's garbage collection took the network: the network is
/// made again before the new container is created on it, and the old one is not joined to it.
#[test]
fn a_replaced_role_container_is_not_joined_to_the_network_made_anew() {
    let r = captured();
    let mut observed = stopped_as_captured(&r);
    observed.networks.insert(net(), None);
    role_of(&mut observed).spec.image_id = "sha256:other".into();
    let plan = decide(&manifest(), Some(&r), observed, false);
    let steps = texts(&plan);
    assert_eq!(steps[1], format!("create network {} (internal)", net()), "{steps:?}");
    assert_eq!(steps[2], format!("connect {} to network {} again", sidecar_name(), net()), "{steps:?}");
    assert!(!steps.contains(&format!("connect {C} to network {} again", net())), "{steps:?}");
}

/// A drifted container whose recipe's image is gone too cannot be replaced: the plan says so and
/// what `--as-is` would do.
#[test]
fn a_drifted_container_whose_recipe_image_is_gone_is_not_replaced() {
    let r = captured();
    let mut observed = stopped_as_captured(&r);
    role_of(&mut observed).spec.image_id = "sha256:other".into();
    observed.images.insert("role:latest".into(), None);
    observed.images.insert("sha256:role".into(), None);
    let plan = decide(&manifest(), Some(&r), observed, false);
    assert!(!plan.ready());
    assert_eq!(
        plan.missing,
        [format!(
            "{C} no longer matches its launch recipe, whose image role:latest is gone too: `--as-is` starts it as it is"
        )]
    );
}
