//! A unit's name as a file name: the plan file, log and private working directory the
//! engine and the executor keep for it. It never touches the filesystem.

use super::UnitPath;

/// How many bytes of a unit's readable name a file name keeps.
const READABLE_NAME_BYTES: usize = 100;

impl UnitPath {
    /// A unit's name as a file name, for its plan file, log and private working
    /// directory: a readable part (`/` becomes `--`, anything but ASCII letters,
    /// digits, `.`, `_` and `-` becomes `_`, cut at 100 bytes; the root is `root`)
    /// and 16 hex digits of the SHA-256 of the whole path, so `a/b` and `a--b` (or
    /// two long paths with one prefix) never share a file. At most 117 bytes.
    pub fn file_stem(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut readable = String::new();
        if self.as_str() == "." {
            readable.push_str("root");
        } else {
            for c in self.as_str().chars() {
                if readable.len() >= READABLE_NAME_BYTES {
                    break;
                }
                match c {
                    '/' => readable.push_str("--"),
                    c if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') => {
                        readable.push(c)
                    }
                    _ => readable.push('_'),
                }
            }
        }
        readable.truncate(READABLE_NAME_BYTES);
        // A leading dot would hide the file.
        if readable.starts_with('.') {
            readable.replace_range(0..1, "_");
        }
        let digest = hex::encode(Sha256::digest(self.as_str().as_bytes()));
        format!("{readable}-{}", &digest[..16])
    }
}
