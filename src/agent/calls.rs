//! A step's tool calls (SPEC 14, 20). Every call gets a result and a `tool`
//! entry, in call order. Calls run in order, each checked by the registry
//! (its `tool_call` hooks, the rules, the sandbox) before it runs, except
//! that consecutive calls of a tool that runs beside itself (`task`: each is a
//! process of its own) run at the same time, at most
//! `subagents.maxParallel` at once; their results are still recorded in
//! call order, so the next request pairs each call with its own result.

use std::sync::Arc;

use futures_util::StreamExt;

use super::Agent;
use super::turn::{TurnKind, TurnUi, UiAsker};
use crate::provider::{Cancel, Message};
use crate::store::{Entry, ToolCall};
use crate::time;
use crate::tools::{Cleared, Progress, ToolContext, ToolOutput};

/// How often the live lines of running `task` calls are redrawn.
const LIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

impl Agent {
    /// Run the calls of one model answer and record their results.
    pub(super) async fn run_calls(
        &mut self,
        calls: &[ToolCall],
        kind: TurnKind,
        ui: &mut dyn TurnUi,
        cancel: &Cancel,
        turn_messages: &mut Vec<Message>,
    ) {
        let mut at = 0;
        let mut checkpointed = false;
        while at < calls.len() {
            let together = calls[at..].iter().take_while(|c| self.tools.runs_beside(&c.name)).count().max(1);
            let batch = &calls[at..at + together];
            at += together;
            // SPEC 19: the workspace is recorded before the step's first mutating call.
            if !checkpointed && batch.iter().any(|c| self.tools.mutates(&c.name)) {
                checkpointed = true;
                self.checkpoint_before_step(ui).await;
            }
            let (outputs, progress) = self.run_batch(batch, kind, ui, cancel).await;
            for ((call, output), progress) in batch.iter().zip(outputs).zip(progress) {
                if let Some(progress) = progress {
                    // Shown now, in its place: the line it had while it ran.
                    ui.tool_start(call, &format!("{}  {}", self.tools.summary(call), progress.line()));
                }
                self.finish_call(call, output, ui, turn_messages);
            }
        }
    }

    /// Have the registry check each call of `batch` (its hooks, the rules,
    /// the sandbox, the user), then run those allowed at the same time; the
    /// outputs in call order (each seen by its `tool_result` hooks), and
    /// for calls that run beside each other (`task`) how far each got
    /// (shown as a live line while they run, and above each result).
    async fn run_batch(
        &mut self,
        batch: &[ToolCall],
        kind: TurnKind,
        ui: &mut dyn TurnUi,
        cancel: &Cancel,
    ) -> (Vec<ToolOutput>, Vec<Option<Arc<Progress>>>) {
        let situation = self.situation(kind);
        let session_file = self.log.store.session_path(&self.log.id);
        let output_dir = self.log.store.paths.output_of(self.log.id.as_str());
        let model = self.binding.model.full();
        // The entry holding these calls is the last one: a child agent's
        // session records this as its `parent.entry`.
        let entries = self.log.seen.entries + self.log.unwritten.len();
        let cwd = std::path::Path::new(&self.log.cwd);
        let sandbox = self.tools.sandbox();
        let ctx = ToolContext {
            cwd,
            cancel,
            session_id: self.log.id.as_str(),
            session_file: &session_file,
            output_dir: &output_dir,
            judged: crate::tools::Judged::default(),
            redactor: &self.redactor,
            model: &model,
            entries,
            sandbox: &sandbox,
        };
        let mut checked: Vec<Result<Cleared, ToolOutput>> = Vec::with_capacity(batch.len());
        let live: Vec<Option<Arc<Progress>>> =
            batch.iter().map(|c| self.tools.runs_beside(&c.name).then(Arc::default)).collect();
        for (call, live) in batch.iter().zip(&live) {
            if live.is_none() {
                ui.tool_start(call, &self.tools.summary(call));
            }
            let checked_call = self.tools.prepare(call, &ctx, &mut UiAsker(&mut *ui), &situation).await;
            checked.push(checked_call);
        }
        let ctx = &ctx;
        let runs = batch.iter().zip(checked).zip(live.clone()).map(|((call, checked), progress)| async move {
            match (checked, progress) {
                (Err(refused), _) => refused,
                (Ok(cleared), None) => cleared.run(&call.input, ctx).await,
                (Ok(cleared), Some(progress)) => {
                    progress.start();
                    let out = cleared.with_progress(progress.clone()).run(&call.input, ctx).await;
                    progress.end();
                    out
                }
            }
        });
        // `buffered` keeps the order and runs at most that many at once.
        let all = futures_util::stream::iter(runs).buffered(self.config.max_parallel_subagents()).collect();
        let outputs = if live.iter().any(Option::is_some) {
            let summaries: Vec<String> = batch.iter().map(|c| self.tools.summary(c)).collect();
            with_live_lines(all, batch, &summaries, &live, ui).await
        } else {
            all.await
        };
        // SPEC 15: each result is shown to its `tool_result` hooks, in call order.
        for (call, output) in batch.iter().zip(&outputs) {
            self.tools.after_call(call, output, ctx, &mut UiAsker(&mut *ui)).await;
        }
        (outputs, live)
    }

    /// After a call and its `tool_result` hooks: the UI, the `tool` entry
    /// and the result in the context.
    fn finish_call(
        &mut self,
        call: &ToolCall,
        output: ToolOutput,
        ui: &mut dyn TurnUi,
        turn_messages: &mut Vec<Message>,
    ) {
        ui.tool(call, &output);
        self.record(Entry::Tool {
            at: time::now(),
            id: call.id.clone(),
            name: call.name.clone(),
            input: call.input.clone(),
            result: output.content.clone(),
            is_error: output.is_error,
        });
        let message = Message::Tool {
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            content: output.content,
            is_error: output.is_error,
        };
        self.context.tokens += message.estimate_tokens();
        self.context.messages.push(message.clone());
        turn_messages.push(message);
    }
}

/// Wait for `all` while each call of `batch` that reports progress has a
/// live line, redrawn every second until it ends; the lines are taken away
/// at the end (each call's line is then shown above its result).
async fn with_live_lines(
    all: impl std::future::Future<Output = Vec<ToolOutput>>,
    batch: &[ToolCall],
    summaries: &[String],
    live: &[Option<Arc<Progress>>],
    ui: &mut dyn TurnUi,
) -> Vec<ToolOutput> {
    tokio::pin!(all);
    let mut tick = tokio::time::interval(LIVE_EVERY);
    let outputs = loop {
        tokio::select! {
            outputs = &mut all => break outputs,
            _ = tick.tick() => {
                let lines: Vec<String> = batch
                    .iter()
                    .zip(summaries)
                    .zip(live)
                    .filter_map(|((call, summary), progress)| {
                        let progress = progress.as_ref().filter(|p| !p.ended())?;
                        Some(format!("● {}  {summary}  {}", call.name, progress.line()))
                    })
                    .collect();
                ui.running(&lines);
            }
        }
    };
    ui.running(&[]);
    outputs
}
