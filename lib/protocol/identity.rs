//! The identity every per-instance record starts with (protocol.md, "Records"): which instance
//! it is about, in the words an operator filters by.

use serde::{Deserialize, Serialize};

use crate::state::model::{IndexRow, Manifest};

/// Instance identity: the fields every per-instance record starts with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    pub container_base: String,
    pub(crate) instance_id: String,
    pub workspace_name: Option<String>,
    pub(crate) workspace_label: String,
    pub(crate) role_key: String,
    pub(crate) agent_runtime: String,
}

impl Identity {
    pub(crate) fn from_manifest(m: &Manifest) -> Self {
        Identity {
            container_base: m.container_base.clone(),
            instance_id: m.instance_id.clone(),
            workspace_name: m.workspace_name.clone(),
            workspace_label: m.workspace_label.clone(),
            role_key: m.role_key.clone(),
            agent_runtime: m.agent_runtime.clone(),
        }
    }

    pub(crate) fn from_row(r: &IndexRow) -> Self {
        Identity {
            container_base: r.container_base.clone(),
            instance_id: r.instance_id.clone(),
            workspace_name: r.workspace_name.clone(),
            workspace_label: r.workspace_label.clone(),
            role_key: r.role_key.clone(),
            agent_runtime: r.agent_runtime.clone(),
        }
    }

    /// An identity that knows only a name and, when one can be told, the instance id: what a
    /// record says of something whose manifest and index row are both gone.
    pub fn of_name(container_base: &str, instance_id: &str) -> Self {
        Identity {
            container_base: container_base.to_owned(),
            instance_id: instance_id.to_owned(),
            workspace_name: None,
            workspace_label: String::new(),
            role_key: String::new(),
            agent_runtime: String::new(),
        }
    }
}
