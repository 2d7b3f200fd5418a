//! Keeping what cascade holds from the machine's other users.
//!
//! The data directory holds the database, the git mirrors and checkouts of
//! every repository, saved plan files (terraform's format: values in clear),
//! logs, the plugin cache and the GitHub App's key; a checkout's local
//! `terraform.tfstate` holds whatever the state holds. Created under the usual
//! umask (022) they are 0644 and 0755: readable by every local user.
//!
//! Owns: the umask and the dumpable flag of the commands that run terraform
//! ([`protect_process`]), and making a data directory created looser (by hand,
//! by an older cascade) private again ([`make_private`]: group and other bits
//! removed from everything under it).
//!
//! Never follows a symbolic link below the data directory: a checkout holds a
//! pull request's links, and a chmod through one would change a file anywhere
//! this user (or root) may. Never adds a permission bit, never reads a file,
//! and never names an entry below the data directory in a log.

use anyhow::Context;
use nix::dir::{Dir, Type};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{FchmodatFlags, Mode, SFlag, fchmod, fchmodat, fstat, fstatat};
use std::ffi::CString;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

/// The permission bits only the owner may have: group and other.
const SHARED_BITS: u32 = 0o077;

/// Makes what this process and its children create private, and its memory
/// unreadable to other users. Called first by `cascade serve`, `plan`, `apply`
/// and `drift`, the commands that run terraform: `graph`, `affected` and
/// `schema` write nothing and hold no secret.
///
/// - umask 0o077: every file and directory cascade, git and terraform create
///   is 0600 / 0700 (children inherit the umask), wherever it is written: the
///   data directory, a `sqlite://` database elsewhere, a checkout's state.
/// - not dumpable (`PR_SET_DUMPABLE` 0): `/proc/<pid>/environ`, `mem`,
///   `fd` and the rest belong to root, so another user's process cannot read
///   the secrets cascade holds (nor attach a debugger, nor get a core dump).
///   An exec resets it, so terraform and git run as they always do.
///
/// Both are process-wide, so they are set by the command line (which owns the
/// process), not by `server::start`, which tests and benches run in processes
/// of their own.
pub fn protect_process() -> anyhow::Result<()> {
    nix::sys::stat::umask(Mode::from_bits_truncate(SHARED_BITS));
    set_not_dumpable()
}

#[cfg(target_os = "linux")]
fn set_not_dumpable() -> anyhow::Result<()> {
    nix::sys::prctl::set_dumpable(false)
        .context("cannot make cascade's memory unreadable to other users (prctl PR_SET_DUMPABLE)")
}

/// Elsewhere there is no `/proc/<pid>/environ` to protect.
#[cfg(not(target_os = "linux"))]
fn set_not_dumpable() -> anyhow::Result<()> {
    Ok(())
}

/// Creates the data directory `dir` if it is missing (0700) and makes it and
/// everything under it private, logging how many entries were not.
pub fn make_private(dir: &Path) -> anyhow::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create the data directory {}", dir.display()))?;
    let done = tighten(dir).with_context(|| {
        format!(
            "cannot make the data directory {} private; check that cascade's user owns it",
            dir.display()
        )
    })?;
    if done.fixed > 0 {
        tracing::warn!(
            fixed = done.fixed,
            data_dir = %dir.display(),
            "{} files and directories in the data directory were readable by other local users: their group and other permissions are removed",
            done.fixed
        );
    }
    if let Some(error) = done.first_error {
        tracing::warn!(
            failed = done.failed,
            %error,
            data_dir = %dir.display(),
            "{} entries in the data directory could not be made private; give them to cascade's user (chown -R) or remove them",
            done.failed
        );
    }
    Ok(())
}

/// What [`tighten`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tightened {
    /// Entries whose group and other bits were removed.
    pub fixed: usize,
    /// Entries that could not be made private or listed.
    pub failed: usize,
    /// Why the first of them could not.
    pub first_error: Option<Errno>,
}

impl Tightened {
    fn note(&mut self, result: nix::Result<()>) {
        match result {
            Ok(()) => self.fixed += 1,
            // Gone since it was listed: nothing left to protect.
            Err(Errno::ENOENT) => {}
            Err(e) => self.fail(e),
        }
    }

    fn fail(&mut self, error: Errno) {
        self.failed += 1;
        self.first_error.get_or_insert(error);
    }
}

/// Removes group and other permission bits from `dir` and every directory and
/// file under it. `dir` itself may be a link (followed: the operator chose
/// it); below it, links are left alone and never followed. Every entry is
/// opened or changed relative to its parent's descriptor with
/// `AT_SYMLINK_NOFOLLOW`/`O_NOFOLLOW`, so a directory swapped for a link while
/// the walk runs (a terraform still running from before a restart) is not
/// entered. Entries that vanish meanwhile are skipped. Errors are counted,
/// not returned: only `dir` itself failing to open is an error.
///
/// One `fstatat` per entry and a `chmod` only where a bit must go: a data
/// directory of tens of thousands of files that is already private costs a
/// few tens of milliseconds.
pub fn tighten(dir: &Path) -> anyhow::Result<Tightened> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let root = Dir::open(dir, flags, Mode::empty()).map_err(std::io::Error::from)?;
    let mut done = Tightened::default();
    let mut stack = vec![Level::enter(root, &mut done).map_err(std::io::Error::from)?];
    while let Some(level) = stack.last_mut() {
        let Some((name, kind)) = level.entries.next() else {
            stack.pop();
            continue;
        };
        let is_dir = match kind {
            Some(Type::Symlink) => false,
            Some(Type::Directory) => true,
            // Files, FIFOs, sockets, and entries the file system does not type.
            _ => match fstatat(&level.dir, name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
                Err(Errno::ENOENT) => false,
                Err(e) => {
                    done.fail(e);
                    false
                }
                Ok(stat) => {
                    let format = SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits());
                    if format == SFlag::S_IFDIR {
                        true
                    } else {
                        if format != SFlag::S_IFLNK && stat.st_mode & SHARED_BITS != 0 {
                            done.note(fchmodat(
                                &level.dir,
                                name.as_c_str(),
                                private_mode(stat.st_mode),
                                FchmodatFlags::NoFollowSymlink,
                            ));
                        }
                        false
                    }
                }
            },
        };
        if !is_dir {
            continue;
        }
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        match Dir::openat(&level.dir, name.as_c_str(), flags, Mode::empty()) {
            Ok(child) => match Level::enter(child, &mut done) {
                Ok(child) => stack.push(child),
                Err(e) => done.fail(e),
            },
            // Gone, or a link now: nothing to walk into.
            Err(Errno::ENOENT | Errno::ELOOP) => {}
            Err(e) => done.fail(e),
        }
    }
    Ok(done)
}

/// `mode` without group and other bits (the owner's and setuid, setgid and sticky kept).
fn private_mode(mode: u32) -> Mode {
    Mode::from_bits_truncate(mode & 0o7700)
}

/// One open directory of the walk and the entries of it still to visit.
struct Level {
    dir: Dir,
    entries: std::vec::IntoIter<(CString, Option<Type>)>,
}

impl Level {
    /// `dir` made private, and its entries (but `.` and `..`) listed.
    fn enter(mut dir: Dir, done: &mut Tightened) -> nix::Result<Level> {
        let stat = fstat(&dir)?;
        if stat.st_mode & SHARED_BITS != 0 {
            done.note(fchmod(&dir, private_mode(stat.st_mode)));
        }
        let mut entries = Vec::new();
        for entry in dir.iter() {
            let entry = entry?;
            let name = entry.file_name();
            if name != c"." && name != c".." {
                entries.push((name.to_owned(), entry.file_type()));
            }
        }
        Ok(Level {
            dir,
            entries: entries.into_iter(),
        })
    }
}
