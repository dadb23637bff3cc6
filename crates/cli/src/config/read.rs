//! The one reader of the files settings name — `headroom.toml`, the token file, the CA bundle:
//! regular files only, and bounded. `--config /dev/zero` must not run out of memory, nor a
//! FIFO block the process forever; either refuses to start (exit 2), naming the file.
//!
//! Symlinks are followed: a token file is often a symlink into a secrets mount (Kubernetes
//! mounts each secret as a symlink chain), and what matters is that the file it ends at is a
//! regular file of bounded size.

use std::io::Read as _;
use std::path::Path;

use super::{ConfigError, invalid};

/// The most `headroom.toml` may hold.
pub(super) const CONFIG_MAX_BYTES: u64 = 1 << 20;
/// The most a token file may hold.
pub(super) const TOKEN_MAX_BYTES: u64 = 1 << 20;
/// The most a CA bundle may hold (a system bundle is about 200 KiB).
pub(super) const CA_BUNDLE_MAX_BYTES: u64 = 10 << 20;

/// Reads `path` for `setting`: a regular file (after symlinks) of at most `max` bytes.
pub(super) fn read_bounded(setting: &str, path: &Path, max: u64) -> Result<Vec<u8>, ConfigError> {
    let shown = path.display();
    let refuse = |problem: String| invalid(setting, format!("{shown}: {problem}"));
    // Looked at before opening: opening a FIFO for reading blocks until a writer comes.
    let before = std::fs::metadata(path).map_err(|e| refuse(format!("cannot read it: {e}")))?;
    if !before.is_file() {
        return Err(refuse(format!(
            "not a regular file ({}); only a regular file is read",
            kind(&before)
        )));
    }
    let file = open_without_blocking(path).map_err(|e| refuse(format!("cannot read it: {e}")))?;
    // And the handle itself: the path may have been replaced since.
    let opened = file
        .metadata()
        .map_err(|e| refuse(format!("cannot read it: {e}")))?;
    if !opened.is_file() || !same_file(&before, &opened) {
        return Err(refuse("it changed while being opened".to_owned()));
    }
    if opened.len() > max {
        return Err(refuse(format!(
            "{} bytes; at most {max} are read",
            opened.len()
        )));
    }
    let mut bytes = Vec::new();
    // One byte past the bound tells a file that grew since from one that fits.
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(format!("cannot read it: {e}")))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max {
        return Err(refuse(format!(
            "more than {max} bytes; at most {max} are read"
        )));
    }
    Ok(bytes)
}

/// Opens for reading without waiting for a writer: a path swapped for a FIFO after the look
/// above opens at once (and is then refused as not the file that was looked at).
#[cfg(unix)]
fn open_without_blocking(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_without_blocking(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

fn kind(metadata: &std::fs::Metadata) -> &'static str {
    let t = metadata.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The open itself never waits for a FIFO's writer, so a path swapped for one between the
    /// look and the open cannot hang the process.
    #[test]
    fn opening_a_fifo_never_waits_for_a_writer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(open_without_blocking(&fifo).map(|_| ()).is_ok());
        });
        let opened = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the open returned instead of waiting for a writer");
        assert!(opened);
    }

    #[test]
    fn only_regular_files_within_the_bound_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("token");
        std::fs::write(&path, "ghp_x\n").expect("write");
        assert_eq!(
            read_bounded("--token-file", &path, 16).expect("read"),
            b"ghp_x\n"
        );
        let e = read_bounded("--token-file", &path, 4).expect_err("too big");
        assert!(e.problem.contains("at most 4"), "{e}");
        // A symlink to a regular file is read (a secrets mount); its target decides.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).expect("symlink");
        assert!(read_bounded("--token-file", &link, 16).is_ok());
        for (path, what) in [
            (dir.path().to_path_buf(), "a directory"),
            (std::path::PathBuf::from("/dev/zero"), "a device"),
        ] {
            let e = read_bounded("--config", &path, 16).expect_err("refused");
            assert_eq!(e.setting, "--config");
            assert!(e.problem.contains(what), "{e}");
        }
    }
}
