//! Files whose content decides whom the tools contact or what they run are refused when another
//! user could have written them, as ssh refuses such a config (`~/.ssh/config`, an identity file):
//! the tools would otherwise act on another user's say-so with this user's credentials.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::Result;

use crate::base::exit::Exit;

/// Who may have written `path`: `None` when only its owner (this user, or root) could; else why
/// not, in words. The file itself and the directory it is in are both looked at: whoever may
/// write the directory may put another file in its place.
pub fn written_by_others(path: &Path) -> Option<String> {
    let me = rustix::process::geteuid().as_raw();
    let check = |what: &Path, kind: &str| -> Option<String> {
        let meta = std::fs::metadata(what).ok()?;
        let mode = meta.mode() & 0o7777;
        let sticky_dir = meta.is_dir() && mode & 0o1000 != 0;
        if meta.uid() != me && meta.uid() != 0 {
            return Some(format!("{kind} {} belongs to another user (uid {})", what.display(), meta.uid()));
        }
        if mode & 0o022 != 0 && !sticky_dir {
            let whom = if mode & 0o002 != 0 { "every user" } else { "its group" };
            return Some(format!("{kind} {} can be written by {whom} (mode {mode:04o})", what.display()));
        }
        None
    };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    check(path, "the file").or_else(|| check(dir, "the directory"))
}

/// `Ok` when only this user (or root) could have written `path` (see [`written_by_others`]);
/// else a usage error (exit 2) that says what was refused and how to fix it. `what` names the
/// file's role, e.g. "the hosts file".
pub fn refuse_written_by_others(path: &Path, what: &str) -> Result<()> {
    match written_by_others(path) {
        None => Ok(()),
        Some(why) => Err(Exit::Usage.err(format_args!(
            "{what} {} is refused: {why}; another user could choose what the tools do with your \
             credentials (fix: chmod go-w on it and its directory, owned by you)",
            path.display()
        ))),
    }
}

/// The program `name` names (a path, or a name found on PATH as exec finds it), refused when it
/// is not there or another user could have written it: the tools would run it with this user's
/// rights. `what` names its role, e.g. "--on-event".
pub fn trusted_program(name: &Path, what: &str) -> Result<std::path::PathBuf> {
    let found = which::which(name)
        .map_err(|e| Exit::Usage.err(format_args!("{what} {}: no such program ({e})", name.display())))?;
    refuse_written_by_others(&found, &format!("{what}: the program"))?;
    Ok(found)
}

/// Whether `path` is this user's alone: owned by this user and neither readable nor writable by
/// anyone else (a key file).
pub fn private_to_me(path: &Path) -> bool {
    let me = rustix::process::geteuid().as_raw();
    std::fs::metadata(path).is_ok_and(|m| m.uid() == me && m.mode() & 0o077 == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_file_or_directory_others_can_write_is_refused_and_says_how_to_fix_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let file = dir.path().join("hosts");
        std::fs::write(&file, "a\n").unwrap();
        for (file_mode, dir_mode, refused) in [
            (0o644, 0o755, false),
            (0o600, 0o700, false),
            (0o666, 0o755, true),
            (0o664, 0o755, true),
            (0o644, 0o777, true),
            (0o644, 0o1777, false),
            (0o644, 0o775, true),
        ] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(file_mode)).unwrap();
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(dir_mode)).unwrap();
            let verdict = refuse_written_by_others(&file, "the hosts file");
            assert_eq!(verdict.is_err(), refused, "{file_mode:o} in {dir_mode:o}");
            if let Err(e) = verdict {
                assert_eq!(Exit::of(&e), Exit::Usage);
                assert!(format!("{e:#}").contains("chmod go-w"), "{e:#}");
            }
        }
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_key_is_private_only_when_nobody_else_can_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key");
        std::fs::write(&key, "k").unwrap();
        for (mode, private) in [(0o600, true), (0o400, true), (0o640, false), (0o604, false), (0o660, false)] {
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(private_to_me(&key), private, "{mode:o}");
        }
    }
}
