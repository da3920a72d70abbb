//! A session's steps, read from its `checkpoint` entries (SPEC 19, 24).
//!
//! Checkpoints are taken before the first mutating call of each model step
//! and once more when a turn that took one ends. So within one turn (the
//! entries from one user message to the next) each two consecutive
//! checkpoints bound what one step changed: those are the session's. What
//! changed between a turn's last checkpoint and the next one is not the
//! session's: a person, another program, or a session with checkpoints
//! off did it. A files rewind's checkpoint of the present (`rewoundTo`)
//! ends a turn too, and undoes the steps from its target on.

use std::collections::HashSet;

use crate::SessionId;
use crate::store::{Entry, EntryText, Parsed};

/// What one model step changed in the workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The session that took it.
    pub session: SessionId,
    /// The entry number of the user message of its turn (0: none).
    pub turn: usize,
    /// The first line of that message.
    pub prompt: String,
    /// When the step ended (its second checkpoint), as recorded.
    pub at: String,
    /// When its first checkpoint was taken.
    pub before_at: String,
    /// The checkpoint before it.
    pub before: String,
    /// The checkpoint after it.
    pub after: String,
}

/// A checkpoint entry, as a step needs it.
struct Point {
    entry: usize,
    at: String,
    commit: String,
    rewound_to: Option<String>,
    /// The user message it came after (0: none).
    turn: usize,
}

/// What a session's file says of its steps.
#[derive(Debug, Default)]
pub struct Read {
    /// Its steps, in order: only its own (a fork's copied entries are its
    /// parent's).
    pub steps: Vec<Step>,
    /// Steps (before, after) a files rewind undid, this session's or the
    /// ones a fork copied.
    pub undone: HashSet<(String, String)>,
}

/// The steps of session `id`, whose entries are `events`; entries up to
/// `own_from` were copied from a parent (a fork) and are not its own.
pub fn read<E: EntryText>(id: &SessionId, events: &[E], own_from: usize) -> Read {
    let (points, prompts) = points_of(events);
    let mut read = Read::default();
    for pair in points.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let same_turn = a.turn == b.turn && a.rewound_to.is_none() && b.rewound_to.is_none();
        if !same_turn || b.entry <= own_from || a.commit == b.commit {
            continue;
        }
        let prompt = prompts.iter().find(|(entry, _)| *entry == a.turn).map(|(_, p)| p.clone()).unwrap_or_default();
        read.steps.push(Step {
            session: id.clone(),
            turn: a.turn,
            prompt,
            at: b.at.clone(),
            before_at: a.at.clone(),
            before: a.commit.clone(),
            after: b.commit.clone(),
        });
    }
    read.undone = undone(&points);
    read
}

/// The checkpoints of `events` with the turn each came in, and each user
/// message's first line by entry number.
fn points_of<E: EntryText>(events: &[E]) -> (Vec<Point>, Vec<(usize, String)>) {
    let (mut points, mut prompts, mut turn) = (Vec::new(), Vec::new(), 0);
    for (i, raw) in events.iter().enumerate() {
        match Parsed::from_text(raw.text()) {
            Parsed::Known(Entry::User { text, steer: false, .. }) => {
                turn = i + 1;
                prompts.push((turn, text.lines().next().unwrap_or("").to_string()));
            }
            Parsed::Known(Entry::Checkpoint { at, commit, rewound_to, .. }) if crate::checkpoint::is_hash(&commit) => {
                let rewound_to = rewound_to.filter(|t| crate::checkpoint::is_hash(t));
                points.push(Point { entry: i + 1, at, commit, rewound_to, turn });
            }
            _ => {}
        }
    }
    (points, prompts)
}

/// The steps each files rewind undid: those from the last checkpoint of
/// its target commit before it up to the rewind.
fn undone(points: &[Point]) -> HashSet<(String, String)> {
    let mut out = HashSet::new();
    for (r, rewind) in points.iter().enumerate() {
        let Some(target) = &rewind.rewound_to else { continue };
        let Some(from) = points[..r].iter().rposition(|p| &p.commit == target) else { continue };
        for pair in points[from..=r].windows(2) {
            out.insert((pair[0].commit.clone(), pair[1].commit.clone()));
        }
    }
    out
}
