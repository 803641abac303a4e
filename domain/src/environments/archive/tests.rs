//! A corpus of hostile archives, built byte by byte, and property tests.

use super::*;
use proptest::prelude::*;
use std::io::{Cursor, Write};

/// A tar entry written with raw header fields, so hostile names and types are
/// possible (the tar builder itself refuses them).
fn raw_entry(out: &mut Vec<u8>, name: &[u8], kind: tar::EntryType, data: &[u8], link: &[u8]) {
    let mut header = tar::Header::new_gnu();
    {
        let old = header.as_old_mut();
        old.name[..name.len()].copy_from_slice(name);
        old.linkname[..link.len()].copy_from_slice(link);
    }
    header.set_entry_type(kind);
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
}

/// (name, type, content, link target) of a raw tar entry.
type RawEntry<'a> = (&'a [u8], tar::EntryType, &'a [u8], &'a [u8]);
/// The same with an owned name.
type OwnedEntry = (Vec<u8>, tar::EntryType, &'static [u8], &'static [u8]);

fn tar_of(entries: &[RawEntry<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, kind, data, link) in entries {
        raw_entry(&mut out, name, *kind, data, link);
    }
    out.extend_from_slice(&[0u8; 1024]);
    out
}

fn file(name: &str, data: &'static [u8]) -> OwnedEntry {
    (name.as_bytes().to_vec(), tar::EntryType::Regular, data, b"")
}

fn scan_entries(entries: Vec<OwnedEntry>) -> Result<Manifest, ArchiveRejection> {
    let borrowed: Vec<RawEntry<'_>> = entries
        .iter()
        .map(|(n, k, d, l)| (n.as_slice(), *k, *d, *l))
        .collect();
    let bytes = tar_of(&borrowed);
    scan(
        ArchiveFormat::Tar,
        Cursor::new(bytes),
        ArchiveLimits::default(),
        |_, _| Ok(()),
    )
}

fn detail(result: Result<Manifest, ArchiveRejection>) -> &'static str {
    result
        .expect_err("the archive must be refused")
        .error_detail()
}

#[test]
fn a_valid_context_is_scanned_and_visited() {
    let bytes = tar_of(&[
        (b"./", tar::EntryType::Directory, b"", b""),
        (
            b"Dockerfile",
            tar::EntryType::Regular,
            b"FROM scratch\n",
            b"",
        ),
        (b"app/", tar::EntryType::Directory, b"", b""),
        (
            b"app/startup.sh",
            tar::EntryType::Regular,
            b"echo nested names are fine",
            b"",
        ),
    ]);
    let mut seen = Vec::new();
    let manifest = scan(
        ArchiveFormat::Tar,
        Cursor::new(bytes),
        ArchiveLimits::default(),
        |entry, reader| {
            let mut content = Vec::new();
            reader.read_to_end(&mut content)?;
            seen.push((entry.clone(), content));
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(manifest.dockerfile.as_deref(), Some(&b"FROM scratch\n"[..]));
    assert_eq!(manifest.total_bytes, 13 + 26);
    assert_eq!(seen.len(), 3);
    assert_eq!(
        seen[2],
        (
            Entry::File {
                path: "app/startup.sh".into(),
                size: 26,
                executable: false
            },
            b"echo nested names are fine".to_vec()
        )
    );
}

#[test]
fn gzip_and_zip_contexts_are_read_too() {
    let plain = tar_of(&[(
        b"Dockerfile",
        tar::EntryType::Regular,
        b"FROM scratch\n",
        b"",
    )]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&plain).unwrap();
    let gz = gz.finish().unwrap();
    assert!(
        scan(
            ArchiveFormat::TarGz,
            Cursor::new(gz),
            ArchiveLimits::default(),
            |_, _| Ok(())
        )
        .is_ok()
    );

    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    zip.start_file("Dockerfile", zip::write::SimpleFileOptions::default())
        .unwrap();
    zip.write_all(b"FROM scratch\n").unwrap();
    zip.add_directory("src/", zip::write::SimpleFileOptions::default())
        .unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    let manifest = scan(
        ArchiveFormat::Zip,
        Cursor::new(bytes),
        ArchiveLimits::default(),
        |_, _| Ok(()),
    )
    .unwrap();
    assert_eq!(manifest.entries, 2);
}

#[test]
fn reserved_root_names_are_refused_but_nested_ones_pass() {
    for name in RESERVED_ROOT_NAMES {
        let result = scan_entries(vec![file("Dockerfile", b"FROM scratch"), file(name, b"x")]);
        assert_eq!(detail(result), "reserved_path_or_hostile_entry", "{name}");
        let result = scan_entries(vec![
            file("Dockerfile", b"FROM scratch"),
            file(&format!("./{name}"), b"x"),
        ]);
        assert_eq!(detail(result), "reserved_path_or_hostile_entry", "./{name}");
    }
    assert!(
        scan_entries(vec![
            file("Dockerfile", b"FROM scratch"),
            file("lib/work.sh", b"x")
        ])
        .is_ok()
    );
}

#[test]
fn hostile_paths_are_refused() {
    for name in [
        "/etc/passwd",
        "C:/windows/x",
        "c:x",
        "../escape",
        "a/../../escape",
        "a\\b",
        "x/..",
    ] {
        let result = scan_entries(vec![file("Dockerfile", b"FROM scratch"), file(name, b"x")]);
        assert_eq!(detail(result), "reserved_path_or_hostile_entry", "{name:?}");
    }
}

#[test]
fn nul_in_a_name_is_refused() {
    // A tar name ends at its first NUL; zip names and the path rule see the byte.
    assert_eq!(normalize_path("a\0b"), Err("NUL in path"));
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    zip.start_file("Dockerfile", options).unwrap();
    zip.start_file("a\0b", options).unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    let result = scan(
        ArchiveFormat::Zip,
        Cursor::new(bytes),
        ArchiveLimits::default(),
        |_, _| Ok(()),
    );
    assert_eq!(detail(result), "reserved_path_or_hostile_entry");
}

#[test]
fn links_devices_and_fifos_are_refused() {
    for kind in [
        tar::EntryType::Symlink,
        tar::EntryType::Link,
        tar::EntryType::Char,
        tar::EntryType::Block,
        tar::EntryType::Fifo,
    ] {
        let entries = vec![
            file("Dockerfile", b"FROM scratch"),
            (b"abs".to_vec(), kind, &b""[..], &b"/etc/passwd"[..]),
        ];
        assert_eq!(
            detail(scan_entries(entries)),
            "link_or_special_entry",
            "{kind:?}"
        );
    }
}

#[test]
fn duplicates_and_paths_through_files_are_refused() {
    let dup = vec![
        file("Dockerfile", b"FROM scratch"),
        file("a", b"1"),
        file("a", b"2"),
    ];
    assert_eq!(detail(scan_entries(dup)), "reserved_path_or_hostile_entry");
    let through = vec![
        file("Dockerfile", b"FROM scratch"),
        file("a", b"1"),
        file("a/b", b"2"),
    ];
    assert_eq!(
        detail(scan_entries(through)),
        "reserved_path_or_hostile_entry"
    );
}

#[test]
fn a_missing_or_non_regular_dockerfile_is_refused() {
    assert_eq!(
        detail(scan_entries(vec![file("dockerfile", b"FROM scratch")])),
        "dockerfile_missing"
    );
    assert_eq!(
        detail(scan_entries(vec![file("sub/Dockerfile", b"FROM scratch")])),
        "dockerfile_missing"
    );
    let dir = vec![(
        b"Dockerfile/".to_vec(),
        tar::EntryType::Directory,
        &b""[..],
        &b""[..],
    )];
    assert_eq!(detail(scan_entries(dir)), "dockerfile_missing");
}

#[test]
fn entry_and_size_limits_stop_extraction() {
    let bytes = tar_of(&[
        (b"Dockerfile", tar::EntryType::Regular, b"FROM scratch", b""),
        (b"a", tar::EntryType::Regular, b"1", b""),
        (b"b", tar::EntryType::Regular, b"2", b""),
    ]);
    let few = ArchiveLimits {
        max_entries: 2,
        ..ArchiveLimits::default()
    };
    assert_eq!(
        detail(scan(
            ArchiveFormat::Tar,
            Cursor::new(bytes.clone()),
            few,
            |_, _| Ok(())
        )),
        "too_many_entries"
    );
    let small = ArchiveLimits {
        max_total_bytes: 12,
        ..ArchiveLimits::default()
    };
    assert_eq!(
        detail(scan(
            ArchiveFormat::Tar,
            Cursor::new(bytes),
            small,
            |_, _| Ok(())
        )),
        "context_too_large"
    );
}

#[test]
fn an_oversized_dockerfile_is_noted_not_kept() {
    let bytes = tar_of(&[(
        b"Dockerfile",
        tar::EntryType::Regular,
        b"FROM scratch\n",
        b"",
    )]);
    let tiny = ArchiveLimits {
        max_dockerfile_bytes: 4,
        ..ArchiveLimits::default()
    };
    let manifest = scan(ArchiveFormat::Tar, Cursor::new(bytes), tiny, |_, _| Ok(())).unwrap();
    assert_eq!((manifest.dockerfile, manifest.dockerfile_bytes), (None, 13));
}

#[test]
fn zip_symlinks_and_escapes_are_refused() {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    zip.start_file("Dockerfile", options).unwrap();
    zip.write_all(b"FROM scratch").unwrap();
    zip.add_symlink("abs", "/etc/passwd", options).unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    assert_eq!(
        detail(scan(
            ArchiveFormat::Zip,
            Cursor::new(bytes),
            ArchiveLimits::default(),
            |_, _| Ok(())
        )),
        "link_or_special_entry"
    );

    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    zip.start_file("Dockerfile", options).unwrap();
    zip.start_file("../../etc/cron.d/x", options).unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    assert_eq!(
        detail(scan(
            ArchiveFormat::Zip,
            Cursor::new(bytes),
            ArchiveLimits::default(),
            |_, _| Ok(())
        )),
        "reserved_path_or_hostile_entry"
    );
}

#[test]
fn garbage_is_unreadable_in_every_format() {
    for format in [ArchiveFormat::Zip, ArchiveFormat::Tar, ArchiveFormat::TarGz] {
        let result = scan(
            format,
            Cursor::new(b"this is not an archive at all, not even close".repeat(20)),
            ArchiveLimits::default(),
            |_, _| Ok(()),
        );
        assert!(result.is_err(), "{format:?}");
    }
}

proptest! {
    /// Whatever a path looks like, an accepted one stays inside the context.
    #[test]
    fn normalized_paths_never_escape(raw in "[a-zA-Z0-9._/\\\\:\\x00-]{0,40}") {
        if let Ok(Some(path)) = normalize_path(&raw) {
            prop_assert!(!path.starts_with('/'));
            prop_assert!(!path.split('/').any(|p| p == ".." || p == "." || p.is_empty()));
            prop_assert!(!path.contains('\\') && !path.contains('\0'));
            prop_assert!(!RESERVED_ROOT_NAMES.contains(&path.as_str()));
        }
    }

    /// Arbitrary bytes never make the readers panic, in any format.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        for format in [ArchiveFormat::Zip, ArchiveFormat::Tar, ArchiveFormat::TarGz] {
            let _ = scan(format, Cursor::new(bytes.clone()), ArchiveLimits::default(), |_, _| Ok(()));
        }
    }

    /// Mutated valid archives are either accepted with safe paths or refused.
    #[test]
    fn mutated_archives_stay_safe(flips in proptest::collection::vec((0usize..3072, any::<u8>()), 1..8)) {
        let mut bytes = tar_of(&[
            (b"Dockerfile", tar::EntryType::Regular, b"FROM scratch\n", b""),
            (b"dir/", tar::EntryType::Directory, b"", b""),
            (b"dir/file.txt", tar::EntryType::Regular, b"hello", b""),
        ]);
        for (at, value) in flips {
            let index = at % bytes.len();
            bytes[index] = value;
        }
        let _ = scan(ArchiveFormat::Tar, Cursor::new(bytes), ArchiveLimits::default(), |entry, _| {
            let path = match entry { Entry::Directory(p) | Entry::File { path: p, .. } => p };
            assert!(normalize_path(path).ok().flatten().as_deref() == Some(path.as_str()));
            Ok(())
        });
    }
}
