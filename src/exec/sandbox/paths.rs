//! The paths a ruleset's rules are made from: opened as `O_PATH` descriptors,
//! never through a link a pull request wrote, and never covering cascade's
//! own private directories.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Opens `path` as an `O_PATH` descriptor. `follow` follows a link in its last
/// part: only for paths cascade itself decides (system directories, its own
/// working files), which are made canonical first.
pub(super) fn open_path(path: &Path, follow: bool) -> std::io::Result<OwnedFd> {
    let name = CString::new(path.as_os_str().as_bytes())?;
    let mut flags = libc::O_PATH | libc::O_CLOEXEC;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    // SAFETY: a valid C string; the descriptor returned is owned here.
    let fd = unsafe { libc::open(name.as_ptr(), flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is not owned elsewhere.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether `fd` is a directory (`Some(true)`), a file a rule may name
/// (`Some(false)`: a regular file or a character device), or anything else.
pub(super) fn is_dir(fd: &OwnedFd) -> Option<bool> {
    // SAFETY: `stat` is plain old data, filled by the kernel.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a valid buffer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
        return None;
    }
    match stat.st_mode & libc::S_IFMT {
        libc::S_IFDIR => Some(true),
        libc::S_IFREG | libc::S_IFCHR => Some(false),
        _ => None,
    }
}

/// Opens `rel` beneath the directory `root` (both resolved by the kernel at
/// once, `openat2` with `RESOLVE_BENEATH`): a `..` or a link that leaves
/// `root` fails with `EXDEV`, so a pull request's path can name nothing
/// outside its tree, whatever links it wrote.
pub fn open_beneath(root: &Path, rel: &Path) -> std::io::Result<OwnedFd> {
    let root = open_path(root, true)?;
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let name = CString::new(rel.as_os_str().as_bytes())?;
    // SAFETY: `open_how` is plain old data.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: valid descriptor, C string and `open_how` of the size given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            name.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: just opened, owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The paths whose rules give everything beneath `dir` except the `private`
/// directories inside it: `dir` itself when none is inside; otherwise its
/// entries, one rule each, with the entry leading to a private directory
/// split the same way and the private directory left out. Links among the
/// entries are left out (a rule through one would cover its target); what
/// they point to inside `dir` is covered by its own entry.
pub(super) fn beneath_except(dir: &Path, private: &[PathBuf]) -> Vec<PathBuf> {
    let inside: Vec<&PathBuf> = private
        .iter()
        .filter(|p| p.starts_with(dir) && p.as_path() != dir)
        .collect();
    if inside.is_empty() {
        return vec![dir.to_path_buf()];
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() || inside.iter().any(|p| p.as_path() == path) {
            continue;
        }
        if kind.is_dir() && inside.iter().any(|p| p.starts_with(&path)) {
            out.extend(beneath_except(&path, private));
        } else {
            out.push(path);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_directory_inside_is_left_out_and_links_are_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        for dir in ["live/app", ".cascade/runs", "modules", "deep/er/.data"] {
            std::fs::create_dir_all(repo.join(dir)).unwrap();
        }
        std::fs::write(repo.join("root.hcl"), "").unwrap();
        std::fs::write(repo.join("deep/er/x.tf"), "").unwrap();
        std::os::unix::fs::symlink("/", repo.join("escape")).unwrap();
        let private = [repo.join(".cascade"), repo.join("deep/er/.data")];
        let mut got = beneath_except(&repo, &private);
        got.sort();
        let want: Vec<PathBuf> = ["deep/er/x.tf", "live", "modules", "root.hcl"]
            .iter()
            .map(|p| repo.join(p))
            .collect();
        assert_eq!(got, want);
        assert_eq!(
            beneath_except(&repo.join("live"), &private),
            [repo.join("live")]
        );
    }

    #[test]
    fn open_beneath_refuses_what_leaves_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(tmp.path().join("other")).unwrap();
        std::os::unix::fs::symlink("../../other", root.join("a/out")).unwrap();
        std::os::unix::fs::symlink("b", root.join("a/in")).unwrap();
        assert!(open_beneath(&root, Path::new("a/b")).is_ok());
        assert!(open_beneath(&root, Path::new("a/in")).is_ok());
        for escape in ["a/out", "../other", "a/../../other", "/etc"] {
            let err = open_beneath(&root, Path::new(escape)).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EXDEV), "{escape}: {err}");
        }
    }
}
