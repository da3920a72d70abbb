//! The layout of a session file as glrs writes it, found from the file's
//! two ends without reading the middle:
//! `{header fields,"events":[⏎{entry},⏎…{entry}⏎],"contextTokens":N}⏎`.
//!
//! An in-place append (see [`super::inplace`]) overwrites only the bytes
//! from the final `⏎]` on (the *tail*) and the fixed-width `updatedAt` in
//! the header, so it needs exactly this: the header as bytes and fields,
//! where the tail starts, and the trailing fields.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use serde_json::Value;

use super::format::{self, Doc};

/// How much of the head and of the tail is read to find the layout: a
/// header or trailing fields larger than this take the full rewrite.
pub(crate) const WINDOW: usize = 64 * 1024;

/// The layout of a file in the store's format, found from its two ends.
pub(crate) struct Layout {
    /// The first line: the header up to and including `"events":[`.
    pub head: Vec<u8>,
    /// The header fields before `events`, in file order.
    pub head_fields: Vec<(String, Value)>,
    /// Offset of the `\n]` that closes `events`.
    pub tail_at: u64,
    /// The bytes from `tail_at` to the end of the file.
    pub tail: Vec<u8>,
    /// The fields after `events`, in file order.
    pub tail_fields: Vec<(String, Value)>,
}

/// The header fields of a head (`{…,"events":[`) or tail (`\n],…}\n`),
/// encoded as glrs writes them.
fn encode_fields(fields: &[(String, Value)], lead: bool, out: &mut Vec<u8>) {
    for (i, (name, value)) in fields.iter().enumerate() {
        if lead || i > 0 {
            out.push(b',');
        }
        // Encoding a string and a Value to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, name);
        out.push(b':');
        let _ = serde_json::to_writer(&mut *out, value);
    }
}

/// The first line of a file with header fields `fields`.
pub(crate) fn encode_head(fields: &[(String, Value)]) -> Vec<u8> {
    let mut out = vec![b'{'];
    encode_fields(fields, false, &mut out);
    out.extend_from_slice(if fields.is_empty() { b"\"events\":[" } else { b",\"events\":[" });
    out
}

/// The bytes that follow the last entry of a file: `entries` (each after
/// `,⏎`), then `⏎]`, the trailing `fields` and `}⏎`.
pub(crate) fn encode_tail(entries: &[&str], fields: &[(String, Value)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.iter().map(|e| e.len() + 2).sum::<usize>() + 64);
    for entry in entries {
        out.extend_from_slice(b",\n");
        out.extend_from_slice(entry.as_bytes());
    }
    out.extend_from_slice(b"\n]");
    encode_fields(fields, true, &mut out);
    out.extend_from_slice(b"}\n");
    out
}

/// Find the layout of `file` (of length `len`), or `None` when it is not
/// exactly the store's layout: the header and the trailing fields must
/// parse and re-encode to the same bytes, the first line break must follow
/// `"events":[`, `events` must not be empty and the last `⏎]` must be
/// followed by the trailing fields alone.
pub(crate) fn find(file: &File, len: u64, path: &Path) -> io::Result<Option<Layout>> {
    // The header is short (it holds no entries): a small read finds it, and
    // only a long one (a long system prompt) needs the whole window.
    let mut found = None;
    for window in [4096, WINDOW] {
        let mut start = vec![0; (len as usize).min(window)];
        file.read_exact_at(&mut start, 0)?;
        if let Some(nl) = memchr::memchr(b'\n', &start) {
            start.truncate(nl);
            found = Some(start);
            break;
        }
        if len as usize <= window {
            break;
        }
    }
    let Some(head) = found else { return Ok(None) };
    let head = head.as_slice();
    let nl = head.len();
    // The header alone, closed, parsed and checked like any session file.
    let mut closed = head.to_vec();
    closed.extend_from_slice(b"]}");
    let Ok(doc): Result<Doc<serde::de::IgnoredAny>, _> = format::parse(&closed, path, None) else {
        return Ok(None);
    };
    if encode_head(&doc.header) != head {
        return Ok(None);
    }
    // The tail is short (the trailing fields): a small read finds it, and
    // only an unusual file needs the whole window.
    let mut found = None;
    for window in [4096, WINDOW] {
        let from = len.saturating_sub(window as u64).max(nl as u64);
        let mut end = vec![0; (len - from) as usize];
        file.read_exact_at(&mut end, from)?;
        if let Some(close) = memchr::memmem::rfind(&end, b"\n]") {
            found = Some((from + close as u64, end.split_off(close)));
            break;
        }
        if from == nl as u64 {
            break;
        }
    }
    let Some((tail_at, tail)) = found else { return Ok(None) };
    // Events must not be empty: the last entry ends just before.
    if tail_at <= nl as u64 {
        return Ok(None);
    }
    let mut before = [0u8; 1];
    file.read_exact_at(&mut before, tail_at - 1)?;
    if before[0] != b'}' {
        return Ok(None);
    }
    let Some(fields_text) = tail.strip_prefix(b"\n]").and_then(|t| t.strip_suffix(b"}\n")) else {
        return Ok(None);
    };
    let tail_fields: Vec<(String, Value)> = if fields_text.is_empty() {
        Vec::new()
    } else {
        let Some(inner) = fields_text.strip_prefix(b",") else { return Ok(None) };
        let mut object = b"{".to_vec();
        object.extend_from_slice(inner);
        object.push(b'}');
        match serde_json::from_slice::<serde_json::Map<String, Value>>(&object) {
            Ok(map) => map.into_iter().collect(),
            Err(_) => return Ok(None),
        }
    };
    if encode_tail(&[], &tail_fields) != tail
        || tail_fields.iter().any(|(k, _)| k == "events" || doc.header.iter().any(|(h, _)| h == k))
    {
        return Ok(None);
    }
    Ok(Some(Layout { head: head.to_vec(), head_fields: doc.header, tail_at, tail, tail_fields }))
}
