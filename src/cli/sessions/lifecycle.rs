//! `glrs-sessions keys` and `glrs-sessions cleanup`.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use super::{CleanupArgs, KeysArgs, PROGRAM};
use crate::config::Config;
use crate::exit::ExitCode;
use crate::keys::ResetRule;
use crate::maintenance::{self, Action, Policy};
use crate::output::{field, shown, stdout_is_terminal};
use crate::store::Store;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct KeyRow {
    key: String,
    session: String,
    /// The session's last activity.
    updated_at: Option<String>,
    /// The reset that applies next.
    next_reset: String,
}

pub fn keys(store: &Store, args: &KeysArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let config = Config::load_env(&store.paths)?;
    let rule = ResetRule::from_config(&config);
    let mut rows = Vec::new();
    for (key, record) in store.keys()? {
        let at = crate::SessionId::parse(&record.session).ok().and_then(|id| store.locate(&id));
        // Only the header is needed: the entries are found, not parsed. A
        // session that is there but cannot be read is not "gone" (the
        // chat would refuse it, not replace it): say so and name the file.
        let (updated, next) = match at.map(|at| store.read_lines(&at)) {
            None => (None, "new session (its session is gone)".to_string()),
            Some(Err(err)) => {
                crate::cli::warn(PROGRAM, &format!("key {key:?}: {}", err.report()));
                (None, "unknown (its session cannot be read)".to_string())
            }
            Some(Ok(file)) => {
                let updated = file.get_str("updatedAt").map(str::to_string);
                // As keys::decide reads it: a time that does not parse is
                // the epoch.
                let last = updated.as_deref().and_then(|u| u.parse::<jiff::Timestamp>().ok());
                (updated, rule.next(last.unwrap_or(jiff::Timestamp::UNIX_EPOCH)))
            }
        };
        rows.push(KeyRow { key, session: record.session, updated_at: updated, next_reset: next });
    }
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &rows)?;
        writeln!(out)?;
    } else {
        // Keys and ids come from keys.json: one field each, and on a
        // terminal their control sequences shown, not obeyed.
        let terminal = stdout_is_terminal();
        let table: Vec<Vec<String>> = rows
            .into_iter()
            .map(|r| {
                let fields = [r.key, r.session, r.updated_at.unwrap_or_default(), r.next_reset];
                fields.iter().map(|f| shown(&field(f), terminal).into_owned()).collect()
            })
            .collect();
        if terminal {
            crate::output::write_table(out, &["KEY", "SESSION", "UPDATED", "NEXT RESET"], &table)?;
        } else {
            for row in table {
                writeln!(out, "{}", row.join("\t"))?;
            }
        }
    }
    Ok(ExitCode::Success)
}

pub fn cleanup(store: &Store, args: &CleanupArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let config = Config::load_env(&store.paths)?;
    let policy = Policy::from_config(&config)?;
    let enforce = args.enforce || (policy.enforce && !args.dry_run);
    let rows = maintenance::plan(store, &policy, std::time::SystemTime::now())?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &rows)?;
        writeln!(out)?;
    } else {
        for r in &rows {
            let action = match r.action {
                Action::Remove => "remove",
                Action::Keep => "keep",
            };
            writeln!(
                out,
                "{action}\t{}\t{}\t{}\t{}",
                r.reason_text(),
                r.session.as_deref().unwrap_or("-"),
                r.bytes,
                r.path.display()
            )?;
        }
    }
    out.flush()?;
    let (count, bytes) =
        rows.iter().filter(|r| r.action == Action::Remove).fold((0u64, 0), |(c, b), r| (c + 1, b + r.bytes));
    if !enforce {
        if count > 0 {
            eprintln!(
                "{PROGRAM}: would remove {} ({}); nothing changed (--enforce removes)",
                crate::output::count(count, "item", "items"),
                crate::output::count(bytes, "byte", "bytes")
            );
        }
        return Ok(ExitCode::Success);
    }
    let (failed, forgotten) = maintenance::enforce_forgetting(store, &rows);
    // What the removed sessions alone reached in shared shadows goes at
    // once (SPEC 19), as with rm; the rest no ref reaches after an hour.
    for shared in &forgotten {
        let swept = crate::cli::block_on(async {
            crate::checkpoint::lifecycle::sweep(shared).await.map_err(anyhow::Error::msg)
        });
        if let Err(e) = swept {
            crate::cli::warn(PROGRAM, &format!("{}: {e}", shared.shadow.display()));
        }
    }
    if count > 0 {
        for shadow in crate::checkpoint::lifecycle::shadows(&store.paths.data) {
            let pruned = crate::cli::block_on(async {
                crate::checkpoint::lifecycle::prune(&shadow.dir).await.map_err(anyhow::Error::msg)
            });
            if let Err(e) = pruned {
                crate::cli::warn(PROGRAM, &format!("{}: {e}", shadow.dir.display()));
            }
        }
    }
    for (row, why) in &failed {
        eprintln!("{PROGRAM}: error: {}: {why}", row.path.display());
    }
    let removed = count.saturating_sub(failed.len() as u64);
    eprintln!("{PROGRAM}: removed {removed} of {}", crate::output::count(count, "item", "items"));
    Ok(if failed.is_empty() { ExitCode::Success } else { ExitCode::Failure })
}
