//! The sandbox (SPEC 17): the model's commands (`bash`, executable tools,
//! and everything they start) run held by the kernel, not by a glob.
//!
//! - [`Mode`]: `workspace-write` (default), `read-only`, `off`.
//! - [`policy`]: what the mode means as paths — the writable roots, the
//!   read-only subpaths inside them, `denyRead` — with `is_writable` and
//!   `is_denied_read` for the file tools, which obey the same roots.
//! - [`Sandbox`]: the policy of a session and whether this kernel can
//!   enforce it.
//!
//! Hooks, `apiKeyCommand` and MCP servers are the user's own programs and
//! run outside.
//!
//! Backends: one per platform, a `cfg`'d module with the same three items
//! (`check_kernel`, `prepare` → a value whose `apply_in_child` runs between
//! fork and exec). Linux has [`linux`] (Landlock, seccomp, a mount
//! namespace); a macOS backend would apply a Seatbelt profile built from
//! the same [`Policy`] in the same place (`sandbox_init` before exec). On
//! other platforms the sandbox is unavailable and every command asks.
//!
//! For tests, `GLRS_SANDBOX_UNAVAILABLE=REASON` in glrs's environment makes
//! the sandbox unavailable as if the kernel could not sandbox (REASON is
//! what the start-up line says).

#[cfg(target_os = "linux")]
pub mod linux;
#[cfg(target_os = "linux")]
mod mounts;
#[cfg(target_os = "linux")]
mod namespaces;
pub mod policy;
mod protected;
pub mod real;
pub mod refusal;
#[cfg(target_os = "linux")]
mod seccomp;

#[cfg(target_os = "linux")]
use linux as backend;
#[cfg(not(target_os = "linux"))]
mod unsupported;
#[cfg(not(target_os = "linux"))]
use unsupported as backend;

use serde::Deserialize;

pub use policy::{Places, Policy, resolve};

/// A sandbox mode: `sandbox.mode`, `--sandbox MODE`, `/sandbox MODE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Read everywhere but `denyRead`; write only under the writable roots.
    #[default]
    WorkspaceWrite,
    /// Read everywhere but `denyRead`; write only `/dev/null` and a
    /// private temporary folder.
    ReadOnly,
    /// No sandbox: every `bash` call asks (or needs a rule).
    Off,
}

impl Mode {
    /// Every mode, in the order help lists them.
    pub const ALL: [Mode; 3] = [Mode::WorkspaceWrite, Mode::ReadOnly, Mode::Off];

    /// The mode as written in the config, the header and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::WorkspaceWrite => "workspace-write",
            Mode::ReadOnly => "read-only",
            Mode::Off => "off",
        }
    }

    /// Read a mode; the error lists the modes.
    pub fn parse(text: &str) -> Result<Mode, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == text)
            .ok_or_else(|| format!("unknown sandbox mode {text:?} (workspace-write, read-only or off)"))
    }
}

/// `sandbox.{mode, writableRoots, denyRead, network}` (SPEC 17); a key not
/// set means the default.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SandboxConfig {
    /// `mode`: the mode of new sessions (default `workspace-write`).
    pub mode: Option<Mode>,
    /// `writableRoots`: more places commands may write (default: the build
    /// tools' caches, [`policy::DEFAULT_WRITABLE_ROOTS`]); setting it
    /// replaces that list.
    pub writable_roots: Option<Vec<String>>,
    /// `denyRead`: what commands and file tools never read (default
    /// [`policy::DEFAULT_DENY_READ`]); glrs's config folder is always added.
    pub deny_read: Option<Vec<String>>,
    /// `network`: true lets commands inside open network sockets.
    pub network: Option<bool>,
    /// `allowUnixSockets`: Unix socket paths commands may connect to
    /// (default none: no Unix socket can be made; see
    /// [`Policy::unix_sockets`] for what an entry allows on Linux).
    pub allow_unix_sockets: Option<Vec<String>>,
}

/// Variables removed from a sandboxed command's environment: each names
/// a server of the user's (a terminal multiplexer, the desktop bus, an
/// agent, a container engine, an editor) that runs what it is asked to,
/// outside the sandbox. One whose value names a path of
/// `sandbox.allowUnixSockets` is kept.
pub const DROPPED_ENV: &[&str] = &[
    "TMUX",
    "TMUX_PANE",
    "STY",
    "ZELLIJ",
    "ZELLIJ_SESSION_NAME",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "XDG_RUNTIME_DIR",
    "WAYLAND_DISPLAY",
    "DISPLAY",
    "KITTY_LISTEN_ON",
    "WEZTERM_UNIX_SOCKET",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "EMACS_SOCKET_NAME",
    "VSCODE_IPC_HOOK_CLI",
    "VSCODE_GIT_IPC_HANDLE",
];

/// Whether this kernel can enforce the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// It can; the text says by what (`Landlock ABI 7, seccomp, namespaces`).
    Enforced(String),
    /// It cannot, and why: commands ask as with `off`.
    Unavailable(String),
}

/// The variable that makes the sandbox unavailable (for tests).
pub const UNAVAILABLE_VAR: &str = "GLRS_SANDBOX_UNAVAILABLE";

static SUPPORT: std::sync::OnceLock<Support> = std::sync::OnceLock::new();

/// Whether this kernel can sandbox, found out once per process by really
/// sandboxing a tiny command (a blocking spawn: call it first at start,
/// before the runtime runs).
pub fn support() -> &'static Support {
    SUPPORT.get_or_init(probe)
}

fn probe() -> Support {
    if let Some(reason) = std::env::var_os(UNAVAILABLE_VAR).filter(|v| !v.is_empty()) {
        return Support::Unavailable(format!("{} ({UNAVAILABLE_VAR} is set)", reason.to_string_lossy()));
    }
    match backend::probe() {
        Ok(how) => Support::Enforced(how),
        Err(why) => Support::Unavailable(why),
    }
}

/// How to run one command inside: the step for [`crate::process::Spawn`]'s
/// `confine`, and what must live until the command ends (the private
/// temporary folder of `read-only`, which the command gets as `TMPDIR`).
pub struct Confinement {
    /// Applied in the child before exec.
    pub confine: crate::process::Confine,
    /// Kept until the command ends (`read-only`'s temporary folder).
    _tmp: Option<tempfile::TempDir>,
    unset: Vec<&'static str>,
    /// `TMPDIR` (in `read-only`) and the private caches
    /// ([`policy::PRIVATE_CACHES`]).
    vars: Vec<(&'static str, std::path::PathBuf)>,
}

impl Confinement {
    /// The variables to remove from the command's environment
    /// ([`DROPPED_ENV`] less those naming an allowed socket).
    pub fn unset(&self) -> &[&'static str] {
        &self.unset
    }

    /// The variables the command gets: `TMPDIR` in `read-only` (its
    /// private temporary folder), and caches of its own (`GOCACHE`,
    /// `npm_config_cache`, `PIP_CACHE_DIR`, `XDG_CACHE_HOME`).
    pub fn env(&self) -> impl Iterator<Item = (&str, &std::ffi::OsStr)> {
        self.vars.iter().map(|(k, v)| (*k, v.as_os_str()))
    }
}

/// The sandbox of one session: its policy (the mode and its paths); the
/// kernel's support is the process's [`support`], found out at the first
/// question (glrs-chat asks at start).
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// Shared: every file tool's read guard holds it for its call.
    policy: std::sync::Arc<Policy>,
}

impl Default for Sandbox {
    /// [`Sandbox::off`].
    fn default() -> Sandbox {
        Sandbox::off().clone()
    }
}

impl Sandbox {
    /// The sandbox of a session in `cwd` in `mode`.
    pub fn new(config: &SandboxConfig, mode: Mode, cwd: &std::path::Path, places: &Places) -> anyhow::Result<Sandbox> {
        Ok(Sandbox { policy: std::sync::Arc::new(Policy::new(config, mode, cwd, places)?) })
    }

    /// No sandbox at all (`off`, with no paths): for tests of other parts
    /// and programs that run no model commands.
    pub fn off() -> &'static Sandbox {
        static OFF: std::sync::LazyLock<Sandbox> =
            std::sync::LazyLock::new(|| Sandbox { policy: std::sync::Arc::new(Policy::none()) });
        &OFF
    }

    /// What the mode means as paths.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The policy, shared rather than copied (its paths are many).
    pub fn shared_policy(&self) -> std::sync::Arc<Policy> {
        self.policy.clone()
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.policy.mode()
    }

    /// The same sandbox in another mode (`/sandbox MODE`).
    pub fn with_mode(&self, mode: Mode) -> Sandbox {
        Sandbox { policy: std::sync::Arc::new(self.policy.with_mode(mode)) }
    }

    /// Whether the kernel can enforce it.
    pub fn support(&self) -> &'static Support {
        support()
    }

    /// True when commands run inside a sandbox the kernel enforces: the
    /// mode is not `off` and the kernel can.
    pub fn enforced(&self) -> bool {
        self.mode() != Mode::Off && matches!(support(), Support::Enforced(_))
    }

    /// The mode and its enforcement in one line, for `/status`:
    /// `workspace-write (enforced: Landlock ABI 7, seccomp, namespaces)`.
    pub fn describe(&self) -> String {
        let net = if self.policy.network() { ", network on" } else { "" };
        if self.mode() == Mode::Off {
            return "off (commands run unsandboxed and ask)".into();
        }
        match (support(), self.mode()) {
            (Support::Enforced(how), mode) => format!("{} (enforced by the kernel: {how}{net})", mode.name()),
            (Support::Unavailable(why), mode) => {
                format!("{} (not enforced: sandbox unavailable: {why}; every bash call asks)", mode.name())
            }
        }
    }

    /// How to run one command inside, when [`Sandbox::enforced`] (else
    /// `None`: the caller asked the user first). The rules are built now,
    /// before the fork; the child only applies them.
    pub fn confinement(&self) -> std::io::Result<Option<Confinement>> {
        if !self.enforced() {
            return Ok(None);
        }
        let tmp = match self.mode() {
            Mode::ReadOnly => Some(tempfile::Builder::new().prefix("glrs-sandbox-").tempdir()?),
            _ => None,
        };
        // Made before the rules, which name only folders that exist.
        let caches = match (self.mode(), &tmp) {
            (Mode::ReadOnly, Some(tmp)) => Some(tmp.path().to_path_buf()),
            (Mode::WorkspaceWrite, _) => self.policy.caches().map(std::path::Path::to_path_buf),
            _ => None,
        };
        if let (Mode::WorkspaceWrite, Some(dir)) = (self.mode(), &caches) {
            crate::paths::ensure_private_dir(dir)?;
        }
        let prepared = backend::prepare(&self.policy, tmp.as_ref().map(|t| t.path()))?;
        let confine: crate::process::Confine = std::sync::Arc::new(move || prepared.apply_in_child());
        let mut vars: Vec<(&'static str, std::path::PathBuf)> =
            tmp.iter().map(|t| ("TMPDIR", t.path().to_path_buf())).collect();
        if let Some(dir) = &caches {
            vars.extend(policy::PRIVATE_CACHES.iter().map(|(var, sub)| (*var, dir.join(sub))));
        }
        Ok(Some(Confinement { confine, _tmp: tmp, unset: dropped_env(&self.policy), vars }))
    }
}

/// [`DROPPED_ENV`] less the variables whose value names a path of
/// `sandbox.allowUnixSockets` (`SSH_AUTH_SOCK=/run/user/1000/ssh-agent`,
/// `DOCKER_HOST=unix:///var/run/docker.sock`).
fn dropped_env(policy: &Policy) -> Vec<&'static str> {
    let allowed = |name: &str| {
        std::env::var_os(name).is_some_and(|value| {
            let value = value.to_string_lossy();
            policy.unix_sockets().iter().any(|p| value.contains(&*p.to_string_lossy()))
        })
    };
    DROPPED_ENV.iter().copied().filter(|name| !allowed(name)).collect()
}

/// The result of a call asking to leave the sandbox with no one to ask.
pub fn outside_denied(reason: &str) -> String {
    format!(
        "permission denied: this command asked to run outside the sandbox (\"sandbox\": false, reason: {reason:?}); \
         a run without a terminal allows that only when started with --sandbox off, so it was not run. \
         Run it inside the sandbox instead"
    )
}

/// The result of a `write`/`edit` outside the writable roots with no one
/// to ask (SPEC 17 "File tools": denied in one-shot in every mode but `off`).
pub fn write_outside_denied(tool: &str, path: &std::path::Path, mode: Mode) -> String {
    format!(
        "permission denied: {tool} of {} is outside the sandbox's writable roots (mode {}), which always asks, \
         and there is no terminal to ask, so it was not written. Write inside the workspace, \
         or start the run with --sandbox off",
        path.display(),
        mode.name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_and_name() {
        for mode in Mode::ALL {
            assert_eq!(Mode::parse(mode.name()), Ok(mode));
        }
        assert!(Mode::parse("strict").unwrap_err().contains("workspace-write, read-only or off"));
        let config: SandboxConfig = serde_json::from_str(r#"{"mode": "read-only", "network": true}"#).unwrap();
        assert_eq!(config.mode, Some(Mode::ReadOnly));
        assert!(serde_json::from_str::<SandboxConfig>(r#"{"mode": "strict"}"#).is_err());
        assert!(serde_json::from_str::<SandboxConfig>(r#"{"writeableRoots": []}"#).is_err());
        assert_eq!(Sandbox::off().mode(), Mode::Off);
        assert!(Sandbox::off().policy().is_writable(std::path::Path::new("/etc/hosts")));
    }
}
