//! A role's source at the commit jackin built it from, fetched into the tools' cache for a
//! tier 3 rebuild: the only network access of the git engine.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use git2::{Oid, Repository};

/// Credentials for an ssh fetch: the user, then keys from the running ssh-agent. Each kind is
/// tried once, so a refused key ends the fetch with libgit2's error instead of a loop. (https
/// credentials: the URL or `~/.netrc` through libcurl, then git's credential helpers, see
/// `fetched_commit`.)
fn fetch_callbacks() -> git2::RemoteCallbacks<'static> {
    let mut tried = git2::CredentialType::empty();
    let mut callbacks = git2::RemoteCallbacks::new();
    callbacks.credentials(move |_url, username, allowed| {
        let user = username.unwrap_or("git");
        if allowed.contains(git2::CredentialType::USERNAME) && !tried.contains(git2::CredentialType::USERNAME) {
            tried |= git2::CredentialType::USERNAME;
            return git2::Cred::username(user);
        }
        if allowed.contains(git2::CredentialType::SSH_KEY) && !tried.contains(git2::CredentialType::SSH_KEY) {
            tried |= git2::CredentialType::SSH_KEY;
            return git2::Cred::ssh_key_from_agent(user);
        }
        Err(git2::Error::from_str(&if tried.contains(git2::CredentialType::SSH_KEY) {
            let agent = std::env::var("SSH_AUTH_SOCK").unwrap_or_else(|_| "not set".into());
            format!("the server accepted no key the ssh-agent offered (SSH_AUTH_SOCK: {agent})")
        } else {
            format!(
                "the server asks for credentials the tools do not offer ({allowed:?}); they use the ssh-agent's keys"
            )
        }))
    });
    callbacks
}

/// The full id of the role commit `sha` names (a full id, or the abbreviation jackin records when
/// it reused an image). With `fetch`, `url` is fetched into the cache `cache` when the cache does
/// not hold the commit yet, and the answer is always `Some`. Without (a plan), only a cache that
/// is already there is read, nothing is created, fetched or written, and `None` says that the
/// cache cannot tell: a resume would fetch first. Either way an id that is no commit id, or an
/// abbreviation the cache holds more than one object of, is an error.
///
/// An error with a libgit2 cause among its own ends a run with exit 4, as every other git error of
/// the engine does (error.rs).
pub fn role_commit(cache: &Path, url: &str, sha: &str, fetch: bool) -> anyhow::Result<Option<String>> {
    commit_of(cache, url, sha, fetch).map_err(super::error::classified)
}

fn commit_of(cache: &Path, url: &str, sha: &str, fetch: bool) -> anyhow::Result<Option<String>> {
    if fetch {
        let repo = source_cache(cache)?;
        return Ok(Some(fetched_commit(&repo, url, sha)?.to_string()));
    }
    check_sha(sha)?;
    let Ok(repo) = Repository::open_bare(cache) else { return Ok(None) };
    Ok(commit_in(&repo, url, sha)?.map(|id| id.to_string()))
}

fn source_cache(cache: &Path) -> anyhow::Result<Repository> {
    use anyhow::Context;
    match Repository::open_bare(cache) {
        Ok(repo) => Ok(repo),
        Err(_) => {
            std::fs::create_dir_all(cache).with_context(|| format!("creating {}", cache.display()))?;
            Repository::init_bare(cache).with_context(|| format!("creating the source cache {}", cache.display()))
        }
    }
}

/// A full commit id or an abbreviation of one (4 hex digits at least).
fn check_sha(sha: &str) -> anyhow::Result<()> {
    let is_hex = sha.len() >= 4 && sha.len() <= 40 && sha.bytes().all(|b| b.is_ascii_hexdigit());
    if !is_hex {
        anyhow::bail!("role_git_sha {sha:?} is not a commit id or an abbreviation of one");
    }
    Ok(())
}

/// A commit by full id or unique prefix, as the cache has it; `None` when it has none.
fn commit_in(repo: &Repository, url: &str, sha: &str) -> anyhow::Result<Option<Oid>> {
    check_sha(sha)?;
    match repo.find_commit_by_prefix(sha) {
        Ok(commit) => Ok(Some(commit.id())),
        Err(e) if e.code() == git2::ErrorCode::Ambiguous => {
            anyhow::bail!("role_git_sha {sha} is ambiguous in {url}: more than one object's id starts with it")
        }
        Err(_) => Ok(None),
    }
}

/// How long a fetch may go without a word from the server (connecting, negotiating, or between
/// two pieces of the pack) before it gives up, in seconds: jackin-restore's `--fetch-timeout`.
/// A server that accepts and never answers, or a network that drops every packet, would hold a
/// resume forever; libgit2's ssh and git2-curl's https have no such limit of their own.
static FETCH_SILENCE_SECS: AtomicU64 = AtomicU64::new(DEFAULT_FETCH_TIMEOUT_SECS);

/// `--fetch-timeout`'s default.
pub const DEFAULT_FETCH_TIMEOUT_SECS: u64 = 60;

/// Sets how long a fetch waits for the server to say something (at least a second).
pub fn set_fetch_timeout(timeout: Duration) {
    FETCH_SILENCE_SECS.store(timeout.as_secs().max(1), Ordering::Relaxed);
}

/// Fetches every branch and tag of `url` into `repo`, giving up after the server has been silent
/// for the fetch timeout. The fetch runs on a thread of its own with its own handle on the
/// cache: a transport blocked in a read cannot be interrupted, so a fetch given up on is left to
/// end with the process (it writes only git's own temporary files until its pack is complete).
fn fetch(repo: &Repository, url: &str) -> Result<(), git2::Error> {
    let silence = Duration::from_secs(FETCH_SILENCE_SECS.load(Ordering::Relaxed));
    let started = Instant::now();
    let heard_at_ms = Arc::new(AtomicU64::new(0));
    let given_up = Arc::new(AtomicBool::new(false));
    let (path, url_owned) = (repo.path().to_owned(), url.to_owned());
    let (heard, abandoned) = (Arc::clone(&heard_at_ms), Arc::clone(&given_up));
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let fetched = (|| {
            let repo = Repository::open_bare(&path)?;
            let mut callbacks = fetch_callbacks();
            let heard_again = Arc::clone(&heard);
            let abandoned_again = Arc::clone(&abandoned);
            callbacks.transfer_progress(move |_| {
                heard.store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
                !abandoned.load(Ordering::Relaxed)
            });
            callbacks.sideband_progress(move |_| {
                heard_again.store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
                !abandoned_again.load(Ordering::Relaxed)
            });
            let mut options = git2::FetchOptions::new();
            options.remote_callbacks(callbacks);
            let mut remote = repo.remote_anonymous(&url_owned)?;
            remote.fetch(&["+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"], Some(&mut options), None)
        })();
        let _ = done.send(fetched);
    });
    loop {
        match result.recv_timeout(Duration::from_millis(100)) {
            Ok(fetched) => return fetched,
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(git2::Error::from_str("the fetch stopped")),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let heard = Duration::from_millis(heard_at_ms.load(Ordering::Relaxed));
                if started.elapsed().saturating_sub(heard) >= silence {
                    given_up.store(true, Ordering::Relaxed);
                    return Err(git2::Error::from_str(&format!(
                        "no answer from the server for {} s; check the network (or a VPN) and that the \
                         server is up, or give it longer with --fetch-timeout SECONDS",
                        silence.as_secs()
                    )));
                }
            }
        }
    }
}

/// The https transport (git2-curl) reports a refusal as a status it did not expect.
fn is_http_401(e: &git2::Error) -> bool {
    e.message().contains("got 401")
}

/// Credentials for `url` from the credential helpers git's configuration names
/// (`credential.helper`, `credential.<url>.helper`), as `git` asks them after a 401: libgit2 runs
/// the helper (`git credential-store`, a keychain helper, …) with git's credential protocol.
///
/// libgit2 starts a helper named by a short name as `git credential-<name>` in this process's
/// working directory, and a `git` there that finds no `git-credential-<name>` resolves it as an
/// alias of the repository around that directory: one the agent can write, when the operator
/// runs the tools from inside the host repository. So the helper is started from `/`, outside
/// every repository, and only the operator's own configuration names what runs.
#[cfg(feature = "fetch")]
fn helper_credentials(url: &str) -> Option<(String, String)> {
    let config = git2::Config::open_default().ok()?;
    let _outside = OutsideRepositories::enter();
    git2::CredentialHelper::new(url).config(&config).execute()
}

/// A build without `fetch` fetches nothing over https: no helper is asked.
#[cfg(not(feature = "fetch"))]
fn helper_credentials(_url: &str) -> Option<(String, String)> {
    None
}

/// This process's working directory set to `/` until dropped, then set back.
#[cfg_attr(not(feature = "fetch"), allow(dead_code))]
struct OutsideRepositories(Option<std::path::PathBuf>);

#[cfg_attr(not(feature = "fetch"), allow(dead_code))]
impl OutsideRepositories {
    fn enter() -> Self {
        let was = std::env::current_dir().ok();
        let _ = std::env::set_current_dir("/");
        OutsideRepositories(was)
    }
}

impl Drop for OutsideRepositories {
    fn drop(&mut self) {
        if let Some(was) = &self.0 {
            let _ = std::env::set_current_dir(was);
        }
    }
}

/// `url` with `user:password@` before its host, percent-encoded.
fn with_userinfo(url: &str, user: &str, password: &str) -> String {
    let encode = |text: &str| {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let rest = rest.split_once('@').filter(|(userinfo, _)| !userinfo.contains('/')).map_or(rest, |(_, r)| r);
            format!("{scheme}://{}:{}@{rest}", encode(user), encode(password))
        }
        None => url.to_owned(),
    }
}

/// A fetch of the role source that failed (`fetching URL: why`). Nothing of a resume is created
/// before its role source is fetched, so jackin-restore ends such a run as "unavailable" (exit
/// 4), as for an engine it cannot reach, rather than failed half-way.
#[derive(Debug)]
pub struct FetchFailed {
    url: String,
    cause: anyhow::Error,
}

impl std::fmt::Display for FetchFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fetching {}", self.url)
    }
}

impl std::error::Error for FetchFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(AsRef::<dyn std::error::Error + Send + Sync>::as_ref(&self.cause))
    }
}

/// Whether `error` is, or was caused by, a failed fetch of a role source.
pub fn is_fetch_failure(error: &anyhow::Error) -> bool {
    crate::base::exit::caused_by::<FetchFailed>(error)
}

/// `sha` resolved in the cache, fetching `url` into it first when the cache does not have it.
fn fetched_commit(repo: &Repository, url: &str, sha: &str) -> anyhow::Result<Oid> {
    use anyhow::Context;
    if let Some(id) = commit_in(repo, url, sha)? {
        return Ok(id);
    }
    match fetch(repo, url) {
        Err(e) if is_http_401(&e) && (url.starts_with("https://") || url.starts_with("http://")) => {
            match helper_credentials(url) {
                None => Err(anyhow::Error::new(e).context(format!(
                    "{url} asks for credentials (HTTP 401) and none were found in the URL, ~/.netrc or a \
                     configured credential helper (credential.helper)"
                ))),
                // In memory only: the URL with the helper's credentials is never written or shown.
                Some((user, password)) => fetch(repo, &with_userinfo(url, &user, &password)).map_err(|e| {
                    let refused = if is_http_401(&e) {
                        "refused the credentials of the credential helper (HTTP 401)"
                    } else {
                        "failed"
                    };
                    anyhow::Error::new(e).context(format!("{url} {refused}"))
                }),
            }
        }
        result => result.map_err(|e| match e.code() {
            git2::ErrorCode::Certificate if e.class() == git2::ErrorClass::Ssh => anyhow::anyhow!(
                "{}: the host is not in ~/.ssh/known_hosts with this key (`ssh` to it once, or ssh-keyscan)",
                e.message()
            ),
            _ => anyhow::Error::new(e),
        }),
    }
    .map_err(|cause| FetchFailed { url: url.to_owned(), cause })?;
    let what = if sha.len() == 40 { "commit" } else { "role_git_sha" };
    commit_in(repo, url, sha)?.with_context(|| format!("{what} {sha} is not in {url}"))
}

/// Fetches `url` into the bare cache repository `cache` and returns the tree of exactly `sha` as
/// a tar archive (a build context). Branches that moved on since do not matter: only `sha` is
/// read. https:// needs the transport jackin-restore registers at start (git2-curl); this library
/// does not link it, see bins/jackin-restore.rs.
pub fn source_tar(cache: &Path, url: &str, sha: &str) -> anyhow::Result<Vec<u8>> {
    tar_of(cache, url, sha).map_err(super::error::classified)
}

fn tar_of(cache: &Path, url: &str, sha: &str) -> anyhow::Result<Vec<u8>> {
    let repo = source_cache(cache)?;
    let id = fetched_commit(&repo, url, sha)?;
    let commit = repo.find_commit(id)?;
    let tree = commit.tree()?;
    let mut archive = tar::Builder::new(Vec::new());
    let mut failure = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        let Ok(name) = entry.name() else { return git2::TreeWalkResult::Skip };
        let path = format!("{root}{name}");
        let mode = entry.filemode();
        if entry.kind() != Some(git2::ObjectType::Blob) {
            return git2::TreeWalkResult::Ok;
        }
        let blob = match repo.find_blob(entry.id()) {
            Ok(blob) => blob,
            Err(e) => {
                failure = Some(e);
                return git2::TreeWalkResult::Abort;
            }
        };
        let mut header = tar::Header::new_gnu();
        header.set_mtime(commit.time().seconds().max(0) as u64);
        let result = if mode == 0o120000 {
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_size(0);
            header.set_mode(0o777);
            let target = String::from_utf8_lossy(blob.content()).into_owned();
            archive.append_link(&mut header, &path, target)
        } else {
            header.set_size(blob.content().len() as u64);
            header.set_mode(if mode == 0o100755 { 0o755 } else { 0o644 });
            archive.append_data(&mut header, &path, blob.content())
        };
        match result {
            Ok(()) => git2::TreeWalkResult::Ok,
            Err(_) => git2::TreeWalkResult::Abort,
        }
    })?;
    if let Some(e) = failure {
        return Err(e.into());
    }
    Ok(archive.into_inner()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bare repository at `dir` with one commit; its id.
    fn source_with_a_commit(dir: &Path) -> Oid {
        let repo = Repository::init_bare(dir).unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let who = git2::Signature::new("Role", "r@example.invalid", &git2::Time::new(0, 0)).unwrap();
        repo.commit(Some("refs/heads/main"), &who, &who, "role", &tree, &[]).unwrap()
    }

    #[test]
    fn without_fetching_only_a_cache_already_there_is_read() {
        let tmp = tempfile::tempdir().unwrap();
        let source = tmp.path().join("source.git");
        let url = source.to_str().unwrap();
        let id = source_with_a_commit(&source).to_string();
        let cache = tmp.path().join("cache");

        assert_eq!(role_commit(&cache, url, &id[..7], false).unwrap(), None, "no cache: the resume tells");
        assert!(!cache.exists(), "and none was created");
        let err = role_commit(&cache, url, "xyz", false).unwrap_err();
        assert!(format!("{err:#}").contains("is not a commit id"), "{err:#}");

        assert_eq!(role_commit(&cache, url, &id[..7], true).unwrap().as_deref(), Some(id.as_str()), "fetched");
        assert_eq!(role_commit(&cache, url, &id[..7], false).unwrap().as_deref(), Some(id.as_str()), "then cached");
        assert_eq!(role_commit(&cache, url, "0000000", false).unwrap(), None, "only a fetch could say it is not there");
    }

    /// A role source that cannot be fetched is libgit2's error, and ends a run with exit 4 (a
    /// repository that cannot be read), as the engine's other git errors do.
    #[test]
    fn a_fetch_that_fails_is_exit_4() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache");
        let nowhere = tmp.path().join("no-such-repository").to_string_lossy().into_owned();
        let sha = "0".repeat(40);
        let error = role_commit(&cache, &nowhere, &sha, true).unwrap_err();
        assert_eq!(crate::base::exit::Exit::of(&error), crate::base::exit::Exit::Unavailable, "{error:#}");
        let error = source_tar(&cache, &nowhere, &sha).unwrap_err();
        assert_eq!(crate::base::exit::Exit::of(&error), crate::base::exit::Exit::Unavailable, "{error:#}");
    }
}
