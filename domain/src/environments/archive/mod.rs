//! Context archive rules: what an uploaded zip, tar or tar.gz may contain.
//!
//! The archive is read as a stream, entry by entry, and refused at the first entry
//! that breaks a rule: reserved root names (`startup.sh`, `work.sh`, `driver.sh`,
//! `input.json`), absolute or drive-absolute paths, `..` escapes, NUL or backslash in
//! a path, links and special files (a symlink or hard link could let a build read or
//! write outside its context, so none is accepted), duplicate paths, more than
//! 100,000 entries or more than 5 GiB of content. The Dockerfile must be a regular
//! file at the root. Each refusal names its rule in `error_detail`.
//!
//! Scanning hands each regular file's bytes to a visitor, so the caller can extract
//! the context in the same pass; nothing here touches the file system.

use std::collections::HashSet;
use std::io::{self, Read, Seek};

/// Root names the platform writes into `/workspace` itself.
pub const RESERVED_ROOT_NAMES: &[&str] = &["startup.sh", "work.sh", "driver.sh", "input.json"];

/// Supported archive formats (`SandboxContextArchiveFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ArchiveFormat {
    /// A zip file.
    #[serde(rename = "zip")]
    Zip,
    /// An uncompressed tar.
    #[serde(rename = "tar")]
    Tar,
    /// A gzip-compressed tar.
    #[serde(rename = "tar.gz")]
    TarGz,
}

impl ArchiveFormat {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Zip => "zip",
            Self::Tar => "tar",
            Self::TarGz => "tar.gz",
        }
    }
}

/// Bounds of a context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveLimits {
    /// Entries at most.
    pub max_entries: u64,
    /// Bytes of file content at most.
    pub max_total_bytes: u64,
    /// The Dockerfile is kept in memory up to this size (larger ones are a
    /// Dockerfile rule violation at build time).
    pub max_dockerfile_bytes: u64,
    /// Names refused at the archive's root.
    pub reserved_root_names: &'static [&'static str],
    /// Whether a root `Dockerfile` is required (contexts) or not (task bundles).
    pub require_dockerfile: bool,
}

impl Default for ArchiveLimits {
    fn default() -> Self {
        Self {
            max_entries: 100_000,
            max_total_bytes: 5 << 30,
            max_dockerfile_bytes: 1 << 20,
            reserved_root_names: RESERVED_ROOT_NAMES,
            require_dockerfile: true,
        }
    }
}

/// Why an archive was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArchiveRejection {
    /// The bytes are not an archive of the declared format.
    #[error("the archive cannot be read as {format}: {reason}")]
    Unreadable {
        /// Declared format.
        format: &'static str,
        /// What the reader said.
        reason: String,
    },
    /// A path rule: reserved root name, absolute or drive path, `..`, NUL, backslash,
    /// duplicate or a path through a file.
    #[error("entry `{entry}` is refused: {rule}")]
    HostileEntry {
        /// The entry as named in the archive (lossy).
        entry: String,
        /// Which rule.
        rule: &'static str,
    },
    /// A symlink, hard link, device or FIFO.
    #[error(
        "entry `{entry}` is a link or special file; contexts hold regular files and directories only"
    )]
    SpecialEntry {
        /// The entry.
        entry: String,
    },
    /// Over 100,000 entries.
    #[error("the archive has more than {limit} entries")]
    TooManyEntries {
        /// The limit.
        limit: u64,
    },
    /// Over 5 GiB of content.
    #[error("the archive holds more than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
    /// No regular `Dockerfile` at the root.
    #[error("the archive has no regular file named Dockerfile at its root")]
    MissingDockerfile,
}

impl ArchiveRejection {
    /// The `error_detail` naming the rule.
    pub fn error_detail(&self) -> &'static str {
        match self {
            Self::Unreadable { .. } => "archive_unreadable",
            Self::HostileEntry { .. } => "reserved_path_or_hostile_entry",
            Self::SpecialEntry { .. } => "link_or_special_entry",
            Self::TooManyEntries { .. } => "too_many_entries",
            Self::TooLarge { .. } => "context_too_large",
            Self::MissingDockerfile => "dockerfile_missing",
        }
    }
}

/// What a valid archive holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Entries seen (files and directories).
    pub entries: u64,
    /// Bytes of file content.
    pub total_bytes: u64,
    /// Size of the Dockerfile.
    pub dockerfile_bytes: u64,
    /// Its content, when within `max_dockerfile_bytes`.
    pub dockerfile: Option<Vec<u8>>,
}

/// One entry handed to the visitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A directory at this normalized relative path.
    Directory(String),
    /// A regular file.
    File {
        /// Normalized relative path.
        path: String,
        /// Size in bytes.
        size: u64,
        /// Whether any execute bit is set in the archive.
        executable: bool,
    },
}

/// Checks an entry name and returns its normalized relative form (`a/b/c`), or
/// `None` for the archive root itself (`./`).
pub fn normalize_path(raw: &str) -> Result<Option<String>, &'static str> {
    normalize_path_reserving(raw, RESERVED_ROOT_NAMES)
}

/// [`normalize_path`] with another set of reserved root names.
pub fn normalize_path_reserving(
    raw: &str,
    reserved: &[&str],
) -> Result<Option<String>, &'static str> {
    if raw.contains('\0') {
        return Err("NUL in path");
    }
    if raw.contains('\\') {
        return Err("backslash in path");
    }
    if raw.starts_with('/') {
        return Err("absolute path");
    }
    let bytes = raw.as_bytes();
    if bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic() {
        return Err("drive-absolute path");
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("`..` escapes the context"),
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Ok(None);
    }
    if reserved.contains(&parts[0]) {
        return Err("reserved root name");
    }
    Ok(Some(parts.join("/")))
}

/// Tracks rules that span entries: counts, sizes, duplicates, the Dockerfile.
struct Scan {
    limits: ArchiveLimits,
    seen: HashSet<String>,
    files: HashSet<String>,
    manifest: Manifest,
    has_dockerfile: bool,
}

impl Scan {
    fn new(limits: ArchiveLimits) -> Self {
        Self {
            limits,
            seen: HashSet::new(),
            files: HashSet::new(),
            manifest: Manifest {
                entries: 0,
                total_bytes: 0,
                dockerfile_bytes: 0,
                dockerfile: None,
            },
            has_dockerfile: false,
        }
    }

    /// Checks a path against the earlier entries; `None` for the root entry.
    fn admit(
        &mut self,
        raw: &str,
        is_file: bool,
        size: u64,
    ) -> Result<Option<String>, ArchiveRejection> {
        self.manifest.entries += 1;
        if self.manifest.entries > self.limits.max_entries {
            return Err(ArchiveRejection::TooManyEntries {
                limit: self.limits.max_entries,
            });
        }
        let hostile = |rule| ArchiveRejection::HostileEntry {
            entry: raw.to_string(),
            rule,
        };
        let Some(path) =
            normalize_path_reserving(raw, self.limits.reserved_root_names).map_err(hostile)?
        else {
            return Ok(None);
        };
        if !self.seen.insert(path.clone()) {
            return Err(hostile("duplicate path"));
        }
        let mut prefix = String::new();
        for part in path.split('/').take(path.split('/').count() - 1) {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            if self.files.contains(&prefix) {
                return Err(hostile("path goes through a file"));
            }
        }
        if is_file {
            self.files.insert(path.clone());
            self.manifest.total_bytes = self.manifest.total_bytes.saturating_add(size);
            if self.manifest.total_bytes > self.limits.max_total_bytes {
                return Err(ArchiveRejection::TooLarge {
                    limit: self.limits.max_total_bytes,
                });
            }
        }
        Ok(Some(path))
    }

    /// Reads a file's content through the visitor (keeping the Dockerfile), counting
    /// the bytes actually read rather than trusting the header.
    fn file<V: FnMut(&Entry, &mut dyn Read) -> io::Result<()>>(
        &mut self,
        path: String,
        size: u64,
        executable: bool,
        reader: &mut dyn Read,
        visit: &mut V,
    ) -> Result<(), ArchiveRejection> {
        let unreadable = |e: io::Error| ArchiveRejection::Unreadable {
            format: "archive",
            reason: e.to_string(),
        };
        let mut capped = reader.take(size);
        if path == "Dockerfile" {
            self.has_dockerfile = true;
            self.manifest.dockerfile_bytes = size;
            if size <= self.limits.max_dockerfile_bytes {
                let mut content = Vec::with_capacity(size as usize);
                capped.read_to_end(&mut content).map_err(unreadable)?;
                self.manifest.dockerfile = Some(content.clone());
                return visit(
                    &Entry::File {
                        path,
                        size,
                        executable,
                    },
                    &mut content.as_slice(),
                )
                .map_err(unreadable);
            }
        }
        visit(
            &Entry::File {
                path,
                size,
                executable,
            },
            &mut capped,
        )
        .map_err(unreadable)?;
        io::copy(&mut capped, &mut io::sink()).map_err(unreadable)?;
        Ok(())
    }

    fn finish(self) -> Result<Manifest, ArchiveRejection> {
        if self.limits.require_dockerfile && !self.has_dockerfile {
            return Err(ArchiveRejection::MissingDockerfile);
        }
        Ok(self.manifest)
    }
}

/// Scans a tar (optionally gzip-compressed) stream.
pub fn scan_tar<R, V>(
    reader: R,
    gzip: bool,
    limits: ArchiveLimits,
    mut visit: V,
) -> Result<Manifest, ArchiveRejection>
where
    R: Read,
    V: FnMut(&Entry, &mut dyn Read) -> io::Result<()>,
{
    let format = if gzip { "tar.gz" } else { "tar" };
    let unreadable = |e: io::Error| ArchiveRejection::Unreadable {
        format,
        reason: e.to_string(),
    };
    let reader: Box<dyn Read> = if gzip {
        Box::new(flate2::read::GzDecoder::new(reader))
    } else {
        Box::new(reader)
    };
    let mut archive = tar::Archive::new(reader);
    let mut scan = Scan::new(limits);
    for entry in archive.entries().map_err(unreadable)? {
        let mut entry = entry.map_err(unreadable)?;
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            if kind.is_pax_global_extensions()
                || kind.is_pax_local_extensions()
                || kind.is_gnu_longname()
            {
                continue;
            }
            return Err(ArchiveRejection::SpecialEntry { entry: raw });
        }
        let size = entry.size();
        let executable = entry.header().mode().is_ok_and(|mode| mode & 0o111 != 0);
        match scan.admit(&raw, kind.is_file(), size)? {
            None => {}
            Some(path) if kind.is_dir() => {
                visit(&Entry::Directory(path), &mut io::empty()).map_err(unreadable)?
            }
            Some(path) => scan.file(path, size, executable, &mut entry, &mut visit)?,
        }
    }
    scan.finish()
}

/// Scans a zip archive (zip keeps its directory at the end, so it needs `Seek`).
pub fn scan_zip<R, V>(
    reader: R,
    limits: ArchiveLimits,
    mut visit: V,
) -> Result<Manifest, ArchiveRejection>
where
    R: Read + Seek,
    V: FnMut(&Entry, &mut dyn Read) -> io::Result<()>,
{
    let unreadable = |reason: String| ArchiveRejection::Unreadable {
        format: "zip",
        reason,
    };
    let mut archive = zip::ZipArchive::new(reader).map_err(|e| unreadable(e.to_string()))?;
    if archive.len() as u64 > limits.max_entries {
        return Err(ArchiveRejection::TooManyEntries {
            limit: limits.max_entries,
        });
    }
    let mut scan = Scan::new(limits);
    for index in 0..archive.len() {
        let mut file = archive
            .by_index(index)
            .map_err(|e| unreadable(e.to_string()))?;
        let raw = String::from_utf8_lossy(file.name_raw()).into_owned();
        if file.is_symlink() {
            return Err(ArchiveRejection::SpecialEntry { entry: raw });
        }
        let special = file.unix_mode().is_some_and(|mode| {
            let kind = mode & 0o170000;
            kind != 0 && kind != 0o100000 && kind != 0o040000
        });
        if special {
            return Err(ArchiveRejection::SpecialEntry { entry: raw });
        }
        let is_dir = file.is_dir();
        let size = file.size();
        let executable = file.unix_mode().is_some_and(|mode| mode & 0o111 != 0);
        match scan.admit(&raw, !is_dir, size)? {
            None => {}
            Some(path) if is_dir => visit(&Entry::Directory(path), &mut io::empty())
                .map_err(|e| unreadable(e.to_string()))?,
            Some(path) => scan.file(path, size, executable, &mut file, &mut visit)?,
        }
    }
    scan.finish()
}

/// Scans an archive of the given format from a seekable reader.
pub fn scan<R, V>(
    format: ArchiveFormat,
    reader: R,
    limits: ArchiveLimits,
    visit: V,
) -> Result<Manifest, ArchiveRejection>
where
    R: Read + Seek,
    V: FnMut(&Entry, &mut dyn Read) -> io::Result<()>,
{
    match format {
        ArchiveFormat::Zip => scan_zip(reader, limits, visit),
        ArchiveFormat::Tar => scan_tar(reader, false, limits, visit),
        ArchiveFormat::TarGz => scan_tar(reader, true, limits, visit),
    }
}

/// The archive format from its first bytes (gzip: tar.gz, `PK`: zip, else tar);
/// the reader is rewound.
pub fn sniff<R: Read + Seek>(reader: &mut R) -> io::Result<ArchiveFormat> {
    let mut magic = [0u8; 4];
    let n = reader.read(&mut magic)?;
    reader.rewind()?;
    Ok(match &magic[..n] {
        [0x1f, 0x8b, ..] => ArchiveFormat::TarGz,
        [b'P', b'K', 3, 4] | [b'P', b'K', 5, 6] => ArchiveFormat::Zip,
        _ => ArchiveFormat::Tar,
    })
}

#[cfg(test)]
mod tests;
