//! The command judge (SPEC 17) against the bypasses of issue 20, and
//! against bash itself: a line the judge allows never runs a command the
//! rules did not see, and every command bash runs is seen by deny rules.

use std::path::Path;

use super::command::{Hidden, Unjudgeable, WritableRoots, read};
use super::{Decision, Permissions};

fn rules(allow: &[&str], deny: &[&str], all: bool) -> Permissions {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    Permissions::new(&[], &v(deny), &v(allow), all).unwrap()
}

fn decide(perms: &Permissions, cwd: &Path, line: &str) -> Decision {
    perms.decide("bash", true, Some(line), cwd)
}

#[test]
fn allow_rules_cover_each_command_and_nothing_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let git = rules(&["bash:git *"], &[], false);
    for line in [
        "git status; touch PWN",
        "git status | touch PWN",
        "git `touch PWN`",
        "git $(touch PWN)",
        "git diff <(touch PWN)",
        "git status > /etc/PWN",
        "git status > ~/PWN",
        "git status > PWN",
        "git log >> src/main.rs",
        "ls x & touch PWN",
        "git status &",
        "git status\ntouch PWN",
        "\n\n  \ngit status\ntouch X",
        "git status && touch PWN",
        "git status || touch PWN",
        "git status |& touch PWN",
        "eval git status",
        "sh -c 'git status'",
        "bash -lc 'git status'",
        "exec git status",
        "source ./env.sh",
        "PATH=.:$PATH git status",
        "GIT_SSH_COMMAND=x git fetch",
        "./git status",
        "/usr/bin/git status",
        "$GIT status",
        "g?t status",
        "if true; then git status; fi",
        "git() { touch PWN; }; git status",
        "(git status)",
        "{ git status; }",
        "git status \"$(touch PWN)\"",
        "git log --format=%H <<EOF\n$(touch PWN)\nEOF",
        "git status <<<\"$(touch PWN)\"",
        "echo \"unterminated",
        "git status # fine\ntouch PWN",
    ] {
        assert_eq!(decide(&git, cwd, line), Decision::Ask, "{line:?} must not be allowed by bash:git *");
    }
    for line in [
        "git log --oneline && git status",
        "git status; git diff",
        "git log | git status",
        "git status\ngit diff\n",
        "git status 2>&1",
        "git status > /dev/null 2>&1",
        "git status 2>/dev/stderr",
        "git status # $(touch PWN) is a comment",
        "git commit -m \"fix; touch PWN\"",
        "\"git\" status",
        "git diff < input.txt",
    ] {
        assert_eq!(decide(&git, cwd, line), Decision::Allow, "{line:?} is git commands only");
    }
    let cargo = rules(&["bash:cargo test*"], &[], false);
    assert_eq!(decide(&cargo, cwd, "cargo test; touch PWN"), Decision::Ask);
    assert_eq!(decide(&cargo, cwd, "cargo test --lib -- --nocapture"), Decision::Allow);
    assert_eq!(decide(&cargo, cwd, "RUST_LOG=debug cargo test"), Decision::Ask, "assignments are judged as written");
    let ls = rules(&["bash:ls*"], &[], false);
    assert_eq!(decide(&ls, cwd, "lsof; touch PWN"), Decision::Ask);
    assert_eq!(decide(&ls, cwd, "ls\ntouch PWN"), Decision::Ask);
    assert_eq!(decide(&ls, cwd, "ls -la"), Decision::Allow);
    // A plain `bash` rule allows every line; `--allow-all` too.
    assert_eq!(decide(&rules(&["bash"], &[], false), cwd, "git $(touch PWN)"), Decision::Allow);
    assert_eq!(decide(&rules(&[], &[], true), cwd, "git $(touch PWN)"), Decision::Allow);
}

#[test]
fn redirections_write_only_into_the_writable_roots() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("proj");
    std::fs::create_dir_all(cwd.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(cwd.join("src")).unwrap();
    std::os::unix::fs::symlink("/etc", cwd.join("away")).unwrap();
    let roots = WritableRoots::for_session(&cwd.join("src"));
    assert!(roots.allows(&cwd, "out.txt") && roots.allows(&cwd, "src/new/deep.txt") && roots.allows(&cwd, "/dev/null"));
    assert!(roots.allows(&cwd, &std::env::temp_dir().join("x").display().to_string()), "$TMPDIR is a root");
    for target in [
        ".git/hooks/pre-commit",
        "src/AGENTS.md",
        ".glrs/x",
        "away/x",
        "../../../../../../../../../../../etc/x",
        "nope/../../x",
        "~/x",
        "/etc/x",
    ] {
        assert!(!roots.allows(&cwd, target), "{target} is not writable");
    }
    let allowable = |line: &str| read(line, &cwd, &roots).allowable;
    assert_eq!(allowable("echo hi > out.txt 2>&1"), Ok(vec!["echo hi".to_string()]));
    assert_eq!(allowable("cat > notes.md <<'EOF'\n# notes\nEOF"), Ok(vec!["cat".to_string()]));
    let refused = |target: &str| Err(Unjudgeable::Redirect(target.into()));
    assert_eq!(allowable("echo hi > .git/hooks/pre-commit"), refused(".git/hooks/pre-commit"));
    assert_eq!(allowable("echo hi > away/x"), refused("away/x"), "a symlink out of the roots");
    assert_eq!(allowable("cd /etc && echo hi > x"), refused("a relative path after cd"));
    assert_eq!(allowable("echo hi > $OUT"), refused("$OUT"), "a computed target");
    // Without a sandbox holding the roots, a rule's command writes no file.
    let perms = rules(&["bash:echo *"], &[], false);
    assert_eq!(decide(&perms, &cwd, "echo hi > out.txt"), Decision::Ask);
    assert_eq!(decide(&perms, &cwd, "echo hi > /dev/null"), Decision::Allow);
}

#[test]
fn deny_rules_find_every_command_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let perms = rules(&[], &["bash:rm *"], true);
    for line in [
        "rm VICTIM",
        "/bin/rm VICTIM",
        " rm VICTIM",
        "\\rm VICTIM",
        "rm\tVICTIM",
        "true && rm VICTIM",
        "ls; rm x",
        "command rm x",
        "sh -c 'rm x'",
        "bash -c \"sh -c 'rm x'\"",
        "find . -exec rm {} \\;",
        "find . -name '*.o' -execdir rm -f {} +",
        "echo VICTIM | xargs rm",
        "echo VICTIM | xargs -0 rm",
        "timeout 5 rm x",
        "env FOO=1 rm x",
        "sudo -u root rm x",
        "nice -n 5 /usr/bin/rm x",
        "FOO=1 rm x",
        "echo $(rm x)",
        "echo `rm x`",
        "echo `echo \\`rm x\\``",
        "x=$(rm x)",
        "cat <(rm x)",
        "f() { rm x; }; f",
        "if true; then rm x; fi",
        "(rm x)",
        "r''m x",
        "\"rm\" x",
        "'/bin/rm' x",
        "rm > /dev/null VICTIM",
        "rm <<EOF VICTIM\nx\nEOF",
        "eval 'rm x'",
        "eval rm x",
        "true\nrm VICTIM\necho \"unterminated",
        "cat <<EOF\n$(rm x)\nEOF",
    ] {
        assert!(matches!(decide(&perms, cwd, line), Decision::Deny(_)), "{line:?} must be denied by bash:rm *");
    }
    for line in
        ["$X VICTIM", "r$x VICTIM", "/bin/r? VICTIM", "eval \"$cmd\"", "sh -c \"$cmd\"", "echo rm x | sh", "alias x=rm"]
    {
        match decide(&perms, cwd, line) {
            Decision::Deny(why) => assert!(why.contains("cannot be checked against the rule"), "{line:?}: {why}"),
            other => panic!("{line:?} hides its commands, so a deny rule refuses it: {other:?}"),
        }
    }
    for line in ["git commit -m \"rm x\"", "echo rm", "grep -r rm .", "ls", "cargo test", "bash script.sh"] {
        assert_eq!(decide(&perms, cwd, line), Decision::Allow, "{line:?} runs no rm");
    }
    let Decision::Deny(why) = decide(&perms, cwd, "ls; /bin/rm VICTIM") else { panic!("denied") };
    assert!(why.contains("\"bash:rm *\" in permissions.deny") && why.contains("rm VICTIM"), "{why}");
    // Without a bash deny rule, a hidden command is only not allowed.
    assert_eq!(decide(&rules(&["bash:echo *"], &[], false), cwd, "echo $X; $X"), Decision::Ask);
}

#[test]
fn what_the_judge_reports() {
    let cwd = Path::new("/nonexistent/project");
    let roots = WritableRoots::for_session(cwd);
    let line = read("FOO=1 /bin/git  log   'a b' \"$HOME\"", cwd, &roots);
    assert_eq!(line.allowable, Ok(vec!["FOO=1 /bin/git log a b \"$HOME\"".to_string()]));
    assert!(line.everywhere.contains(&"git log a b \"$HOME\"".to_string()), "{:?}", line.everywhere);
    assert_eq!(line.hidden, None);
    assert_eq!(read("a & b", cwd, &roots).allowable, Err(Unjudgeable::Background));
    assert_eq!(read("a $(b)", cwd, &roots).allowable, Err(Unjudgeable::Substitution));
    assert_eq!(read("a <(b)", cwd, &roots).allowable, Err(Unjudgeable::ProcessSubstitution));
    assert_eq!(read("sh -c b", cwd, &roots).allowable, Err(Unjudgeable::RunsText("sh -c".into())));
    assert_eq!(read("# nothing", cwd, &roots).allowable, Err(Unjudgeable::Empty));
    assert_eq!(read("a 'b", cwd, &roots).hidden, Some(Hidden::NotParsed));
    assert_eq!(read("$a b", cwd, &roots).hidden, Some(Hidden::ComputedName("$a".into())));
    // Deep nesting is judged without recursion, and depth is bounded.
    let deep = format!("{}true{}", "$(".repeat(3_000), ")".repeat(3_000));
    assert_eq!(read(&deep, cwd, &roots).allowable, Err(Unjudgeable::Substitution));
    let long = vec!["true"; 5_000].join(" && ");
    assert_eq!(read(&long, cwd, &roots).allowable.map(|c| c.len()), Ok(5_000));
    let nested = format!("{}rm x", "eval ".repeat(12));
    assert_eq!(read(&nested, cwd, &roots).hidden, Some(Hidden::TooDeep));
}

/// Lines where a parser could read a command boundary differently from
/// bash. Each runs `touch PWN` in bash or does not.
const TRICKY: &[&str] = &[
    "echo $'a\\'; touch PWN'",
    "echo $'a\\\\'; touch PWN\necho '",
    "echo 'a\\'; touch PWN",
    "echo \"a\\\"; touch PWN; \\\"\"",
    "echo \"a\\\\\"; touch PWN; echo \"\"",
    "echo x \\\ntouch PWN",
    "echo `echo \\`touch PWN\\``",
    "echo \\$(touch PWN)",
    "echo $(echo ')'; touch PWN)",
    "echo ${x:-'}'}; touch PWN",
    "echo ${x:-\"}\"}; touch PWN",
    "echo a #; touch PWN",
    "echo a; #\ntouch PWN",
    "# x \\\ntouch PWN",
    "echo a#b; touch PWN",
    "cat <<EOF\nEOF \ntouch PWN\nEOF",
    "cat <<E\\OF\nEOF\ntouch PWN\nE\\OF",
    "cat <<'EOF'\n$(touch PWN)\nEOF",
    "cat <<-EOF\n\tEOF\ntouch PWN\nEOF",
    "cat <<EOF\n\tEOF\ntouch PWN\nEOF",
    "cat <<A <<B\nA\ntouch PWN\nB",
    "cat <<EOF; touch PWN\nx\nEOF",
    "echo a\rtouch PWN",
    "echo a\r\ntouch PWN",
    "echo a\u{b}touch PWN",
    "echo a\u{a0}; touch PWN",
    "echo a|&touch PWN",
    "echo a&&touch PWN",
    "echo {a,b}; touch PWN",
    "echo $((1)); touch PWN",
    "echo $(( $(touch PWN) ))",
    "case x in x) touch PWN;; esac",
    "echo a;;touch PWN",
    "echo ')'; touch PWN",
    "echo \"$(echo \"); touch PWN\")\"",
];

#[test]
fn the_judge_reads_lines_as_bash_does() {
    let perms = rules(&["bash:echo *", "bash:cat *", "bash:true"], &[], false);
    let bash = "bash";
    let mut ran_touch = 0;
    for line in TRICKY {
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new(bash)
            .args(["-c", line])
            .current_dir(dir.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let ran = dir.path().join("PWN").exists();
        let judged = read(line, dir.path(), &WritableRoots::for_session(dir.path()));
        if ran {
            ran_touch += 1;
            assert_ne!(decide(&perms, dir.path(), line), Decision::Allow, "{line:?} ran touch: {status:?}");
            let seen = judged.everywhere.iter().any(|f| f.starts_with("touch PWN")) || judged.hidden.is_some();
            assert!(seen, "{line:?} ran touch unseen by deny rules: {judged:?}");
        }
    }
    assert!(ran_touch >= 20, "most tricky lines do run touch in bash ({ran_touch} did)");
}

/// Lines that run `touch PWN` without naming it as a command a rule can
/// see (issue 31, items 8 and 12): through `$_`, a prompt transformation,
/// an indirection or arithmetic reading a value, `hash -p`,
/// `BASH_ALIASES`/`BASH_CMDS`, `PS4` under `set -x`, `let`, `declare`,
/// `read`, `test -v`, `printf -v`, a shell or `source` reading
/// `/dev/stdin`, and `mapfile -C`. Each one does run it in bash (checked).
pub const HIDDEN: &[&str] = &[
    "git status '$(touch PWN)'; git log ${_@P}",
    "git status 'a[$(touch PWN)]'; git log ${!_}",
    "git status 'a[$(touch PWN)]'; git log $((_))",
    "x='$(touch PWN)'; echo ${x@P}",
    "hash -p /usr/bin/touch ls; ls PWN",
    "BASH_ALIASES[ls]='touch PWN'; shopt -s expand_aliases\nls",
    "BASH_CMDS[ls]=/usr/bin/touch; ls PWN",
    "PS4='$(touch PWN)'; set -x; true",
    "x='a[$(touch PWN)]'; echo $(( x ))",
    "x='a[$(touch PWN)]'; echo $[x]",
    "x='a[$(touch PWN)]'; echo ${a[x]}",
    "y=abc; x='a[$(touch PWN)]'; echo ${y:x}",
    "x='a[$(touch PWN)]'; [[ $x -eq 1 ]]",
    "x='a[$(touch PWN)]'; ((x))",
    "x='a[$(touch PWN)]'; test -v \"$x\"",
    "declare -n r='a[$(touch PWN)]'; echo $r",
    "let 'a[$(touch PWN)]'",
    "declare 'a[$(touch PWN)]=1'",
    "read 'a[$(touch PWN)]' <<< x",
    "printf -v 'a[$(touch PWN)]' %s 1",
    "echo touch PWN | bash /dev/stdin",
    "echo touch PWN | source /dev/stdin",
    "echo x | mapfile -C 'touch PWN' -c 1 lines",
];

/// Lines that run `touch PWN` through a command that runs another
/// (issue 31, item 12): deny rules see through them.
pub const WRAPPED: &[&str] =
    &["trap 'touch PWN' EXIT", "setarch -R touch PWN", "prlimit --nofile=100 touch PWN", "linux64 touch PWN"];

/// Whether bash, run on `line` in a fresh folder, creates `PWN`.
fn bash_runs_touch(line: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("bash")
        .args(["-c", line])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    dir.path().join("PWN").exists() || {
        eprintln!("{line:?}: {}", String::from_utf8_lossy(&out.stderr));
        false
    }
}

#[test]
fn commands_run_without_being_named_are_refused_and_never_allowed() {
    let cwd = Path::new("/nonexistent/project");
    let deny = rules(&[], &["bash:touch *"], true);
    // The broadest glob there is: it matches every command a rule can see.
    let any = rules(&["bash:*", "bash:git *"], &[], false);
    for line in HIDDEN.iter().chain(WRAPPED) {
        assert!(bash_runs_touch(line), "{line:?} must run touch in bash, or it replays nothing");
        assert!(matches!(decide(&deny, cwd, line), Decision::Deny(_)), "{line:?} must be denied by bash:touch *");
    }
    for line in HIDDEN.iter().chain(&["trap 'touch PWN' EXIT"]) {
        assert_eq!(decide(&any, cwd, line), Decision::Ask, "{line:?} must not be allowed by bash:*");
    }
    for line in HIDDEN {
        let Decision::Deny(why) = decide(&deny, cwd, line) else { unreachable!() };
        assert!(why.contains("cannot be checked against the rule"), "{line:?}: {why}");
    }
    for line in WRAPPED {
        let Decision::Deny(why) = decide(&deny, cwd, line) else { unreachable!() };
        assert!(why.contains("it runs \"touch PWN"), "{line:?} is seen through: {why}");
    }
    let git = rules(&["bash:git *"], &[], false);
    let why = |line: &str| read(line, cwd, &WritableRoots::none()).allowable;
    assert_eq!(why("git status x; git log $_"), Err(Unjudgeable::LastArgument));
    assert_eq!(why("git log \"${_}\""), Err(Unjudgeable::LastArgument));
    assert_eq!(decide(&git, cwd, "git status x; git log $_"), Decision::Ask);
    assert!(matches!(why("git log ${_@P}"), Err(Unjudgeable::Hides(Hidden::Evaluates(_)))));
    // Values used as text, and arithmetic on numbers, are still words a
    // rule covers; plain commands with deny rules in force still run.
    for line in [
        "git log \"$HOME\" ${USER:-me} ${#x} ${a[0]} ${a[@]} $((1 + 2))",
        "git log ${x#*/} ${x^^} ${x/a/b}",
        "git log 'a[$(touch PWN)]'",
    ] {
        assert_eq!(decide(&git, cwd, line), Decision::Allow, "{line:?}");
        assert_eq!(decide(&deny, cwd, line), Decision::Allow, "{line:?}");
    }
    for line in ["printf '%s\\n' x", "read -r line < f", "echo PS4=x", "[ \"$x\" -eq 1 ]", "export PATH=\"$PATH:/x\""] {
        assert_eq!(decide(&deny, cwd, line), Decision::Allow, "{line:?} hides nothing");
    }
}
