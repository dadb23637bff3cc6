//! `op commit-files`' inputs: files read from disk and standard input, so that nothing but the
//! named files gets in and nothing can make the command hang or read without end.
//!
//! - A symbolic link is never followed. It becomes a link in the commit (mode `120000`, its
//!   target as content, as `git add` records one); GitLab's side refuses it later.
//! - The directories on a file's way are checked with `lstat`: a link among them is refused,
//!   so a linked directory cannot lead outside the working tree.
//! - Only regular files are read. The file is opened with `O_NOFOLLOW | O_NONBLOCK` (opening a
//!   FIFO never blocks) and judged again on the open handle (`fstat`): a regular file, the
//!   same one `lstat` saw, so a file swapped for a FIFO, a device or a link in between is
//!   refused rather than read.
//! - Each file, and standard input, is read up to [`MAX_FILE_BYTES`] and refused beyond it.
//! - A path component that is not UTF-8 is refused (a repository path is UTF-8), never dropped.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::path::{Component, Path};

use headroom_core::provider::names::tree_path;
use headroom_core::provider::{FileChange, FileContent, FileMode};

use crate::outcome::CliError;

/// The most bytes one file may hold: 100 MiB, GitHub's own limit for a file in a repository.
pub(super) const MAX_FILE_BYTES: u64 = 100 * 1024 * 1024;

/// A file's change: text when it is UTF-8, else binary.
pub(super) fn change(path: String, bytes: Vec<u8>, mode: FileMode, exists: bool) -> FileChange {
    let content = match String::from_utf8(bytes) {
        Ok(text) => FileContent::Text(text),
        Err(e) => FileContent::Binary(e.into_bytes()),
    };
    FileChange {
        path,
        content: Some(content),
        mode,
        exists,
    }
}

/// A repository path given on the command line (`--stdin-as`, `--delete`), checked as the
/// providers check a file's path.
pub(super) fn checked_repository_path(path: &str) -> Result<(), CliError> {
    tree_path(path).map_err(|e| CliError::refused(&e))
}

/// Standard input, at most [`MAX_FILE_BYTES`], written at `target`.
pub(super) fn from_stdin(
    target: String,
    stdin: &mut dyn Read,
    exists: bool,
) -> Result<FileChange, CliError> {
    checked_repository_path(&target)?;
    let bytes =
        read_bounded(stdin).map_err(|e| CliError::Refused(format!("standard input: {e}")))?;
    Ok(change(target, bytes, FileMode::Regular, exists))
}

/// A file or link from disk, written at the same relative path (`/`-separated).
pub(super) fn from_disk(path: &Path, exists: bool) -> Result<FileChange, CliError> {
    let refused = |problem: &str| CliError::Refused(format!("{}: {problem}", path.display()));
    let target = repository_path(path).map_err(refused)?;
    checked_repository_path(&target)?;
    parents_are_directories(path).map_err(|p| refused(&p))?;
    let seen = std::fs::symlink_metadata(path).map_err(|e| refused(&e.to_string()))?;
    let kind = seen.file_type();
    if kind.is_symlink() {
        let link = std::fs::read_link(path).map_err(|e| refused(&e.to_string()))?;
        let Some(link) = link.to_str() else {
            return Err(refused("its link target is not UTF-8"));
        };
        return Ok(FileChange {
            path: target,
            content: Some(FileContent::Text(link.to_owned())),
            mode: FileMode::Symlink,
            exists,
        });
    }
    if kind.is_dir() {
        return Err(refused("is a directory: name the files in it"));
    }
    if !kind.is_file() {
        return Err(refused(
            "is not a regular file (a FIFO, socket or device is never read)",
        ));
    }
    let (bytes, executable) = read_regular(path, &seen).map_err(|p| refused(&p))?;
    let mode = if executable {
        FileMode::Executable
    } else {
        FileMode::Regular
    };
    Ok(change(target, bytes, mode, exists))
}

/// The path's components joined by `/` (`.` dropped), or why it cannot be a repository path.
fn repository_path(path: &Path) -> Result<String, &'static str> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::Normal(part) => match part.to_str() {
                Some(part) => parts.push(part),
                None => return Err("has a name that is not UTF-8"),
            },
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err("give a relative path inside the repository, without `..`");
            }
        }
    }
    if parts.is_empty() {
        return Err("names no file");
    }
    Ok(parts.join("/"))
}

/// Every directory on the way to `path` is a directory, not a link to one.
fn parents_are_directories(path: &Path) -> Result<(), String> {
    let mut parents: Vec<&Path> = path
        .ancestors()
        .skip(1)
        .filter(|p| !p.as_os_str().is_empty() && *p != Path::new("."))
        .collect();
    parents.reverse();
    for parent in parents {
        let meta = std::fs::symlink_metadata(parent).map_err(|e| e.to_string())?;
        if meta.file_type().is_symlink() {
            return Err(format!(
                "{} is a symbolic link; directories are not followed through links",
                parent.display()
            ));
        }
        if !meta.is_dir() {
            return Err(format!("{} is not a directory", parent.display()));
        }
    }
    Ok(())
}

/// Opens without following a link and without waiting on a FIFO.
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options.open(path)
}

/// Whether the open handle is the file `lstat` saw.
#[cfg(unix)]
fn same_file(seen: &Metadata, opened: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    seen.dev() == opened.dev() && seen.ino() == opened.ino()
}

#[cfg(not(unix))]
fn same_file(_: &Metadata, _: &Metadata) -> bool {
    true
}

#[cfg(unix)]
fn is_executable(meta: &Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_: &Metadata) -> bool {
    false
}

/// A regular file's bytes, and whether it is executable; judged on the open handle.
fn read_regular(path: &Path, seen: &Metadata) -> Result<(Vec<u8>, bool), String> {
    let file = open_no_follow(path).map_err(|e| e.to_string())?;
    let opened = file.metadata().map_err(|e| e.to_string())?;
    if !opened.is_file() || !same_file(seen, &opened) {
        return Err("changed while being opened: not the regular file it was".into());
    }
    if opened.len() > MAX_FILE_BYTES {
        return Err(over_the_bound());
    }
    let bytes = read_bounded(&mut &file)?;
    Ok((bytes, is_executable(&opened)))
}

fn over_the_bound() -> String {
    format!(
        "is over {} MiB, the most a file may hold",
        MAX_FILE_BYTES / (1024 * 1024)
    )
}

/// At most [`MAX_FILE_BYTES`] from `input`; more is refused (it is never all read).
fn read_bounded(input: &mut dyn Read) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    input
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(over_the_bound());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_paths_join_components_and_refuse_what_cannot_be_one() {
        assert_eq!(
            repository_path(Path::new("./src/lib.rs")),
            Ok("src/lib.rs".to_owned())
        );
        assert!(repository_path(Path::new("../x")).is_err());
        assert!(repository_path(Path::new("/etc/passwd")).is_err());
        assert!(repository_path(Path::new(".")).is_err());
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt as _;
            let bad = Path::new(std::ffi::OsStr::from_bytes(b"bad\xffdir/f.txt"));
            assert_eq!(repository_path(bad), Err("has a name that is not UTF-8"));
        }
    }

    #[test]
    fn standard_input_is_read_up_to_the_bound_only() {
        let mut small: &[u8] = b"hello";
        let change = from_stdin("notes.txt".into(), &mut small, false).expect("read");
        assert_eq!(change.content, Some(FileContent::Text("hello".into())));
        let mut endless = std::io::repeat(0);
        assert!(matches!(
            from_stdin("zeros".into(), &mut endless, false),
            Err(CliError::Refused(m)) if m.contains("100 MiB")
        ));
        assert!(matches!(
            from_stdin("../x".into(), &mut &b""[..], false),
            Err(CliError::Refused(_))
        ));
    }
}
