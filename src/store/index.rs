//! The listing index's file: every session's summary, stamped with the
//! version of the file it was taken from, in a compact binary layout that a
//! warm listing decodes without parsing JSON or allocating per session.
//!
//! Layout (integers little-endian):
//!
//! - [`MAGIC`] (which carries the layout's version), then the number of
//!   records (u32);
//! - each record: the stamp (inode u64, size u64, mtime i64, mtime ns i64),
//!   flags (u8: 1 legacy folder, 2 pinned, 4 a problem instead of a
//!   summary), then
//!   - for a summary: `updatedAt` in ms (i64, `i64::MIN` when unreadable),
//!     entries (u64), `contextTokens` (u64), then the strings file name,
//!     id, `createdAt`, `updatedAt`, `cwd`, title, key, model, parent (its
//!     JSON text), `importedAt`;
//!   - for a problem: the strings file name and the problem;
//! - nothing after the last record.
//!
//! A string is its length (u32) and its UTF-8 bytes; an absent optional
//! string has the length `u32::MAX`. Any file that does not decode exactly
//! is [`Corrupt`]: the caller rebuilds the index from the session files.

use std::io::Write;

use super::lock::Stamp;

/// The first bytes of an index file; the digit is the layout's version.
/// v3: files with damaged lines are read (issue 33), so a v2 index's
/// "problem" records of them must not hide them any longer; and
/// `importedAt` is kept (cleanup counts an import's age from it).
pub const MAGIC: &[u8; 16] = b"glrs-listing v3\n";

/// The start of every version's [`MAGIC`]: an index of another version is
/// rebuilt without a word (it is not damaged, only older).
pub const MAGIC_FAMILY: &[u8] = b"glrs-listing v";

const LEGACY: u8 = 1;
const PINNED: u8 = 2;
const PROBLEM: u8 = 4;
const NONE: u32 = u32::MAX;

/// An index file that does not decode: why, for a warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corrupt(pub String);

/// One session's summary as stored, borrowing the index's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields<'a> {
    /// `updatedAt` in milliseconds since the epoch (`i64::MIN` when it
    /// does not parse): the listing's sort key.
    pub updated_ms: i64,
    /// How many entries.
    pub entries: u64,
    /// `contextTokens`.
    pub context_tokens: u64,
    /// The session id.
    pub id: &'a str,
    /// `createdAt`.
    pub created_at: &'a str,
    /// `updatedAt`.
    pub updated_at: &'a str,
    /// `cwd`.
    pub cwd: &'a str,
    /// The title.
    pub title: &'a str,
    /// The session key.
    pub key: Option<&'a str>,
    /// The model.
    pub model: Option<&'a str>,
    /// `parent`, as JSON text.
    pub parent: Option<&'a str>,
    /// `importedAt`: when an imported session entered the store.
    pub imported_at: Option<&'a str>,
    /// Whether it is pinned.
    pub pinned: bool,
}

/// What a record holds about its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body<'a> {
    /// The file's summary.
    Summary(Fields<'a>),
    /// Why the file could not be read.
    Problem(&'a str),
}

/// One record: a file's name (in the store or the legacy folder), the
/// stamp of the version summarised, and the summary or problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// The stamp of the file when it was summarised.
    pub stamp: Stamp,
    /// Whether the file is in the legacy folder.
    pub legacy: bool,
    /// The file's name, `<id>.json`.
    pub name: &'a str,
    /// Its summary or problem.
    pub body: Body<'a>,
    /// The record's encoded bytes, to copy into the next index unchanged.
    pub raw: &'a [u8],
}

/// Decode a whole index file.
pub fn decode(bytes: &[u8]) -> Result<Vec<Record<'_>>, Corrupt> {
    let rest = bytes.strip_prefix(MAGIC.as_slice()).ok_or_else(|| Corrupt("not a glrs listing index".into()))?;
    let mut r = Reader { bytes: rest, at: 0 };
    let count = r.u32()? as usize;
    // Each record takes at least 41 bytes: a count that cannot fit is a lie.
    if count > rest.len() / 41 {
        return Err(Corrupt(format!("it claims {count} records in {} bytes", bytes.len())));
    }
    let mut records = Vec::with_capacity(count);
    for _ in 0..count {
        let start = r.at;
        let stamp = Stamp { ino: r.u64()?, size: r.u64()?, mtime: r.i64()?, mtime_ns: r.i64()? };
        let flags = r.u8()?;
        let legacy = flags & LEGACY != 0;
        let body_is_problem = flags & PROBLEM != 0;
        let (name, body) = if body_is_problem {
            (r.str()?, Body::Problem(r.str()?))
        } else {
            let updated_ms = r.i64()?;
            let entries = r.u64()?;
            let context_tokens = r.u64()?;
            let name = r.str()?;
            let fields = Fields {
                updated_ms,
                entries,
                context_tokens,
                id: r.str()?,
                created_at: r.str()?,
                updated_at: r.str()?,
                cwd: r.str()?,
                title: r.str()?,
                key: r.opt()?,
                model: r.opt()?,
                parent: r.opt()?,
                imported_at: r.opt()?,
                pinned: flags & PINNED != 0,
            };
            (name, Body::Summary(fields))
        };
        records.push(Record { stamp, legacy, name, body, raw: &rest[start..r.at] });
    }
    if r.at != rest.len() {
        return Err(Corrupt(format!("{} bytes follow the last record", rest.len() - r.at)));
    }
    Ok(records)
}

/// Write an index file's start: the magic and the number of records.
pub fn write_head(out: &mut dyn Write, count: usize) -> std::io::Result<()> {
    let count = u32::try_from(count).map_err(std::io::Error::other)?;
    out.write_all(MAGIC)?;
    out.write_all(&count.to_le_bytes())
}

/// Encode one record (see the module's layout).
pub fn write_record(out: &mut dyn Write, stamp: &Stamp, legacy: bool, name: &str, body: &Body) -> std::io::Result<()> {
    for n in [stamp.ino, stamp.size] {
        out.write_all(&n.to_le_bytes())?;
    }
    for n in [stamp.mtime, stamp.mtime_ns] {
        out.write_all(&n.to_le_bytes())?;
    }
    let mut flags = if legacy { LEGACY } else { 0 };
    match body {
        Body::Problem(problem) => {
            out.write_all(&[flags | PROBLEM])?;
            write_str(out, name)?;
            write_str(out, problem)
        }
        Body::Summary(f) => {
            if f.pinned {
                flags |= PINNED;
            }
            out.write_all(&[flags])?;
            out.write_all(&f.updated_ms.to_le_bytes())?;
            out.write_all(&f.entries.to_le_bytes())?;
            out.write_all(&f.context_tokens.to_le_bytes())?;
            for s in [name, f.id, f.created_at, f.updated_at, f.cwd, f.title] {
                write_str(out, s)?;
            }
            for s in [f.key, f.model, f.parent, f.imported_at] {
                match s {
                    Some(s) => write_str(out, s)?,
                    None => out.write_all(&NONE.to_le_bytes())?,
                }
            }
            Ok(())
        }
    }
}

fn write_str(out: &mut dyn Write, s: &str) -> std::io::Result<()> {
    let len =
        u32::try_from(s.len()).ok().filter(|&n| n != NONE).ok_or_else(|| std::io::Error::other("string too long"))?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(s.as_bytes())
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or_else(|| Corrupt(format!("it ends inside a record (at byte {})", self.at + MAGIC.len())))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Corrupt> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, Corrupt> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, Corrupt> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, Corrupt> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, Corrupt> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    fn opt(&mut self) -> Result<Option<&'a str>, Corrupt> {
        let len = self.u32()?;
        if len == NONE { Ok(None) } else { self.text(len as usize).map(Some) }
    }

    fn str(&mut self) -> Result<&'a str, Corrupt> {
        let len = self.u32()? as usize;
        self.text(len)
    }

    fn text(&mut self, len: usize) -> Result<&'a str, Corrupt> {
        let at = self.at + MAGIC.len();
        std::str::from_utf8(self.take(len)?).map_err(|_| Corrupt(format!("a text at byte {at} is not UTF-8")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(n: u64) -> Stamp {
        Stamp { ino: n, size: n * 10, mtime: 1_700_000_000, mtime_ns: 5 }
    }

    fn fields() -> Fields<'static> {
        Fields {
            updated_ms: 1_764_429_859_412,
            entries: 3,
            context_tokens: 120,
            id: "3f9a1c2b",
            created_at: "2026-11-29T15:24:19.412Z",
            updated_at: "2026-11-29T15:24:19.412Z",
            cwd: "/home/ada/日本",
            title: "fix the build",
            key: None,
            model: Some("openai/gpt-4.1"),
            parent: Some(r#"{"id":"aaaa0001","entry":2}"#),
            imported_at: Some("2026-11-30T10:00:00.000Z"),
            pinned: true,
        }
    }

    fn encode(records: &[(Stamp, bool, &str, Body)]) -> Vec<u8> {
        let mut out = Vec::new();
        write_head(&mut out, records.len()).unwrap();
        for (s, legacy, name, body) in records {
            write_record(&mut out, s, *legacy, name, body).unwrap();
        }
        out
    }

    #[test]
    fn records_round_trip_and_carry_their_bytes() {
        let bytes = encode(&[
            (stamp(1), false, "3f9a1c2b.json", Body::Summary(fields())),
            (stamp(2), true, "bbbb0002.json", Body::Problem("bbbb0002.json: corrupt")),
        ]);
        let records = decode(&bytes).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!((records[0].stamp, records[0].legacy, records[0].name), (stamp(1), false, "3f9a1c2b.json"));
        assert_eq!(records[0].body, Body::Summary(fields()));
        assert_eq!(records[1].body, Body::Problem("bbbb0002.json: corrupt"));
        assert!(records[1].legacy);
        // Copying the raw bytes of each record makes the same file.
        let mut again = Vec::new();
        write_head(&mut again, 2).unwrap();
        for r in &records {
            again.extend_from_slice(r.raw);
        }
        assert_eq!(again, bytes);
    }

    #[test]
    fn every_damaged_file_is_refused_never_misread() {
        let bytes = encode(&[(stamp(1), false, "3f9a1c2b.json", Body::Summary(fields()))]);
        assert!(decode(b"").is_err());
        assert!(decode(b"{\"version\":1,\"files\":{}}").is_err(), "the old JSON index");
        // Cut anywhere, it no longer decodes.
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).unwrap_err().0.contains("follow"));
        // A count larger than the file could hold.
        let mut lying = bytes.clone();
        lying[MAGIC.len()..MAGIC.len() + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&lying).is_err());
        // Text that is not UTF-8.
        let mut bad = bytes.clone();
        let at = bad.windows(8).position(|w| w == b"3f9a1c2b").unwrap();
        bad[at] = 0xff;
        assert!(decode(&bad).unwrap_err().0.contains("UTF-8"));
    }
}
