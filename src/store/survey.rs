//! What a forward scan of a session's entry lines found up to an offset:
//! how many entries, where the `compacted`, `cleared` and `custom` ones
//! are, and (when asked once) the totals of the `usage` ones. It is kept
//! beside the file, in `<id>.scan`, so the next reader scans only what was
//! appended since (an append in place changes nothing before the old end;
//! see [`super::inplace`]) and finds the rest from the end backwards.
//!
//! The kept scan is a cache, never trusted blindly: it is used only for
//! the same inode and header length, when the bytes at both ends of the
//! part it covers still hash as they did, its end is still an entry's end,
//! every entry it points at is still of its kind, and the lines read from
//! it add up to its count (see [`super::recent`]). Anything else, and the
//! file is scanned from its first entry again. Deleting it is always safe.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::lock::Stamp;

/// The entry types a kept scan records.
pub const KEPT: &[&str] = &["compacted", "cleared", "custom"];
/// How much of the file one read of the scan takes.
const CHUNK: usize = 1 << 20;
/// How many first bytes of an entry name its type (`{"type":"compacted"`).
const PREFIX: usize = 32;
/// How many bytes at each end of the scanned part the check hashes.
const CHECKED: u64 = 4096;
/// The layout of the kept file; another is ignored.
const VERSION: u32 = 1;
/// A kept file larger than this is not read (it is no scan of ours).
const MAX_KEPT: u64 = 64 << 20;

/// Totals over a session's `usage` entries.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageSum {
    /// How many `usage` entries (one a model call).
    pub calls: u64,
    /// Input tokens not read from the cache.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the cache.
    pub cache_write_tokens: u64,
    /// Only when at least one call reported a cost.
    pub cost_usd: Option<f64>,
}

impl UsageSum {
    /// Add one `usage` entry's text; one that does not read as a `usage`
    /// entry counts nothing (as [`super::Parsed`] would make it `Other`).
    pub(crate) fn add_text(&mut self, text: &[u8]) {
        /// The fields `Entry::Usage` requires and the numbers it holds.
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Line {
            #[allow(dead_code)] // required, as in `Entry::Usage`
            at: String,
            #[allow(dead_code)] // required, as in `Entry::Usage`
            model: String,
            #[serde(default)]
            input_tokens: u64,
            #[serde(default)]
            output_tokens: u64,
            #[serde(default)]
            cache_read_tokens: u64,
            #[serde(default)]
            cache_write_tokens: u64,
            #[serde(default)]
            cost_usd: Option<f64>,
        }
        let Ok(line) = serde_json::from_slice::<Line>(text) else { return };
        // Counts come from the file: saturate rather than panic or wrap.
        self.calls += 1;
        self.input_tokens = self.input_tokens.saturating_add(line.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(line.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(line.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(line.cache_write_tokens);
        if let Some(cost) = line.cost_usd {
            *self.cost_usd.get_or_insert(0.0) += cost;
        }
    }
}

/// One entry of a [`KEPT`] type: its index, its bytes' place, its type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spot {
    /// The entry's index (from 0).
    pub index: usize,
    /// Its first byte.
    pub start: u64,
    /// Just past its last byte (its closing brace).
    pub end: u64,
    /// Its type.
    pub kind: String,
}

/// What a scan found in the entry lines up to `end`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Scanned {
    version: u32,
    /// The file as it was scanned: a file changed since that is not
    /// longer (appended to) is scanned again.
    stamp: Stamp,
    /// The length of the first line (the header up to `"events":[`).
    head_len: u64,
    /// Just past the last entry scanned.
    pub end: u64,
    /// A hash of the bytes at both ends of the entries up to `end`.
    check: String,
    /// How many entries end at or before `end`.
    pub count: usize,
    /// The entries of the [`KEPT`] types, in file order.
    pub spots: Vec<Spot>,
    /// The totals of the `usage` entries, when a scan was asked for them.
    pub usage: Option<UsageSum>,
    /// A hash of all the above: a kept file edited by anyone else is
    /// not ours.
    seal: String,
}

impl Scanned {
    fn sealed(&self) -> String {
        let mut unsealed = self.clone();
        unsealed.seal = String::new();
        let text = serde_json::to_vec(&unsealed).unwrap_or_default();
        hex(&Sha256::digest(&text))
    }
}

/// The first 16 bytes of a digest, as hex.
fn hex(digest: &[u8]) -> String {
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// A scan brought up to the end of the entries.
pub struct Survey {
    /// What the whole scan found, from the first entry to the last.
    pub scanned: Scanned,
    /// Where the part scanned from a kept scan ended (`None`: no kept
    /// scan was used). Lines before it are found backwards from it.
    pub kept_end: Option<u64>,
    /// The index of the first entry scanned now, and each one's start.
    pub fresh_from: usize,
    /// The starts of the entries scanned now.
    pub fresh: Vec<u64>,
    /// Where the first entry starts.
    pub from: u64,
    /// How many bytes this scan read that a kept scan did not hold.
    pub scanned_now: u64,
}

/// The kept scan's file beside the session at `session`.
pub fn kept_path(session: &Path) -> PathBuf {
    session.with_extension("scan")
}

/// Bring a scan of `file` (inode `ino`; entries from `from` to `to`) to
/// the end: from the kept one when it holds, else from the first entry.
/// `usage`: the totals of the `usage` entries are wanted. `None` when a
/// line break is not `},⏎` or a line is no entry: the file is not in the
/// layout, or torn, and is read whole instead.
/// `kinds`: the types whose entries are recorded ([`KEPT`] when `kept`,
/// and only then is a kept scan used).
#[allow(clippy::too_many_arguments)] // the file, where it is, its part, and what is asked
pub fn survey(
    file: &File,
    session: &Path,
    stamp: Stamp,
    (from, to): (u64, u64),
    kinds: &[&str],
    usage: bool,
    kept: bool,
) -> io::Result<Option<Survey>> {
    let kept = if kept { load(file, session, stamp, (from, to), usage)? } else { None };
    let kept_end = kept.as_ref().map(|k| k.end);
    let (mut scanned, region) = match kept {
        Some(k) => {
            let start = if k.end == to { to } else { k.end + 2 };
            (k, start)
        }
        None => {
            let fresh = Scanned {
                version: VERSION,
                stamp,
                head_len: from - 1,
                end: from,
                check: String::new(),
                count: 0,
                spots: Vec::new(),
                usage: usage.then(UsageSum::default),
                seal: String::new(),
            };
            (fresh, from)
        }
    };
    let fresh_from = scanned.count;
    let mut fresh = Vec::new();
    if region < to {
        let mut types: Vec<&str> = kinds.to_vec();
        if scanned.usage.is_some() {
            types.push("usage");
        }
        let Some(lines) = lines_of(file, region, to, &types)? else { return Ok(None) };
        if !classify(file, &lines, (fresh_from, to), kinds, &mut scanned)? {
            return Ok(None);
        }
        scanned.count += lines.starts.len();
        fresh = lines.starts;
    }
    scanned.end = to;
    scanned.stamp = stamp;
    scanned.check = check(file, from, to)?;
    scanned.seal = scanned.sealed();
    Ok(Some(Survey { scanned, kept_end, fresh_from, fresh, from, scanned_now: to - region }))
}

impl Survey {
    /// Where entry `index` starts (`index` at most the count: the count's
    /// "start" is the end of the entries). `None` when a line break before
    /// it is not `},⏎`.
    pub fn start_of(&self, file: &File, index: usize) -> io::Result<Option<u64>> {
        if index >= self.scanned.count {
            return Ok(Some(self.scanned.end));
        }
        if index >= self.fresh_from {
            return Ok(Some(self.fresh[index - self.fresh_from]));
        }
        let Some(kept_end) = self.kept_end else { return Ok(None) };
        let back = self.fresh_from - index;
        Ok(starts_back(file, self.from, kept_end, back)?.and_then(|starts| starts.first().copied()))
    }
}

/// Keep `scanned` beside the session (a cache: not synced, and a failure
/// to write it costs only the next reader's time).
pub fn save(session: &Path, scanned: &Scanned) {
    let Ok(text) = serde_json::to_vec(scanned) else { return };
    let _ = super::lock::write_atomic(&kept_path(session), false, |out| out.write_all(&text));
}

/// The kept scan of the session, when it holds for `file` as it is now.
fn load(file: &File, session: &Path, stamp: Stamp, (from, to): (u64, u64), usage: bool) -> io::Result<Option<Scanned>> {
    let path = kept_path(session);
    let kept = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&path) {
        Ok(kept) => kept,
        Err(_) => return Ok(None),
    };
    let mut bytes = Vec::new();
    if kept.take(MAX_KEPT).read_to_end(&mut bytes).is_err() {
        return Ok(None);
    }
    let Ok(s) = serde_json::from_slice::<Scanned>(&bytes) else { return Ok(None) };
    let spots_hold = s.spots.iter().all(|p| from <= p.start && p.start < p.end && p.end <= s.end && p.index < s.count)
        && s.spots.windows(2).all(|w| w[0].index < w[1].index);
    // Unchanged, or appended to (longer): anything else is a rewrite.
    let changed = s.stamp != stamp && stamp.size <= s.stamp.size;
    if s.version != VERSION
        || s.seal != s.sealed()
        || s.stamp.ino != stamp.ino
        || changed
        || s.head_len + 1 != from
        || s.end <= from
        || s.end > to
        || s.count == 0
        || (usage && s.usage.is_none())
        || !spots_hold
    {
        return Ok(None);
    }
    // Its end is still an entry's end: `}` then `⏎]` (nothing appended)
    // or `,⏎` (appended since).
    let mut around = [0u8; 3];
    file.read_exact_at(&mut around, s.end - 1)?;
    if around[0] != b'}' || (s.end < to && &around[1..] != b",\n") || (s.end == to && &around[1..] != b"\n]") {
        return Ok(None);
    }
    if check(file, from, s.end)? != s.check {
        return Ok(None);
    }
    Ok(Some(s))
}

/// A hash of the first and last [`CHECKED`] bytes of `from..end`, with
/// both offsets.
fn check(file: &File, from: u64, end: u64) -> io::Result<String> {
    let mut hash = Sha256::new();
    hash.update(from.to_le_bytes());
    hash.update(end.to_le_bytes());
    for lo in [from, end.saturating_sub(CHECKED).max(from)] {
        let hi = (lo + CHECKED).min(end);
        let mut bytes = vec![0; (hi - lo) as usize];
        file.read_exact_at(&mut bytes, lo)?;
        hash.update(&bytes);
    }
    Ok(hex(&hash.finalize()))
}

/// The entry lines of a region: where each starts, and those a type list
/// picks (the index in the region, and the type's position in the list;
/// `None` for a line that does not begin with its type).
pub struct RegionLines {
    /// Where each line starts.
    pub starts: Vec<u64>,
    /// The lines picked, in order.
    pub picked: Vec<(usize, Option<usize>)>,
}

impl RegionLines {
    /// Where line `i` of the region ends (just past its `}`).
    pub fn end_of(&self, i: usize, to: u64) -> u64 {
        if i + 1 < self.starts.len() { self.starts[i + 1] - 2 } else { to }
    }
}

/// Which of `types` an entry beginning with `prefix` is: `Some(Some(i))`
/// for `types[i]`, `Some(None)` when it does not begin with its type (then
/// only parsing it tells), `None` when it is of another type.
pub fn pick(prefix: &[u8], types: &[&str]) -> Option<Option<usize>> {
    let Some(rest) = prefix.strip_prefix(b"{\"type\":\"") else { return Some(None) };
    match memchr::memchr(b'"', rest) {
        Some(end) => types.iter().position(|t| t.as_bytes() == &rest[..end]).map(Some),
        None => Some(None),
    }
}

/// Record the entries of `kinds` and the `usage` totals of the lines found
/// (the first of them entry `first`; the last ends at `to`). False when a
/// line is no entry.
fn classify(
    file: &File,
    lines: &RegionLines,
    (first, to): (usize, u64),
    kinds: &[&str],
    scanned: &mut Scanned,
) -> io::Result<bool> {
    let read = |lo: u64, hi: u64| -> io::Result<Vec<u8>> {
        let mut bytes = vec![0; (hi - lo) as usize];
        file.read_exact_at(&mut bytes, lo)?;
        Ok(bytes)
    };
    let mut usage_lines = Vec::new();
    for &(i, kind) in &lines.picked {
        let (start, end) = (lines.starts[i], lines.end_of(i, to));
        let kind = match kind.and_then(|k| kinds.get(k)) {
            Some(kind) => kind.to_string(),
            None if kind.is_some() => {
                usage_lines.push((start, end));
                continue;
            }
            None => {
                let text = read(start, end)?;
                let Some(found) = super::lines::foreign_type(&text) else { return Ok(false) };
                match found {
                    Some(k) if kinds.contains(&k.as_str()) => k,
                    Some(k) if k == "usage" => {
                        if let Some(sum) = &mut scanned.usage {
                            sum.add_text(&text);
                        }
                        continue;
                    }
                    _ => continue,
                }
            }
        };
        scanned.spots.push(Spot { index: first + i, start, end, kind });
    }
    if let Some(sum) = &mut scanned.usage {
        add_usage(file, &usage_lines, sum)?;
    }
    Ok(true)
}

/// Add the `usage` entries at `spans` (in file order), read in large
/// pieces rather than one read each.
fn add_usage(file: &File, spans: &[(u64, u64)], sum: &mut UsageSum) -> io::Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    let mut k = 0;
    while k < spans.len() {
        // One read from this entry on: the entries that end within a chunk
        // of its start (at least this one).
        let start = spans[k].0;
        let mut last = k;
        while last + 1 < spans.len() && spans[last + 1].1 <= start + CHUNK as u64 {
            last += 1;
        }
        buf.resize((spans[last].1 - start) as usize, 0);
        file.read_exact_at(&mut buf, start)?;
        for &(lo, hi) in &spans[k..=last] {
            sum.add_text(&buf[(lo - start) as usize..(hi - start) as usize]);
        }
        k = last + 1;
    }
    Ok(())
}

/// Where each entry line in `from..to` starts, and which lines `types`
/// picks, read as a stream. `None` when a line is not `{…},` (not the
/// layout, or torn). A hand edit can still put a newline inside an entry
/// right after a `},` (an array of objects): the piece that follows then
/// starts a "line" that does not begin with its type, which is always
/// picked and checked whole.
pub fn lines_of(file: &File, from: u64, to: u64, types: &[&str]) -> io::Result<Option<RegionLines>> {
    let mut starts = vec![from];
    let mut picked = Vec::new();
    // Line starts too near the end of a chunk to see their first bytes.
    let mut deferred = vec![0];
    let mut buf = vec![0; CHUNK.min((to - from) as usize)];
    let mut pos = from;
    // The two bytes before a chunk's first byte: an entry line ends `},`.
    let mut prev = [b'\n', b'\n'];
    let classify = |index: usize, prefix: &[u8], picked: &mut Vec<(usize, Option<usize>)>| -> bool {
        if prefix.first() != Some(&b'{') {
            return false;
        }
        if let Some(kind) = pick(prefix, types) {
            picked.push((index, kind));
        }
        true
    };
    while pos < to {
        let n = ((to - pos) as usize).min(buf.len());
        let chunk = &mut buf[..n];
        file.read_exact_at(chunk, pos)?;
        for j in memchr::memchr_iter(b'\n', chunk) {
            let before = match j {
                0 => prev,
                1 => [prev[1], chunk[0]],
                _ => [chunk[j - 2], chunk[j - 1]],
            };
            if before != *b"}," {
                return Ok(None);
            }
            let index = starts.len();
            let start = pos + j as u64 + 1;
            starts.push(start);
            let want = PREFIX.min((to - start) as usize);
            match chunk.get(j + 1..j + 1 + want) {
                Some(prefix) => {
                    if !classify(index, prefix, &mut picked) {
                        return Ok(None);
                    }
                }
                None => deferred.push(index),
            }
        }
        prev = if n >= 2 { [chunk[n - 2], chunk[n - 1]] } else { [prev[1], chunk[n - 1]] };
        pos += n as u64;
    }
    for index in deferred {
        let want = PREFIX.min((to - starts[index]) as usize);
        let mut prefix = vec![0; want];
        file.read_exact_at(&mut prefix, starts[index])?;
        if !classify(index, &prefix, &mut picked) {
            return Ok(None);
        }
    }
    picked.sort_unstable();
    Ok(Some(RegionLines { starts, picked }))
}

/// How much one read of the backward search takes.
const BLOCK: u64 = 64 * 1024;

/// The starts of the last `n` entry lines of `from..end` (`end` just past
/// an entry), found from `end` backwards in blocks: fewer when the region
/// holds fewer. A line may span any number of blocks. `None` when a line
/// break is not `},⏎`.
pub fn starts_back(file: &File, from: u64, end: u64, n: usize) -> io::Result<Option<Vec<u64>>> {
    let mut starts = Vec::with_capacity(n);
    let mut pos = end;
    let mut buf = vec![0u8; BLOCK as usize + 2];
    while starts.len() < n && pos > from {
        let lo = pos.saturating_sub(BLOCK).max(from);
        // Two bytes more before the block: a break's `},` may lie there.
        let read_lo = lo.saturating_sub(2).max(from);
        let chunk = &mut buf[..(pos - read_lo) as usize];
        file.read_exact_at(chunk, read_lo)?;
        let skip = (lo - read_lo) as usize;
        for j in memchr::memrchr_iter(b'\n', &chunk[skip..]) {
            let q = skip + j;
            if q < 2 || &chunk[q - 2..q] != b"}," {
                return Ok(None);
            }
            starts.push(read_lo + q as u64 + 1);
            if starts.len() == n {
                break;
            }
        }
        pos = lo;
    }
    if starts.len() < n && pos <= from {
        starts.push(from);
    }
    starts.reverse();
    Ok(Some(starts))
}
