//! The servers' reports, whatever the timing: every server that fails to
//! start is in the news by the time [`Servers::ready`] returns (issue 24).

use super::*;

fn failing(name: &str, command: &str, args: &[&str]) -> Server {
    Server {
        name: name.into(),
        transport: Transport::Stdio {
            command: command.into(),
            args: args.iter().map(|a| (*a).to_string()).collect(),
            env: Default::default(),
            cwd: None,
        },
        startup_timeout: START_TIMEOUT,
        tool_timeout: CALL_TIMEOUT,
    }
}

#[test]
fn every_server_that_fails_to_start_is_in_the_news_once_ready_returns() {
    let runtime = crate::runtime::build().unwrap();
    // The servers are tasks on the process's runtime.
    let _inside = runtime.enter();
    // The race was between a failure's state and its report: many rounds,
    // each with two servers failing at about the same moment.
    for round in 0..40 {
        let servers = Servers::start(
            vec![failing("gone", "/nonexistent/mcp-server", &[]), failing("broken", "sh", &["-c", "exit 3"])],
            std::env::temp_dir(),
        )
        .unwrap();
        runtime.block_on(servers.ready());
        let news = servers.news();
        for name in ["gone", "broken"] {
            let told = news.iter().filter(|n| n.starts_with(&format!("MCP server {name} failed to start"))).count();
            assert_eq!(told, 1, "round {round}: {news:?}");
        }
        assert!(servers.news().is_empty(), "each once");
        servers.stop();
    }
}
