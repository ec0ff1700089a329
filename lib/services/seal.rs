//! A record's seal: proof that this home's own tools made an assessment or a decision, here, as
//! it reads now. A record is a claim; keep trusts an assessment's verdict without looking again,
//! and purge discards work at risk on a decision's word, only when the record carries a seal that
//! this home's key reproduces over its whole content. Anything else (typed by hand, replayed with
//! a field changed, made by another host or home) is looked at again or refused.
//!
//! The seal is an HMAC-SHA256 under `<home>/seal.key` (32 random bytes, mode 0600, this user's),
//! over the record's type, this host's name and the record's data without its seal, as the typed
//! record serialises it. A key that others can read proves nothing and is not used.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use anyhow::{Context, Result};
use base64::prelude::{Engine as _, BASE64_URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

use crate::base::host::this_host;
use crate::base::perms::private_to_me;
use crate::protocol::assessment::Assessment;
use crate::protocol::envelope::Record;
use crate::protocol::records::Decision;
use crate::state::store::Store;

const KEY_BYTES: usize = 32;
/// What the seal is over, first: so a seal of this scheme can never be taken for another's.
const DOMAIN: &[u8] = b"jackin-tools seal v1\0";

/// This home's key, when there is one the tools can trust.
pub struct Sealer {
    key: Option<Vec<u8>>,
    /// Why a key that is there is not used (say it once, with the fix).
    pub distrusted: Option<String>,
}

impl Sealer {
    /// The key as it is: none yet (nothing seals or verifies), or this user's alone.
    pub fn read(store: &Store) -> Sealer {
        let path = store.seal_key_path();
        match std::fs::read(&path) {
            Ok(key) if key.len() == KEY_BYTES && private_to_me(&path) => Sealer { key: Some(key), distrusted: None },
            Ok(_) => Sealer {
                key: None,
                distrusted: Some(format!(
                    "{} is not a key only you can read (or not 32 bytes): records are not sealed or trusted \
                     (fix: remove it; the next jackin-keep makes a new one)",
                    path.display()
                )),
            },
            Err(_) => Sealer { key: None, distrusted: None },
        }
    }

    /// The key, made now when the home has none (keep, the first tool that seals a decision).
    /// Two processes making it at once end up with one key: the file appears whole, by a link,
    /// or not at all.
    pub fn read_or_make(store: &Store) -> Result<Sealer> {
        let path = store.seal_key_path();
        if path.exists() {
            return Ok(Sealer::read(store));
        }
        let mut key = vec![0u8; KEY_BYTES];
        getrandom::fill(&mut key).map_err(|e| anyhow::anyhow!("no random bytes for the seal key: {e}"))?;
        let temp = path.with_file_name(format!("seal.key.tmp.{}", std::process::id()));
        let _ = std::fs::remove_file(&temp);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .with_context(|| format!("cannot make {}", temp.display()))?;
        file.write_all(&key).and_then(|()| file.sync_all()).with_context(|| format!("writing {}", temp.display()))?;
        let linked = std::fs::hard_link(&temp, &path);
        let _ = std::fs::remove_file(&temp);
        match linked {
            Ok(()) => Ok(Sealer { key: Some(key), distrusted: None }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Sealer::read(store)),
            Err(e) => Err(e).with_context(|| format!("cannot make {}", path.display())),
        }
    }

    /// Whether it holds a key (else nothing is sealed or verified).
    pub fn has_key(&self) -> bool {
        self.key.is_some()
    }

    /// Seals an assessment this home's assess made (nothing without a key).
    pub fn seal_assessment(&self, assessment: &mut Assessment) {
        assessment.seal = None;
        assessment.seal = self.seal(Assessment::TYPE, assessment);
    }

    /// Whether an assessment read on stdin is one this home's assess made, as it reads now.
    pub fn assessment_holds(&self, assessment: &Assessment) -> bool {
        let mut bare = assessment.clone();
        let seal = bare.seal.take();
        self.verifies(Assessment::TYPE, &bare, seal.as_deref())
    }

    /// Whether a decision read on stdin is one this home's keep made, as it reads now.
    pub fn decision_holds(&self, decision: &Decision) -> bool {
        let mut bare = decision.clone();
        let seal = bare.seal.take();
        self.verifies(Decision::TYPE, &bare, seal.as_deref())
    }

    /// Makes the key now, unless there is one (or one not trusted), or this is a dry run, which
    /// changes nothing.
    pub fn make_unless(&mut self, store: &Store, dry_run: bool) -> Result<()> {
        if !dry_run && self.key.is_none() && self.distrusted.is_none() {
            *self = Sealer::read_or_make(store)?;
        }
        Ok(())
    }

    /// A sealer with no key: seals nothing, verifies nothing.
    pub fn none() -> Sealer {
        Sealer { key: None, distrusted: None }
    }

    /// The seal of `data` (a record of type `kind`, its own seal unset), or `None` without a key.
    pub fn seal<T: Serialize>(&self, kind: &str, data: &T) -> Option<String> {
        let bytes = self.mac(kind, data)?.finalize().into_bytes();
        Some(BASE64_URL_SAFE_NO_PAD.encode(bytes))
    }

    /// Whether `seal` is this home's seal of `data` (compared in constant time).
    pub fn verifies<T: Serialize>(&self, kind: &str, data: &T, seal: Option<&str>) -> bool {
        let (Some(mac), Some(seal)) = (self.mac(kind, data), seal) else { return false };
        let Ok(bytes) = BASE64_URL_SAFE_NO_PAD.decode(seal) else { return false };
        mac.verify_slice(&bytes).is_ok()
    }

    fn mac<T: Serialize>(&self, kind: &str, data: &T) -> Option<Hmac<Sha256>> {
        let key = self.key.as_ref()?;
        let content = serde_json::to_vec(data).ok()?;
        let mut mac = Hmac::<Sha256>::new_from_slice(key).ok()?;
        for part in [DOMAIN, kind.as_bytes(), b"\0", this_host().as_bytes(), b"\0", &content] {
            mac.update(part);
        }
        Some(mac)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sealer() -> Sealer {
        Sealer { key: Some(vec![7; KEY_BYTES]), distrusted: None }
    }

    #[test]
    fn a_seal_holds_for_its_record_only() {
        let data = json!({"container_base": "jk-a", "verdict": "dirty"});
        let seal = sealer().seal("assessment", &data).unwrap();
        assert!(sealer().verifies("assessment", &data, Some(&seal)));
        assert!(!sealer().verifies("decision", &data, Some(&seal)), "another type");
        assert!(!sealer().verifies("assessment", &json!({"container_base": "jk-a", "verdict": "clean"}), Some(&seal)));
        let other_key = Sealer { key: Some(vec![8; KEY_BYTES]), distrusted: None };
        assert!(!other_key.verifies("assessment", &data, Some(&seal)), "another home's key");
        assert!(!Sealer::none().verifies("assessment", &data, Some(&seal)), "no key");
        assert!(!sealer().verifies("assessment", &data, None));
        assert!(!sealer().verifies("assessment", &data, Some("zz")));
        assert!(Sealer::none().seal("assessment", &data).is_none());
    }
}
