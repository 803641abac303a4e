//! Fuzz targets run as property tests (cargo-fuzz needs a nightly toolchain; these
//! run on stable, in CI with proptest's default case count and for a set time with
//! `scripts/fuzz.sh`). Each feeds hostile input to a parser that faces tenants and
//! asserts it answers (accept or refuse) without panicking, seeded from the
//! vendored conformance corpora: the 56 real Dockerfiles and the RFC 8785 inputs.
//! A failure proptest finds is kept in `proptest-regressions/` and replayed first
//! on every later run, so each crash becomes a regression test.

use chrono::{TimeZone, Utc};
use domain::environments::archive::{ArchiveFormat, ArchiveLimits, scan};
use domain::environments::dockerfile::check;
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::formula::parse as parse_formula;
use domain::tables::policy::{Mode, Targets, Tokens, compile};
use domain::tasks::input::{InputLimits, parse as parse_input};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::io::{Cursor, Write};
use std::path::PathBuf;
use std::sync::LazyLock;

fn corpus(folder: &str) -> Vec<Vec<u8>> {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/conformance")
        .join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| std::fs::read(path).unwrap())
        .collect()
}

static DOCKERFILES: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| corpus("dockerfiles/files"));
static JCS_INPUTS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| corpus("jcs/input"));

/// A seed from `corpus` with random edits: bytes overwritten, inserted, cut.
fn mutated(corpus: &'static LazyLock<Vec<Vec<u8>>>) -> impl Strategy<Value = Vec<u8>> {
    let edits = prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 0..12);
    (any::<prop::sample::Index>(), edits).prop_map(move |(seed, edits)| {
        let mut bytes = seed.get(corpus).clone();
        for (at, byte, kind) in edits {
            let len = bytes.len();
            match kind {
                0 if len > 0 => bytes[at.index(len)] = byte,
                1 => bytes.insert(at.index(len + 1), byte),
                _ if len > 0 => bytes.truncate(at.index(len)),
                _ => {}
            }
        }
        bytes
    })
}

/// A small valid build context (a Dockerfile and a file) in `format`.
fn context(format: ArchiveFormat, dockerfile: &[u8]) -> Vec<u8> {
    let files: [(&str, &[u8]); 2] = [("Dockerfile", dockerfile), ("app/run.sh", b"echo hi\n")];
    match format {
        ArchiveFormat::Zip => {
            let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
            for (name, data) in files {
                writer
                    .start_file(name, zip::write::SimpleFileOptions::default())
                    .unwrap();
                writer.write_all(data).unwrap();
            }
            writer.finish().unwrap().into_inner()
        }
        ArchiveFormat::Tar | ArchiveFormat::TarGz => {
            let mut builder = tar::Builder::new(Vec::new());
            for (name, data) in files {
                let mut header = tar::Header::new_gnu();
                header.set_size(data.len() as u64);
                header.set_mode(0o644);
                header.set_cksum();
                builder.append_data(&mut header, name, data).unwrap();
            }
            let tar = builder.into_inner().unwrap();
            if format == ArchiveFormat::Tar {
                return tar;
            }
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&tar).unwrap();
            gz.finish().unwrap()
        }
    }
}

fn scan_all(format: ArchiveFormat, bytes: Vec<u8>) {
    let limits = ArchiveLimits {
        max_entries: 1_000,
        max_total_bytes: 1 << 20,
        ..ArchiveLimits::default()
    };
    let _ = scan(format, Cursor::new(bytes), limits, |_, data| {
        std::io::copy(data, &mut std::io::sink()).map(|_| ())
    });
}

fn format() -> impl Strategy<Value = ArchiveFormat> {
    prop_oneof![
        Just(ArchiveFormat::Zip),
        Just(ArchiveFormat::Tar),
        Just(ArchiveFormat::TarGz)
    ]
}

/// Arbitrary JSON, with the keys and values a row policy uses made likely.
fn policy_json() -> impl Strategy<Value = Value> {
    let word = prop_oneof![
        Just("and"),
        Just("or"),
        Just("not"),
        Just("column"),
        Just("op"),
        Just("value"),
        Just("eq"),
        Just("in"),
        Just("contains"),
        Just("gt"),
        Just("is_empty"),
        Just("$me"),
        Just("$today"),
        Just("$now"),
        Just("Owner"),
        Just("col_1"),
        Just("link"),
    ]
    .prop_map(str::to_string);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        word.clone().prop_map(Value::String),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(word.clone(), inner, 0..5)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn policy_columns() -> Vec<ColumnDef> {
    vec![
        ColumnDef::new("col_1", "Owner", ColumnType::Principal),
        ColumnDef::new("col_2", "Price", ColumnType::Integer),
        ColumnDef::new("col_3", "Due", ColumnType::Date),
        ColumnDef::new("col_4", "Name", ColumnType::String),
    ]
}

proptest! {
    /// Arbitrary bytes in every archive format are read or refused.
    #[test]
    fn archives_of_arbitrary_bytes(format in format(), bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        scan_all(format, bytes);
    }

    /// Valid contexts with random edits are read or refused.
    #[test]
    fn damaged_contexts(format in format(), dockerfile in mutated(&DOCKERFILES),
                        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16)) {
        let mut bytes = context(format, &dockerfile);
        for (at, byte) in edits {
            let len = bytes.len();
            bytes[at.index(len)] = byte;
        }
        scan_all(format, bytes);
    }

    /// The Dockerfile rules take any edit of a real Dockerfile.
    #[test]
    fn dockerfiles_edited(bytes in mutated(&DOCKERFILES)) {
        let _ = check(&bytes);
    }

    /// And any text at all.
    #[test]
    fn dockerfiles_of_arbitrary_text(text in "(FROM|RUN|COPY|ARG|ENV|USER|\\$\\{|\\}|:-|\\\\\n|[ -~\n]){0,200}") {
        let _ = check(text.as_bytes());
    }

    /// Run inputs: an edited RFC 8785 input is canonicalized or refused, and a
    /// canonical form parses again to itself.
    #[test]
    fn run_inputs_canonicalize_once(bytes in mutated(&JCS_INPUTS)) {
        if let Ok(first) = parse_input(&bytes, InputLimits::default()) {
            let again = parse_input(&first.canonical, InputLimits::default()).unwrap();
            prop_assert_eq!(again.canonical, first.canonical);
            prop_assert_eq!(again.digest, first.digest);
        }
    }

    /// Row policies compile or are refused when authored, and never fail a read.
    #[test]
    fn row_policies(node in policy_json()) {
        let columns = policy_columns();
        let targets = Targets::new();
        let _ = compile(&node, &columns, &targets, Mode::Author);
        let now = Utc.with_ymd_and_hms(2026, 11, 27, 12, 0, 0).unwrap();
        let tokens = Tokens { today: now.date_naive(), now, me: Some(vec!["user:u1".into()]), me_department: None };
        prop_assert!(compile(&node, &columns, &targets, Mode::Read(&tokens)).is_ok());
    }

    /// Formulas of any characters parse or are refused.
    #[test]
    fn formulas_of_any_text(text in "\\PC{0,200}") {
        let _ = parse_formula(&text);
    }
}
