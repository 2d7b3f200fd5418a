//! The GitHub App the setup page created, kept in the data directory so a
//! later `cascade serve --data-dir D` serves it: `github-app/` (mode 0700)
//! holding `private-key.pem`, `webhook-secret` and `app.json` (id, slug, page),
//! each mode 0600, written to a temporary file and renamed, `app.json` last, so
//! a crash leaves either the whole App or no App.
//!
//! Never logs, formats or puts in a message the key or the secret, and never
//! names the server's absolute paths in a message (only `github-app/...` in the
//! data directory).

use anyhow::{Context as _, bail};
use secrecy::{ExposeSecret, SecretSlice, SecretString};
use serde::{Deserialize, Serialize};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

const DIR: &str = "github-app";
const KEY_FILE: &str = "private-key.pem";
const SECRET_FILE: &str = "webhook-secret";
/// Written last: its presence means the other two are complete.
const APP_FILE: &str = "app.json";

/// A GitHub App's credentials as stored. `Debug` never shows a secret (`secrecy`).
#[derive(Debug)]
pub struct StoredApp {
    pub id: u64,
    pub slug: String,
    pub html_url: String,
    pub private_key: SecretSlice<u8>,
    pub webhook_secret: SecretString,
}

#[derive(Serialize, Deserialize)]
struct AppFile {
    id: u64,
    slug: String,
    html_url: String,
}

fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join(DIR)
}

/// Writes `bytes` to `dir/name` readable by this user only, replacing it whole.
fn write_private(dir: &Path, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
    let partial = dir.join(format!(".{name}.partial"));
    let _ = std::fs::remove_file(&partial);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)
        .with_context(|| format!("cannot write {DIR}/{name} in the data directory"))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {DIR}/{name} in the data directory"))?;
    std::fs::rename(&partial, dir.join(name))
        .with_context(|| format!("cannot write {DIR}/{name} in the data directory"))?;
    Ok(())
}

impl StoredApp {
    /// Stores the App in `data_dir`, replacing one stored before.
    pub fn save(&self, data_dir: &Path) -> anyhow::Result<()> {
        let dir = dir(data_dir);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("cannot create {DIR}/ in the data directory"))?;
        // An existing directory keeps its mode: make sure it is private too.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make {DIR}/ in the data directory private"))?;
        // The marker goes first out and last in.
        let _ = std::fs::remove_file(dir.join(APP_FILE));
        write_private(&dir, KEY_FILE, self.private_key.expose_secret())?;
        write_private(
            &dir,
            SECRET_FILE,
            self.webhook_secret.expose_secret().as_bytes(),
        )?;
        let app = AppFile {
            id: self.id,
            slug: self.slug.clone(),
            html_url: self.html_url.clone(),
        };
        write_private(&dir, APP_FILE, &serde_json::to_vec_pretty(&app)?)?;
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// The App stored in `data_dir`, or `None` when none was stored.
    pub fn load(data_dir: &Path) -> anyhow::Result<Option<StoredApp>> {
        let dir = dir(data_dir);
        let app = match std::fs::read(dir.join(APP_FILE)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(_) => bail!(
                "cannot read {DIR}/{APP_FILE} in the data directory: give cascade read access to it"
            ),
        };
        let broken = || {
            format!(
                "the GitHub App stored in the data directory ({DIR}/) is incomplete: remove {DIR}/ and open /setup again, or start with --github-app-id, --github-private-key-file and --github-webhook-secret-file"
            )
        };
        let app: AppFile = serde_json::from_slice(&app).with_context(broken)?;
        let private_key = std::fs::read(dir.join(KEY_FILE)).with_context(broken)?;
        let webhook_secret = std::fs::read_to_string(dir.join(SECRET_FILE))
            .with_context(broken)?
            .trim()
            .to_string();
        if webhook_secret.is_empty() || private_key.is_empty() {
            bail!(broken());
        }
        Ok(Some(StoredApp {
            id: app.id,
            slug: app.slug,
            html_url: app.html_url,
            private_key: private_key.into(),
            webhook_secret: webhook_secret.into(),
        }))
    }
}
