//! Property tests of an artifact's front matter, run for a bounded time
//! (`GLRS_FUZZ_SECS`, `GLRS_FUZZ_SEED`, as for the session file): generated
//! values (colons, quotes, newlines, leading markers, any Unicode) must
//! read back exactly as written; mutated artifacts must never panic.

use std::path::Path;

use super::artifact::{self, ArtifactInfo};
use super::plan::Block;
use crate::store::fuzz::{Rng, for_a_while, mutate, text};

fn info(rng: &mut Rng) -> ArtifactInfo {
    ArtifactInfo {
        file: Path::new("/a/3f9a1c2b/x.md").to_path_buf(),
        session: "3f9a1c2b".into(),
        created_at: "2026-09-06T14:02:11.000Z".into(),
        label: text(rng),
        messages: rng.next() >> rng.below(64),
        note: text(rng),
        entries: format!("{}-{}", rng.below(100), rng.below(1000)),
    }
}

#[test]
fn artifact_front_matter_reads_back_exactly_as_written() {
    for_a_while("artifact front matter round trip", |rng| {
        let info = info(rng);
        let blocks = [Block { tag: "user".into(), text: text(rng) }];
        let text = artifact::render(&info, &blocks);
        let back = artifact::parse_front_matter(&info.file, &text).unwrap_or_else(|| panic!("no front matter: {text}"));
        assert_eq!(back, info, "{text}");
    });
}

#[test]
fn mutated_front_matter_never_panics() {
    for_a_while("artifact front matter mutations", |rng| {
        let info = info(rng);
        let mut bytes = artifact::render(&info, &[Block { tag: "user".into(), text: text(rng) }]).into_bytes();
        for _ in 0..1 + rng.below(8) {
            mutate(rng, &mut bytes);
        }
        let text = String::from_utf8_lossy(&bytes);
        let _ = artifact::parse_front_matter(&info.file, &text);
    });
}
