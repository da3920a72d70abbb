//! Ways out of the sandbox through the processes around a command (issue
//! 31 items 1, 2, 4, 13, 19; issue 32 item 5), each replayed by a hostile
//! model through the mock, in one-shot mode with no rules: typing into the
//! user's terminal (`TIOCSTI`), asking the user's own servers over a Unix
//! socket, root's capabilities, SysV IPC and the keyrings, and helpers
//! that escape their process group to outlive the call and the chat.

use std::io::ErrorKind;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::time::Duration;

use crate::sandbox::{agent, bash, results, setup};
use crate::support::mock::Reply;
use crate::support::procs::{MARK, Reap, marked, wait_for_marked, wait_until_gone};
use crate::support::sse::*;
use crate::support::*;
use serde_json::json;

/// The results of the only session's `bash` calls, once a one-shot chat
/// ran `commands` (each a call) and answered "done".
fn run_all(extra: serde_json::Value, env: &[(&str, &str)], args: &[&str], commands: &[String]) -> Vec<String> {
    let (ts, server, proj) = setup(extra);
    for (i, command) in commands.iter().enumerate() {
        bash(&server, i, json!({"command": command}));
    }
    server.push(Reply::sse(openai_text(&["done"], 10, 2, 0)));
    let mut all = vec!["-p", "go"];
    all.extend(args);
    let out = agent(&ts, &proj, env, &all);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (id, _) = ts.only_session();
    results(&ts, &id)
}

/// Item 1: a command that opens `/dev/tty` and types a line into it with
/// `TIOCSTI` (which the user's shell would run once the chat ends), in a
/// chat that has a controlling terminal: there is none to open (the
/// command starts in a new session), and the `ioctl` is refused by seccomp
/// anyway (shown on stdin, `/dev/null`, where the kernel would say ENOTTY).
#[test]
fn a_command_cannot_type_into_the_users_terminal() {
    require("python3");
    let (ts, server, _proj) = setup(json!({}));
    let script = r#"
import fcntl, os, termios
try:
    fd = os.open("/dev/tty", os.O_RDONLY)
    for c in "touch typed-by-the-model\n":
        fcntl.ioctl(fd, termios.TIOCSTI, c.encode())
    print("typed into the terminal")
except OSError as e:
    print("tty:", e.strerror)
for name, request in (("TIOCSTI", termios.TIOCSTI), ("TIOCLINUX", 0x541C)):
    try:
        fcntl.ioctl(0, request, b"x")
        print(name, "ran")
    except OSError as e:
        print(name + ":", e.strerror)
"#;
    bash(&server, 0, json!({"command": format!("python3 -c '{script}'")}));
    server.push(Reply::sse(openai_text(&["done"], 10, 2, 0)));
    let env = [("XDG_CACHE_HOME", ts.dir.path().join("cache")), ("TMPDIR", ts.dir.path().join("tmp"))];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.to_str().unwrap())).collect();
    let mut chat = crate::support::pty::hangable_chat(&ts, &["-m", "openai/gpt-4.1", "-p", "type"], &env);
    assert!(chat.wait_exit(Duration::from_secs(30)).success(), "the chat ended well: {}", chat.seen);
    let (id, _) = ts.only_session();
    let r = &results(&ts, &id)[0];
    assert!(!r.contains("typed into the terminal"), "{r}");
    assert!(r.contains("tty: No such device or address"), "no controlling terminal: {r}");
    assert!(r.contains("TIOCSTI: Operation not permitted"), "seccomp refuses TIOCSTI: {r}");
    assert!(r.contains("TIOCLINUX: Operation not permitted"), "seccomp refuses TIOCLINUX: {r}");
}

/// The Python that connects to the Unix socket `path` and says whether it
/// could; then checks a `socketpair` still works.
fn connect(path: &Path) -> String {
    format!(
        "python3 -c 'import socket, sys\ntry:\n    s = socket.socket(socket.AF_UNIX)\n    s.connect(sys.argv[1])\n    \
         print(\"connected\")\nexcept OSError as e:\n    print(\"unix:\", e.strerror)\na, b = socket.socketpair()\n\
         a.send(b\"pair\")\nprint(b.recv(4).decode())' '{}'",
        path.display()
    )
}

/// Item 2: a command asks a server of the user's over its Unix socket (as
/// it asked tmux to run a command outside): refused in `workspace-write`
/// and `read-only`, while `socketpair` works; the variables naming such
/// servers are gone from its environment. With the path in
/// `sandbox.allowUnixSockets` it connects, and the variable naming it stays.
#[test]
fn a_command_cannot_reach_the_users_servers_over_unix_sockets() {
    require("python3");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.sock");
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let socket = path.display().to_string();
    let env = [
        ("TMUX", "/tmp/tmux-0/default,1,0"),
        ("STY", "1.pts-0.host"),
        ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus"),
        ("SSH_AUTH_SOCK", socket.as_str()),
        ("DOCKER_HOST", "unix:///var/run/docker.sock"),
    ];
    let commands = [connect(&path), "env".to_string()];
    for mode in ["workspace-write", "read-only"] {
        let r = run_all(json!({}), &env, &["--sandbox", mode], &commands);
        assert!(r[0].contains("unix: Operation not permitted") && r[0].contains("pair"), "{mode}: {}", r[0]);
        assert_eq!(listener.accept().map(|_| ()).map_err(|e| e.kind()), Err(ErrorKind::WouldBlock), "{mode}");
        for (name, _) in env {
            assert!(!r[1].contains(&format!("{name}=")), "{mode}: {name} is removed: {}", r[1]);
        }
    }
    let r = run_all(json!({"sandbox": {"allowUnixSockets": [socket]}}), &env, &[], &commands);
    assert!(r[0].starts_with("connected\npair"), "a listed socket: {}", r[0]);
    assert!(listener.accept().is_ok(), "the listener got the connection");
    assert!(r[1].contains(&format!("SSH_AUTH_SOCK={socket}")) && !r[1].contains("TMUX="), "{}", r[1]);
}

/// Item 4, as root: the sandboxed command holds no capability, in the
/// host's namespaces or its own: `hostname` and `mknod` fail, and the
/// host's name is unchanged.
#[test]
fn roots_commands_hold_no_capability() {
    // SAFETY: geteuid cannot fail.
    assert_eq!(unsafe { libc::geteuid() }, 0, "this test replays an attack by root: run it as root");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let r = run_all(
        json!({}),
        &[],
        &[],
        &[
            "hostname glrs-was-here; echo hostname=$?; mknod null-copy c 1 3; echo mknod=$?".into(),
            "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status".into(),
        ],
    );
    assert!(!r[0].contains("hostname=0") && r[0].contains("hostname="), "{}", r[0]);
    assert!(!r[0].contains("mknod=0") && r[0].contains("mknod="), "{}", r[0]);
    assert_eq!(std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(), host);
    let caps: Vec<&str> = r[1].lines().filter(|l| l.starts_with("Cap")).collect();
    assert_eq!(caps.len(), 5, "{}", r[1]);
    assert!(caps.iter().all(|l| l.ends_with("\t0000000000000000")), "no capability at all: {}", r[1]);
}

/// Removes a SysV shared memory segment when dropped.
struct Segment(i32);

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: shmctl with IPC_RMID on an id this test made.
        unsafe {
            libc::shmctl(self.0, libc::IPC_RMID, std::ptr::null_mut());
        }
    }
}

/// Item 13: a SysV shared memory segment of the user's is out of the
/// command's sight, and the keyring calls are refused. And the sandbox's
/// init, a copy of the chat's memory, cannot be read (its environment
/// holds the provider's key).
#[test]
fn sysv_ipc_and_the_keyrings_are_out_of_reach() {
    require("python3");
    let key = 0x6c72_0000 | (std::process::id() as i32 & 0xffff);
    // SAFETY: shmget with plain integers.
    let id = unsafe { libc::shmget(key, 4096, libc::IPC_CREAT | 0o600) };
    assert!(id >= 0, "the test's segment: {}", std::io::Error::last_os_error());
    let _segment = Segment(id);
    let script = format!(
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n\
         print(\"shmget\", libc.shmget({key}, 0, 0))\n\
         for name, number, args in ((\"keyctl\", 250, (0, -3, 0)), (\"add_key\", 248, (b\"user\", b\"k\", b\"v\", 1, -3)), (\"request_key\", 249, (b\"user\", b\"k\", None, -3))):\n    \
         rc = libc.syscall(number, *args)\n    print(name, rc, os.strerror(ctypes.get_errno()) if rc < 0 else \"ran\")\n"
    );
    let init = "cat /proc/1/environ; echo environ=$?; head -c 64 /proc/1/mem; echo mem=$?".to_string();
    let r = run_all(json!({}), &[], &[], &[format!("python3 -c '{script}'"), init]);
    assert!(!r[1].contains(OPENAI_KEY) && r[1].contains("environ=1") && r[1].contains("mem=1"), "{}", r[1]);
    assert!(r[0].contains("shmget -1"), "the segment is out of sight: {}", r[0]);
    for name in ["keyctl", "add_key", "request_key"] {
        assert!(r[0].contains(&format!("{name} -1 Operation not permitted")), "{name} refused: {}", r[0]);
    }
}

/// A command that starts `setsid sleep 1000` marked with `file`, and
/// returns once it has escaped ([`crate::orphans::escape`]).
fn escape(file: &Path) -> String {
    crate::orphans::escape(file)
}

/// Items 19 and 32.5: `setsid sleep` started by a sandboxed `bash` ends
/// when its call ends, and one started in the call the chat is SIGKILLed
/// in (before any sweep could see it) ends with the chat.
#[test]
fn what_a_sandboxed_call_started_ends_with_the_call_and_with_a_sigkilled_chat() {
    let (ts, server, proj) = setup(json!({}));
    let (first, go, second, own) = (proj.join("first"), proj.join("go"), proj.join("second"), proj.join("own"));
    let wait_go =
        format!("i=0; while [ ! -e '{}' ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done", go.display());
    bash(&server, 0, json!({"command": format!("{}\n{wait_go}", escape(&first))}));
    let last = format!("{}\necho > '{1}'; {MARK}='{1}' exec sleep 300", escape(&second), own.display());
    bash(&server, 1, json!({"command": last}));
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    cmd.current_dir(&proj)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("XDG_CACHE_HOME", ts.dir.path().join("cache"))
        .args(["-m", "openai/gpt-4.1", "-p", "escape"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut chat = cmd.spawn().unwrap();
    let mut reap = Reap(vec![chat.id() as i32]);
    let limit = Duration::from_secs(30);
    let escaped = wait_for_marked(&first, limit, "the first call's setsid sleep");
    reap.0.extend(&escaped);
    std::fs::write(&go, "").unwrap();
    wait_until_gone(&escaped, Duration::from_secs(10), "the first call's setsid sleep, after its call ended");
    let mut running = wait_for_marked(&second, limit, "the second call's setsid sleep");
    running.extend(wait_for_marked(&own, limit, "the second call's own sleep"));
    reap.0.extend(&running);
    chat.kill().unwrap();
    chat.wait().unwrap();
    wait_until_gone(&running, Duration::from_secs(10), "what the second call started, after the chat's SIGKILL");
    assert!(marked(&first.display().to_string()).is_empty());
}
