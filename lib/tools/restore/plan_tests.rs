//! The restore plan decided from observations made by hand: each tier and each branch of it,
//! without an engine. What the engine says about real sessions is tests/tool/restore.rs's.
use super::*;
use crate::engines::docker::{ImageDefaults, RunState};
use crate::state::recipe::{ContainerRecipe, EnvBinding};
use crate::tools::restore::observe::NoCommit;

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
    let plan = decide(&manifest(), Some(&recipe()), seen(Some(true), Some(true)));
    assert_eq!(plan.tier, Some(Tier::Running));
    assert!(plan.ready());
    assert_eq!(texts(&plan), [format!("{C} is running: nothing to start")]);
}

#[test]
fn tier_0_starts_a_stopped_sidecar_by_its_own_healthcheck_else_the_recipes() {
    let mut observed = seen(Some(true), Some(false));
    let plan = decide(&manifest(), Some(&recipe()), observed);
    let health = vec!["docker".to_owned(), "version".to_owned()];
    assert_eq!(plan.steps, [Step::StartSidecar { name: sidecar_name(), health }]);
    observed = seen(Some(true), Some(false));
    observed.sidecar.as_mut().unwrap().spec.healthcheck = Some(vec!["CMD".into(), "true".into()]);
    let plan = decide(&manifest(), Some(&recipe()), observed);
    assert_eq!(plan.steps, [Step::StartSidecar { name: sidecar_name(), health: vec!["true".into()] }]);
}

/// Tier 0 whose sidecar was removed, with its certs volume: the volume comes back first, then
/// the sidecar from the recipe; the removal is drift. Without a recipe that holds it, nothing.
#[test]
fn tier_0_recreates_a_removed_sidecar_and_its_volume() {
    let mut observed = seen(Some(true), None);
    observed.volumes.insert(volume(), false);
    let plan = decide(&manifest(), Some(&recipe()), observed);
    assert_eq!(plan.tier, Some(Tier::Running));
    let steps = texts(&plan);
    assert_eq!(steps[0], format!("create volume {}", volume()));
    assert!(steps[1].starts_with(&format!("recreate {} from the launch recipe", sidecar_name())), "{steps:?}");
    assert_eq!(steps.len(), 2);
    assert!(plan.drift.iter().any(|d| d.contains("was removed")), "{plan:?}");
    let plan = decide(&manifest(), None, seen(Some(true), None));
    assert!(!plan.ready() && plan.missing[0].contains("no launch recipe holds it"), "{plan:?}");
}

/// Tier 1 after jackin's garbage collection took the network: agent.toml, the network, each
/// stopped container joined to it again, the sidecar, the role container, in that order.
#[test]
fn tier_1_makes_the_network_again_and_joins_the_stopped_containers_to_it() {
    let mut observed = seen(Some(false), Some(false));
    observed.networks.insert(net(), None);
    let plan = decide(&manifest(), Some(&recipe()), observed);
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
    let plan = decide(&manifest(), Some(&recipe()), observed);
    assert!(!plan.ready());
    assert!(plan.missing[0].contains("route out"), "{plan:?}");
}

#[test]
fn tier_1_without_agent_toml_anywhere_cannot_resume() {
    let mut observed = seen(Some(false), Some(false));
    observed.agent_toml_there = false;
    let mut without = recipe();
    without.agent_toml = None;
    let plan = decide(&manifest(), Some(&without), observed);
    assert_eq!(plan.missing, ["agent.toml is gone and no launch recipe holds it"]);
}

/// Tier 2: the tagged image when it is still the recorded one, else the recorded id with the
/// tag's move as drift; the containers are created in the recipe's shape with its variables.
#[test]
fn tier_2_creates_from_the_recorded_image_and_says_when_the_tag_moved() {
    let mut r = recipe();
    r.role.env = vec![EnvBinding { name: "TERM".into(), source: "literal".into(), value: Some("xterm".into()) }];
    let plan = decide(&manifest(), Some(&r), seen(None, None));
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
    let plan = decide(&manifest(), Some(&r), moved);
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
    let plan = decide(&manifest(), Some(&r), seen(None, None));
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
    let plan = decide(&manifest(), Some(&r), observed);
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
    let plan = decide(&m, Some(&recipe()), observed);
    assert_eq!(plan.tier, Some(Tier::Rebuild));
    assert!(plan.ready(), "{plan:?}");
    assert_eq!(texts(&plan)[0], format!("build t from https://example.invalid/role.git at abc1234 ({full})"));
    let mut observed = gone();
    observed.role_commit = Some(Ok(None));
    let plan = decide(&m, Some(&recipe()), observed);
    assert_eq!(plan.tier, Some(Tier::Rebuild));
    assert!(!plan.ready() && plan.missing.is_empty() && plan.at_resume.len() == 1, "{plan:?}");
    let mut observed = gone();
    observed.role_commit = Some(Err(NoCommit { why: "no such commit".into(), unreachable: false }));
    let plan = decide(&m, Some(&recipe()), observed);
    assert_eq!(plan.tier, None);
    assert!(plan.missing.iter().any(|w| w.contains("cannot be rebuilt: no such commit")), "{plan:?}");
    let plan = decide(&manifest(), Some(&recipe()), gone());
    assert!(plan.missing.iter().any(|w| w.contains("no source to rebuild it from")), "{plan:?}");
}

/// What stops a resume before any tier: a recipe of a newer format, a container by the
/// session's name that is another home's, a gone session without a recipe.
#[test]
fn a_newer_recipe_a_foreign_container_or_no_recipe_stops_before_any_tier() {
    let mut newer = recipe();
    newer.format = RECIPE_FORMAT + 1;
    let plan = decide(&manifest(), Some(&newer), seen(Some(true), Some(true)));
    assert!(plan.tier.is_none() && plan.missing[0].contains("newer than"), "{plan:?}");
    let mut foreign = seen(Some(true), Some(true));
    foreign.foreign = Some("bound into another home".into());
    let plan = decide(&manifest(), Some(&recipe()), foreign);
    assert!(plan.tier.is_none() && plan.steps.is_empty(), "{plan:?}");
    let plan = decide(&manifest(), None, seen(None, None));
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
