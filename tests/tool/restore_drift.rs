//! Drift at tier 1 and the create-before-destroy replacement (issue 51), against a real Docker
//! engine: a stopped container that no longer matches its launch recipe is replaced from the
//! recipe at tier 2 (or started as it is with `--as-is`), the new one created and checked before
//! the old one goes, and a run killed at any step of the replacement leaves the old one as it was
//! or a rerun finishes the job. The sessions are shaped like a real host's: a role image with its
//! own `ENV` and `USER`, a DinD image that declares a `VOLUME`, an internal network; their
//! recipes captured by `jackin-reconcile` from the very containers, as its cron job does.

use crate::common;

use std::collections::BTreeMap;
use std::fs;

use common::docker::{
    build_real_images, docker, docker_quiet, engine_available, Session, SessionOptions, TEST_DIND_IMAGE, TEST_IMAGE,
    TEST_REAL_DIND_IMAGE, TEST_ROLE_IMAGE,
};
use common::records::{envelopes, Restored};
use common::{stderr, unique_id, Home, Instance};

/// What a drift line adds when a container is replaced from its recipe.
const REPLACED: &str = "; the old container, with what its writable layer held outside the mounts, is removed once \
                        the new one is checked (--as-is starts it as it is)";

const LABEL: &str = "jackin-tools.recipe";
const SECRET: &str = "drift-secret-4e1d";

/// A session launched as jackin launches one, running, its recipe captured by
/// `jackin-reconcile`, then stopped (its status `restore_available`, as a keep of a detached
/// session leaves it with its containers kept); the role image tagged for this test alone.
struct Stopped {
    home: Home,
    inst: Instance,
    image: String,
    _session: Session,
}

impl Stopped {
    fn new() -> Stopped {
        Stopped::with_sidecar_ready_after(0)
    }

    /// The session with a sidecar whose health command passes `seconds` after each start.
    fn with_sidecar_ready_after(seconds: u32) -> Stopped {
        build_real_images();
        let id = unique_id();
        let mut home = Home::new();
        let inst = home.instance(&id, |_, _| Vec::new());
        let c = inst.container.clone();
        home.with_sidecar(&c);
        let sockets = home.home.join("sockets").join(&c);
        fs::create_dir_all(&sockets).unwrap();
        fs::write(sockets.join("agent.toml"), "role = \"agent-smith\"\n").unwrap();
        let image = format!("jackin-test-role-{id}:latest");
        docker(&["tag", TEST_ROLE_IMAGE, &image]);
        let session = Session::launch(
            &c,
            SessionOptions {
                image: Some(&image),
                sidecar_image: Some(TEST_REAL_DIND_IMAGE),
                internal_network: true,
                env: vec![("SECRET_TOKEN", SECRET), ("TERM", "xterm")],
                sidecar_ready_after: seconds,
                ..Default::default()
            },
        );
        let out = home.cmd("jackin-reconcile").args([&c, "--format=json"]).output().unwrap();
        assert!(out.status.success(), "reconcile: {}", stderr(&out));
        assert!(home.continuity(&c).recipe.is_some(), "reconcile captured the launch recipe");
        docker(&["stop", "-t", "0", &c, &format!("{c}-dind")]);
        home.set_status(&c, "restore_available", None);
        Stopped { home, inst, image, _session: session }
    }

    fn c(&self) -> &str {
        &self.inst.container
    }

    fn sidecar(&self) -> String {
        format!("{}-dind", self.c())
    }

    /// jackin-restore with the session's secret in its environment.
    fn restore(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = self.home.cmd("jackin-restore");
        cmd.args(args).arg("--format=json").env("SECRET_TOKEN", SECRET).env_remove("JACKIN_RESTORE_CRASH_AT");
        cmd.output().unwrap()
    }

    /// A run that went through: its `restored` record.
    fn resumed(&self, args: &[&str]) -> Restored {
        let out = self.restore(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        envelopes(&out.stdout)[0].data()
    }

    /// The role container made again by hand on `image`, as an operator would with `docker rm`
    /// and `docker create`: the same name, labels, network, hostname and launch variables.
    fn role_by_hand(&self, image: &str) {
        self.role_by_hand_with(image, &[]);
    }

    /// [`Stopped::role_by_hand`] with more `docker create` arguments.
    fn role_by_hand_with(&self, image: &str, more: &[&str]) {
        let c = self.c();
        let labels = labels_of(c);
        docker(&["rm", "-f", "-v", c]);
        let net = format!("{c}-net");
        let mut args: Vec<String> =
            // The launch's run shape (its memory limit, its image's user): only the image differs.
            ["create", "--name", c, "--network", &net, "--hostname", "agent", "-w", "/workspace", "--memory", "64m", "--user", "1000:1000"]
                .map(String::from)
                .to_vec();
        for (key, value) in &labels {
            args.extend(["--label".into(), format!("{key}={value}")]);
        }
        args.extend(more.iter().map(|a| a.to_string()));
        args.extend(
            ["-e", &format!("SECRET_TOKEN={SECRET}"), "-e", "TERM=xterm", image, "sleep", "3600"].map(String::from),
        );
        docker(&args.iter().map(String::as_str).collect::<Vec<_>>());
    }

    /// The sidecar made again by hand on `image`: the same name, labels, network alias and certs
    /// volume, healthy at once by its own healthcheck. Returns the anonymous volume the image
    /// gives it.
    fn sidecar_by_hand(&self, image: &str) -> String {
        let (c, sidecar) = (self.c(), self.sidecar());
        let labels = labels_of(&sidecar);
        docker(&["rm", "-f", "-v", &sidecar]);
        let (net, certs) = (format!("{c}-net"), format!("{c}-dind-certs:/certs"));
        let mut args: Vec<String> =
            ["create", "--name", &sidecar, "--network", &net, "--network-alias", "dind", "-v", &certs]
                .map(String::from)
                .to_vec();
        for (key, value) in &labels {
            args.extend(["--label".into(), format!("{key}={value}")]);
        }
        args.extend(["--health-cmd", "true", image, "sleep", "3600"].map(String::from));
        docker(&args.iter().map(String::as_str).collect::<Vec<_>>());
        inspect(&sidecar, "{{range .Mounts}}{{if eq .Destination \"/var/lib/docker\"}}{{.Name}}{{end}}{{end}}")
    }

    /// The files whose bytes a replacement killed before it removed anything leaves as they
    /// were: the manifest, the tools' continuity file, the index.
    fn files(&self) -> Vec<Vec<u8>> {
        let meta = self.inst.dir.join(".jackin");
        [meta.join("instance.json"), meta.join("continuity.json"), self.home.index_path()]
            .iter()
            .map(|path| fs::read(path).unwrap())
            .collect()
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        for interim in [interim(self.c()), interim(&self.sidecar())] {
            let _ = docker_quiet(&["rm", "-f", "-v", &interim]);
        }
        let _ = docker_quiet(&["rmi", &self.image]);
    }
}

/// Where a replacement waits for the old container to go (lib/tools/restore/run.rs).
fn interim(container: &str) -> String {
    format!("{container}.jackin-restore")
}

fn labels_of(container: &str) -> BTreeMap<String, String> {
    serde_json::from_str(&docker(&["inspect", "-f", "{{json .Config.Labels}}", container])).unwrap()
}

fn inspect(container: &str, format: &str) -> String {
    docker(&["inspect", "-f", format, container])
}

fn image_id(image: &str) -> String {
    docker(&["image", "inspect", "-f", "{{.Id}}", image])
}

/// (ID, state) of a container, `None` when there is none by that name.
fn identity(container: &str) -> Option<(String, String)> {
    docker_quiet(&["inspect", "-f", "{{.Id}} {{.State.Status}}", container])
        .map(|out| out.split_once(' ').map(|(id, state)| (id.to_owned(), state.to_owned())).unwrap())
}

/// A stopped role container recreated by hand on another image: `--plan` says it would be
/// replaced at tier 2 and why, and changes nothing; `--as-is` starts it as it is at tier 1 and
/// still says why it drifted; a plain resume replaces it from the recipe: the new container runs
/// the recipe's image and carries its fingerprint, the sidecar is left as it was, and nothing is
/// left under the interim name.
#[test]
fn a_role_container_on_another_image_is_replaced_from_the_recipe_or_started_as_it_is() {
    if !engine_available("a_role_container_on_another_image_is_replaced_from_the_recipe_or_started_as_it_is") {
        return;
    }
    let s = Stopped::new();
    let c = s.c().to_owned();
    let (recorded, other) = (image_id(&s.image), image_id(TEST_IMAGE));
    s.role_by_hand(TEST_IMAGE);
    let by_hand = identity(&c).unwrap();
    let sidecar = identity(&s.sidecar()).unwrap();
    let why = format!("{c}: its image is {other} now, the launch recipe's is {recorded}");

    let before = s.home.snapshot();
    let planned = s.resumed(&[&c, "--plan"]);
    assert_eq!(planned.tier, Some(2), "{planned:?}");
    assert_eq!(planned.drift, [format!("{why}: replaced from the launch recipe at tier 2{REPLACED}")]);
    let replace = format!(
        "replace {c} with one made from the launch recipe, checked before the old one is removed, and start it"
    );
    assert!(planned.actions.contains(&replace), "{planned:?}");
    assert_eq!(identity(&c), Some(by_hand.clone()), "--plan changes nothing");
    assert!(s.home.snapshot() == before, "--plan writes nothing");
    // The text says it too: why the container is replaced, and that the old one goes.
    let text = s.home.cmd("jackin-restore").args([c.as_str(), "--plan", "--format=text"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("\n  drift: {why}: replaced from the launch recipe at tier 2{REPLACED}")), "{text}");

    let as_is = s.resumed(&[&c, "--yes", "--as-is"]);
    assert_eq!(as_is.tier, Some(1), "{as_is:?}");
    assert_eq!(as_is.drift, [format!("{why}: started as it is, though it differs from its launch recipe (--as-is)")]);
    assert_eq!(identity(&c), Some((by_hand.0.clone(), "running".into())), "the very container, started");
    docker(&["stop", "-t", "0", &c, &s.sidecar()]);

    let rec = s.resumed(&[&c, "--yes"]);
    assert_eq!(rec.tier, Some(2), "{rec:?}");
    assert_eq!(rec.drift, planned.drift);
    assert!(rec.actions.contains(&replace), "{rec:?}");
    let (id, state) = identity(&c).unwrap();
    assert_ne!(id, by_hand.0, "a new container");
    assert_eq!(state, "running");
    assert_eq!(inspect(&c, "{{.Image}}"), recorded, "the recipe's image");
    assert!(labels_of(&c)[LABEL].starts_with("sha256:"), "{:?}", labels_of(&c));
    assert_eq!(docker(&["exec", &c, "sh", "-c", "echo $SECRET_TOKEN"]), SECRET);
    assert_eq!(identity(&s.sidecar()).unwrap().0, sidecar.0, "the sidecar is the one there");
    assert!(identity(&interim(&c)).is_none(), "nothing under the interim name");
    assert_eq!(s.home.status(&c), ("active".into(), "active".into()));
}

/// A sidecar recreated by hand on another image (one that still declares the DinD volume): it is
/// replaced from the recipe, healthy before the old one is removed with its anonymous volume;
/// the role container is started as it is.
#[test]
fn a_sidecar_on_another_image_is_replaced_and_the_old_ones_volume_goes_with_it() {
    if !engine_available("a_sidecar_on_another_image_is_replaced_and_the_old_ones_volume_goes_with_it") {
        return;
    }
    let s = Stopped::new();
    let (c, sidecar) = (s.c().to_owned(), s.sidecar());
    let old_volume = s.sidecar_by_hand(TEST_DIND_IMAGE);
    let by_hand = identity(&sidecar).unwrap();
    assert_eq!(old_volume.len(), 64, "the image's anonymous volume: {old_volume}");
    let role = identity(&c).unwrap();

    let rec = s.resumed(&[&c, "--yes"]);
    assert_eq!(rec.tier, Some(2), "{rec:?}");
    let why = format!(
        "{sidecar}: its image is {} now, the launch recipe's is {}: replaced from the launch recipe at tier 2, \
         without what its Docker-in-Docker kept{REPLACED}",
        image_id(TEST_DIND_IMAGE),
        image_id(TEST_REAL_DIND_IMAGE)
    );
    assert_eq!(rec.drift, [why]);
    let (id, state) = identity(&sidecar).unwrap();
    assert_ne!(id, by_hand.0);
    assert_eq!(state, "running");
    assert_eq!(inspect(&sidecar, "{{.Image}}"), image_id(TEST_REAL_DIND_IMAGE));
    assert!(labels_of(&sidecar)[LABEL].starts_with("sha256:"));
    assert_eq!(docker(&["exec", &sidecar, "test", "-e", "/tmp/healthy"]), "", "healthy by the recipe's command");
    assert!(docker_quiet(&["volume", "inspect", &old_volume]).is_none(), "the old one's anonymous volume is gone");
    assert_eq!(identity(&c), Some((role.0, "running".into())), "the role container, started as it is");
    assert!(identity(&interim(&sidecar)).is_none());
    // The name and the alias moved with the rename: the role container reaches the new sidecar.
    let address = format!("{{{{(index .NetworkSettings.Networks \"{c}-net\").IPAddress}}}}");
    let address = inspect(&sidecar, &address);
    for name in [sidecar.as_str(), "dind"] {
        let answer = docker(&["exec", &c, "nslookup", name]);
        assert!(answer.contains(&address), "{name} is {address}: {answer}");
    }
}

/// A replacement that fails its check (the new sidecar never becomes healthy) leaves the old
/// sidecar as it was (same ID, name and state), removes the new one, starts nothing else, and the
/// role container is not started.
#[test]
fn a_replacement_that_never_becomes_healthy_leaves_the_old_container_as_it_was() {
    if !engine_available("a_replacement_that_never_becomes_healthy_leaves_the_old_container_as_it_was") {
        return;
    }
    let s = Stopped::with_sidecar_ready_after(86_400);
    let (c, sidecar) = (s.c().to_owned(), s.sidecar());
    s.sidecar_by_hand(TEST_DIND_IMAGE);
    let (old, role) = (identity(&sidecar).unwrap(), identity(&c).unwrap());

    let out = s.restore(&[&c, "--yes", "--health-timeout=2"]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains(&format!("{} did not become healthy within 2s", interim(&sidecar))), "{said}");
    assert!(said.contains(&format!("{sidecar} was not replaced and is left as it was")), "{said}");
    assert_eq!(identity(&sidecar), Some(old), "the old sidecar: same ID, name and state");
    assert!(identity(&interim(&sidecar)).is_none(), "the new one is removed");
    assert_eq!(identity(&c), Some(role), "the role container is not started");
    assert_ne!(s.home.status(&c).0, "active", "not resumed");
}

/// "A test kills the create step of a tier 2 replacement and finds the old container intact":
/// killed right after it created the new one, a run leaves the old container with the same ID,
/// name and state, and the session's files byte for byte as they were; the rerun replaces it and
/// leaves nothing under the interim name. Killed after it removed the old one, or after the
/// rename, the rerun finishes the job the same way.
#[test]
fn a_replacement_killed_at_any_step_leaves_the_old_container_or_a_rerun_finishes_it() {
    if !engine_available("a_replacement_killed_at_any_step_leaves_the_old_container_or_a_rerun_finishes_it") {
        return;
    }
    let s = Stopped::new();
    let c = s.c().to_owned();
    let recorded = image_id(&s.image);
    let points: Vec<&str> =
        jackin::tools::restore::CRASH_POINTS.iter().copied().filter(|p| p.starts_with("replacement")).collect();
    assert_eq!(points, ["replacement-created", "replacement-old-removed", "replacement-renamed"]);
    for step in points {
        s.role_by_hand(TEST_IMAGE);
        let out = s.home.cmd("jackin-reconcile").args([c.as_str(), "--format=json"]).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let old = identity(&c).unwrap();
        let files = s.files();

        let mut crashing = s.home.cmd("jackin-restore");
        crashing.args([&c, "--yes", "--format=json"]).env("SECRET_TOKEN", SECRET);
        let out = crashing.env("JACKIN_RESTORE_CRASH_AT", step).output().unwrap();
        assert!(out.status.code().is_none(), "{step}: killed there: {:?} {}", out.status, stderr(&out));
        assert!(stderr(&out).contains(&format!("test crash after step {step}")), "{}", stderr(&out));
        assert!(s.files() == files, "{step}: the manifest, continuity and index are as they were");
        if step == "replacement-created" {
            assert_eq!(identity(&c), Some(old.clone()), "the old container: same ID, name and state");
            assert!(identity(&interim(&c)).is_some(), "the new one waits under the interim name");
        }

        let rec = s.resumed(&[&c, "--yes"]);
        let tier = if step == "replacement-renamed" { 1 } else { 2 };
        assert_eq!(rec.tier, Some(tier), "{step}: {rec:?}");
        let (id, state) = identity(&c).unwrap();
        assert_ne!(id, old.0, "{step}: replaced");
        assert_eq!(state, "running", "{step}");
        assert_eq!(inspect(&c, "{{.Image}}"), recorded, "{step}");
        assert!(labels_of(&c).contains_key(LABEL), "{step}");
        assert!(identity(&interim(&c)).is_none(), "{step}: nothing left under the interim name");
        assert_eq!(s.home.status(&c), ("active".into(), "active".into()), "{step}");
        docker(&["stop", "-t", "0", &c, &s.sidecar()]);
    }
}

/// A session purged (not resumed) after a replacement was killed half-way: the replacement waiting
/// under the interim name goes with the session's own containers (else it would keep the
/// network in use and leak), and the purge's dry run names it first. A container under that name
/// that restore did not make (no label of the tools) is another's: left alone.
#[test]
fn a_purge_takes_the_replacement_a_killed_restore_left_and_nothing_else_by_its_name() {
    if !engine_available("a_purge_takes_the_replacement_a_killed_restore_left_and_nothing_else_by_its_name") {
        return;
    }
    let s = Stopped::new();
    let c = s.c().to_owned();
    s.role_by_hand(TEST_IMAGE);
    let mut crashing = s.home.cmd("jackin-restore");
    crashing.args([&c, "--yes", "--format=json"]).env("SECRET_TOKEN", SECRET);
    let out = crashing.env("JACKIN_RESTORE_CRASH_AT", "replacement-created").output().unwrap();
    assert!(out.status.code().is_none(), "killed there: {}", stderr(&out));
    assert!(identity(&interim(&c)).is_some(), "the replacement waits under the interim name");

    let purge = |args: &[&str]| s.home.cmd("jackin-purge").arg(&c).args(args).arg("--format=json").output().unwrap();
    let names = |out: &std::process::Output| -> Vec<String> {
        let purged: common::records::Purged = envelopes(&out.stdout)[0].data();
        purged.removed.into_iter().map(|r| r.name).collect()
    };
    let dry = purge(&["--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert!(names(&dry).contains(&interim(&c)), "{:?}", names(&dry));
    let out = purge(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let removed = names(&out);
    for gone in [c.clone(), interim(&c), s.sidecar(), format!("{c}-net")] {
        assert!(removed.contains(&gone), "{gone} removed: {removed:?}");
    }
    assert!(identity(&interim(&c)).is_none() && identity(&c).is_none());

    // Not restore's: a container someone else put under the interim name of a purged session's
    // role stays, whatever its jackin labels say.
    let other = Stopped::new();
    let c = other.c().to_owned();
    docker(&["create", "--name", &interim(&c), "--label", "jackin.managed=true", TEST_IMAGE, "true"]);
    let out = other.home.cmd("jackin-purge").arg(&c).arg("--format=json").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(identity(&interim(&c)).is_some(), "left alone");
    docker(&["rm", "-f", &interim(&c)]);
}

/// A container restore made itself (tier 2 after `docker rm`) and stopped again is tier 1 with no
/// drift: it carries the fingerprint of the recipe it was made from. A recipe captured again from
/// it (as jackin-keep captures one) records jackin's labels only, and it is still no drift.
#[test]
fn a_container_restore_made_is_tier_1_with_no_drift() {
    if !engine_available("a_container_restore_made_is_tier_1_with_no_drift") {
        return;
    }
    let s = Stopped::new();
    let c = s.c().to_owned();
    docker(&["rm", "-f", "-v", &c, &s.sidecar()]);
    let rec = s.resumed(&[&c, "--yes"]);
    assert_eq!(rec.tier, Some(2), "{rec:?}");
    for container in [c.clone(), s.sidecar()] {
        assert!(labels_of(&container)[LABEL].starts_with("sha256:"), "{container}");
    }
    docker(&["stop", "-t", "0", &c, &s.sidecar()]);
    let made = identity(&c).unwrap().0;

    let planned = s.resumed(&[&c, "--plan"]);
    assert_eq!((planned.tier, planned.drift.as_slice()), (Some(1), [].as_slice()), "{planned:?}");
    let rec = s.resumed(&[&c, "--yes"]);
    assert_eq!((rec.tier, rec.drift.as_slice()), (Some(1), [].as_slice()), "{rec:?}");
    assert_eq!(identity(&c), Some((made.clone(), "running".into())));

    // Captured again from the container restore made, as a keep does.
    s.home.edit_continuity(&c, |kept| kept["recipe"] = serde_json::Value::Null);
    let out = s.home.cmd("jackin-reconcile").args([c.as_str(), "--format=json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let recipe = s.home.continuity(&c).recipe.expect("captured again");
    for container in ["role", "sidecar"] {
        assert!(recipe[container]["labels"].get(LABEL).is_none(), "{container}: {}", recipe[container]["labels"]);
    }
    docker(&["stop", "-t", "0", &c, &s.sidecar()]);
    let rec = s.resumed(&[&c, "--yes"]);
    assert_eq!((rec.tier, rec.drift.as_slice()), (Some(1), [].as_slice()), "{rec:?}");
    assert_eq!(identity(&c).unwrap().0, made);
}

/// The session resumed once by a replacement (so its role container is restore's, with the
/// recipe's fingerprint label), then stopped again.
fn stopped_after_a_replacement() -> Stopped {
    let s = Stopped::new();
    let c = s.c().to_owned();
    s.role_by_hand(TEST_IMAGE);
    let resumed = s.resumed(&[&c, "--yes"]);
    assert_eq!(resumed.tier, Some(2), "{resumed:?}");
    docker(&["stop", "-t", "0", &c, &s.sidecar()]);
    s.home.set_status(&c, "restore_available", None);
    assert!(labels_of(&c).contains_key(LABEL), "restore labels what it makes");
    s
}

/// Another user of the engine replaces the stopped container with one on the recipe's own image
/// that mounts the host's root and sets a variable more, copying restore's fingerprint label:
/// the label vouches for nothing but the image, so tier 1 sees the drift, names it, and the
/// resume replaces the container from the recipe. (Before, `--plan` said tier 1, no drift.)
#[test]
fn a_copied_recipe_label_vouches_for_nothing_but_the_image() {
    if !engine_available("a_copied_recipe_label_vouches_for_nothing_but_the_image") {
        return;
    }
    let s = stopped_after_a_replacement();
    let c = s.c().to_owned();
    s.role_by_hand_with(&s.image, &["-v", "/:/host", "-e", "EXTRA_PRELOAD=1"]);
    assert!(labels_of(&c).contains_key(LABEL), "the label was copied");
    let planned = s.resumed(&[&c, "--plan"]);
    assert_eq!(planned.tier, Some(2), "{planned:?}");
    let said = planned.drift.join("\n");
    assert!(said.contains("/host") && said.contains("EXTRA_PRELOAD"), "{said}");
    let text = s.home.cmd("jackin-restore").args([&c, "--plan", "--format=text"]).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("/host"), "the text says it too");
    let resumed = s.resumed(&[&c, "--yes"]);
    assert_eq!(resumed.tier, Some(2), "{resumed:?}");
    assert!(!inspect(&c, "{{json .HostConfig.Binds}}").contains("/:/host"), "the replacement is the recipe's");
}

/// A stopped container made again with the recipe's everything but a way out of its confinement
/// (`--cap-add SYS_ADMIN --security-opt seccomp=unconfined --pid host`): tier 1 names each and
/// replaces it. (Before, it was started as it was, no drift said.)
#[test]
fn a_run_shape_beyond_the_recipe_is_drift() {
    if !engine_available("a_run_shape_beyond_the_recipe_is_drift") {
        return;
    }
    let s = stopped_after_a_replacement();
    let c = s.c().to_owned();
    s.role_by_hand_with(&s.image, &["--cap-add", "SYS_ADMIN", "--security-opt", "seccomp=unconfined", "--pid", "host"]);
    let planned = s.resumed(&[&c, "--plan"]);
    assert_eq!(planned.tier, Some(2), "{planned:?}");
    let said = planned.drift.join("\n");
    for field in ["CapAdd", "SecurityOpt", "PidMode"] {
        assert!(said.contains(field), "{field}: {said}");
    }
}

/// After an engine restart in which the session's network went, someone made another of that
/// name: with no labels, or with the session's labels copied. Neither is joined: the plan is
/// not ready and says why and what to do, and a resume refuses the same way, never the engine's
/// raw 404. (Before: `--plan` said tier 1, no drift, and `--yes` failed with a 404.)
#[test]
fn a_network_made_by_someone_else_under_the_sessions_name_is_not_joined() {
    if !engine_available("a_network_made_by_someone_else_under_the_sessions_name_is_not_joined") {
        return;
    }
    let s = Stopped::new();
    let c = s.c().to_owned();
    let net = format!("{c}-net");
    let labels: BTreeMap<String, String> =
        serde_json::from_str(&docker(&["network", "inspect", "-f", "{{json .Labels}}", &net])).unwrap();
    let with_labels: Vec<String> =
        labels.iter().flat_map(|(k, v)| ["--label".to_owned(), format!("{k}={v}")]).collect();
    for copied in [false, true] {
        docker(&["network", "rm", &net]);
        let mut create = vec!["network", "create", "--internal"];
        if copied {
            create.extend(with_labels.iter().map(String::as_str));
        }
        create.push(&net);
        docker(&create);
        let out = s.restore(&[&c, "--plan"]);
        let planned: Restored = envelopes(&out.stdout)[0].data();
        let missing = planned.missing.join("\n");
        assert!(missing.contains(&format!("network {net} there now is not")), "copied {copied}: {planned:?}");
        let out = s.restore(&[&c, "--yes"]);
        assert_eq!(out.status.code(), Some(6), "copied {copied}: {}", stderr(&out));
        assert!(!stderr(&out).contains("404"), "{}", stderr(&out));
        assert!(stderr(&out).contains("docker network rm"), "{}", stderr(&out));
        assert_eq!(identity(&c).unwrap().1, "exited", "not started");
        let joined = inspect(&c, "{{range $id, $n := .NetworkSettings.Networks}}{{$n.NetworkID}}{{end}}");
        let other = docker(&["network", "inspect", "-f", "{{.Id}}", &net]);
        assert_ne!(joined.trim(), other.trim(), "not joined to the other network");
    }
}
