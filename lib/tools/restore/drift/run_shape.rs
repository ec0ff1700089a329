//! Tier 1's check of a container's run shape against its launch recipe: everything of
//! `HostConfig` the recipe holds (capabilities, security options, namespaces, privilege, devices,
//! limits, …) and its user. A format 3 recipe holds the whole `HostConfig` the launch chose, so a
//! container that sets anything more (`--privileged`, `--pid host`, `--cap-add`) has drifted too;
//! earlier formats held a list of named fields, and only those, and the ways out of a container's
//! confinement, are compared.

use serde_json::Value;

use crate::state::recipe::{chosen_host_config, ContainerSpec};

/// What the engine fills in for a container whose launch chose nothing: absent from a recipe
/// (capture leaves the engine's defaults out), present on every container. Not drift.
fn engine_filled(field: &str, value: &Value) -> bool {
    match field {
        "LogConfig" | "Runtime" | "CgroupnsMode" => true,
        "IpcMode" => matches!(value.as_str(), Some("private" | "shareable")),
        "ShmSize" => value.as_i64() == Some(64 * 1024 * 1024),
        "RestartPolicy" => matches!(value["Name"].as_str(), None | Some("" | "no")),
        _ => false,
    }
}

/// The fields by which a container gets out of its confinement: what an older recipe, which did
/// not hold the whole `HostConfig`, is still checked for.
const ESCAPES: [&str; 9] = [
    "Privileged",
    "CapAdd",
    "SecurityOpt",
    "PidMode",
    "IpcMode",
    "UTSMode",
    "UsernsMode",
    "Devices",
    "DeviceCgroupRules",
];

/// A phrase for each field of `there`'s run shape that is not `want`'s.
pub(super) fn differences(want: &ContainerSpec, there: &ContainerSpec) -> Vec<String> {
    let have = there.host_config.clone().unwrap_or_default();
    let (recorded, whole) = match &want.host_config {
        Some(recorded) => (recorded.clone(), true),
        None => (chosen_host_config(want.host_config_to_create().into_iter().collect()), false),
    };
    let mut found = Vec::new();
    for (field, value) in &recorded {
        if !whole && !ESCAPES.contains(&field.as_str()) {
            continue;
        }
        match have.get(field) {
            Some(there) if there == value => {}
            Some(there) => found.push(format!("its {field} is {there}, the launch recipe's is {value}")),
            None => found.push(format!("its {field} is not set, the launch recipe's is {value}")),
        }
    }
    let extra =
        |field: &String| if whole { !engine_filled(field, &have[field]) } else { ESCAPES.contains(&field.as_str()) };
    for (field, value) in have.iter().filter(|(field, _)| !recorded.contains_key(*field) && extra(field)) {
        if !(field == "IpcMode" && engine_filled(field, value)) {
            found.push(format!("its {field} is {value}, which the launch recipe does not set"));
        }
    }
    found.extend(user(want, there));
    found
}

fn user(want: &ContainerSpec, there: &ContainerSpec) -> Option<String> {
    let shown = |user: &Option<String>| user.as_deref().map_or("the image's".to_owned(), |u| format!("{u:?}"));
    (want.user.is_some() && want.user != there.user)
        .then(|| format!("its user is {}, the launch recipe's is {}", shown(&there.user), shown(&want.user)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    /// `HostConfig` fields as the engine names them.
    fn fields(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
    }

    fn spec(host: BTreeMap<String, Value>) -> ContainerSpec {
        ContainerSpec { host_config: Some(host), ..ContainerSpec::default() }
    }

    /// The recipe of a launch with dropped capabilities, and what the engine reports of a
    /// container made from it: nothing differs.
    fn launched() -> (ContainerSpec, BTreeMap<String, Value>) {
        let recorded = fields(&[("CapDrop", json!(["NET_RAW"])), ("Memory", json!(1 << 30))]);
        let mut there = recorded.clone();
        there.extend(fields(&[
            ("LogConfig", json!({"Type": "json-file", "Config": {}})),
            ("CgroupnsMode", json!("host")),
            ("IpcMode", json!("private")),
            ("ShmSize", json!(64 * 1024 * 1024)),
            ("Runtime", json!("runc")),
            ("RestartPolicy", json!({"Name": "no", "MaximumRetryCount": 0})),
        ]));
        (spec(recorded), there)
    }

    #[test]
    fn what_the_engine_fills_in_is_not_drift() {
        let (recorded, there) = launched();
        assert_eq!(differences(&recorded, &spec(there)), Vec::<String>::new());
    }

    /// Each way out of confinement, and each field the recipe holds changed, alone: drift that
    /// names it.
    #[test]
    fn each_field_changed_alone_is_drift_that_names_it() {
        let (recorded, base) = launched();
        let cases: Vec<(&str, Value)> = vec![
            ("Privileged", json!(true)),
            ("CapAdd", json!(["SYS_ADMIN"])),
            ("SecurityOpt", json!(["seccomp=unconfined"])),
            ("PidMode", json!("host")),
            ("IpcMode", json!("host")),
            ("UTSMode", json!("host")),
            ("UsernsMode", json!("host")),
            (
                "Devices",
                json!([{"PathOnHost": "/dev/fuse", "PathInContainer": "/dev/fuse", "CgroupPermissions": "rwm"}]),
            ),
            ("CapDrop", json!([])),
            ("Memory", json!(0)),
            ("PidsLimit", json!(-1)),
        ];
        for (field, value) in cases {
            let mut there = base.clone();
            there.insert(field.to_owned(), value.clone());
            let found = differences(&recorded, &spec(there));
            assert!(found.iter().any(|f| f.contains(field)), "{field}: {found:?}");
        }
        let mut other_user = spec(base.clone());
        other_user.user = Some("0".into());
        let mut wanted = recorded.clone();
        wanted.user = Some("1000:1000".into());
        assert!(differences(&wanted, &other_user).iter().any(|f| f.contains("its user is \"0\"")));
    }

    #[test]
    fn an_older_recipe_is_checked_for_the_ways_out_only() {
        let older = ContainerSpec { cap_drop: vec!["NET_RAW".into()], ..ContainerSpec::default() };
        let mut there = fields(&[("CapDrop", json!(["NET_RAW"])), ("Memory", json!(1 << 30))]);
        assert!(differences(&older, &spec(there.clone())).is_empty(), "a limit it did not record");
        there.insert("PidMode".into(), json!("host"));
        assert!(differences(&older, &spec(there)).iter().any(|f| f.contains("PidMode")));
    }
}
