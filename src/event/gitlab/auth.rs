//! Who sent a GitLab delivery, and which one it is: the secret token compared
//! in constant time with every configured secret, the optional Standard-Webhooks
//! signature, and the delivery id the store dedupes on.

use super::{
    EVENT_HEADER, EVENT_UUID_HEADER, IDEMPOTENCY_HEADER, SIGNATURE_HEADER, SIGNATURE_ID_HEADER,
    SIGNATURE_TIMESTAMP_HEADER, TOKEN_HEADER, stored_event_name,
};
use crate::event::{DeliveryId, HeaderError};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretSlice};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// How far `webhook-timestamp` may be from the server's clock, either way.
pub const SIGNATURE_TOLERANCE_SECS: i64 = 5 * 60;

// ---------------------------------------------------------------- token

/// Why `X-Gitlab-Token` did not authenticate a delivery. No message contains
/// a secret or echoes the header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("no {TOKEN_HEADER} header: the GitLab webhook must have a secret token")]
    Missing,
    #[error("no GitLab webhook secret is configured, so no delivery can be authenticated")]
    NoSecret,
    #[error("{TOKEN_HEADER} matches no configured GitLab webhook secret")]
    Mismatch,
}

/// Checks `X-Gitlab-Token` (GitLab sends the secret itself) against every
/// configured secret (rotation), in constant time: both sides are hashed first,
/// so neither the length nor the first differing byte shows in the time taken,
/// and every secret is tried. Empty secrets are skipped; an empty token matches
/// nothing. Secrets given for one project each: [`super::WebhookSecrets::verify`].
pub fn verify_token(secrets: &[SecretSlice<u8>], header: Option<&str>) -> Result<(), TokenError> {
    let secrets = super::WebhookSecrets {
        any_project: secrets.to_vec(),
        per_project: Vec::new(),
    };
    secrets.verify(header).map(drop)
}

// ---------------------------------------------------------------- signature

/// A GitLab webhook signing token (`whsec_<base64 of the key>`), decoded.
/// `Debug` never shows the key (`secrecy`).
#[derive(Clone, Debug)]
pub struct SigningKey(SecretSlice<u8>);

/// A signing token that is not `whsec_` and base64.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a GitLab signing token is `whsec_` followed by base64 (copy it whole from the webhook's settings)"
)]
pub struct InvalidSigningToken;

impl SigningKey {
    pub fn parse(token: &str) -> Result<SigningKey, InvalidSigningToken> {
        let key = token
            .trim()
            .strip_prefix("whsec_")
            .and_then(|b64| STANDARD.decode(b64).ok())
            .filter(|key| !key.is_empty())
            .ok_or(InvalidSigningToken)?;
        Ok(SigningKey(key.into()))
    }

    /// `v1,<base64 HMAC-SHA256("{id}.{timestamp}.{body}")>`: what GitLab sends.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        format!("v1,{}", STANDARD.encode(self.mac(id, timestamp, body)))
    }

    fn mac(&self, id: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(self.0.expose_secret()).expect("HMAC takes any key");
        mac.update(format!("{id}.{timestamp}.").as_bytes());
        mac.update(body);
        mac.finalize().into_bytes().to_vec()
    }
}

/// Why a Standard-Webhooks signature did not verify. No message echoes a header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SigningError {
    #[error("no {0} header: a signing token is configured, so the GitLab webhook must have it too")]
    Missing(&'static str),
    #[error("{0} is malformed")]
    Malformed(&'static str),
    #[error(
        "{SIGNATURE_TIMESTAMP_HEADER} is more than {SIGNATURE_TOLERANCE_SECS} s from this server's clock (a replay, or a clock to fix)"
    )]
    Stale,
    #[error("{SIGNATURE_HEADER} does not match the body under the configured signing token")]
    Mismatch,
}

/// Checks the Standard-Webhooks headers GitLab adds when the hook has a signing
/// token: `webhook-timestamp` (Unix seconds) within [`SIGNATURE_TOLERANCE_SECS`]
/// of `now`, and a `v1,` entry of `webhook-signature` (space-separated; other
/// versions are skipped) equal to the HMAC of `{webhook-id}.{timestamp}.{body}`.
pub fn verify_signing<'a>(
    key: &SigningKey,
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    body: &[u8],
    now: i64,
) -> Result<(), SigningError> {
    let names = [
        SIGNATURE_ID_HEADER,
        SIGNATURE_TIMESTAMP_HEADER,
        SIGNATURE_HEADER,
    ];
    let mut values = [None; 3];
    for (name, value) in headers {
        if let Some(i) = names.iter().position(|n| name.eq_ignore_ascii_case(n)) {
            values[i].get_or_insert(value);
        }
    }
    let [id, timestamp, signatures] =
        [0, 1, 2].map(|i| values[i].ok_or(SigningError::Missing(names[i])));
    let (id, timestamp, signatures) = (id?, timestamp?, signatures?);
    if id.is_empty() || id.len() > 256 {
        return Err(SigningError::Malformed(SIGNATURE_ID_HEADER));
    }
    let timestamp: i64 = timestamp
        .parse()
        .map_err(|_| SigningError::Malformed(SIGNATURE_TIMESTAMP_HEADER))?;
    if now.abs_diff(timestamp) > SIGNATURE_TOLERANCE_SECS.unsigned_abs() {
        return Err(SigningError::Stale);
    }
    let expected = key.mac(id, timestamp, body);
    let mut matched = subtle::Choice::from(0);
    let mut any = false;
    for entry in signatures.split(' ').filter(|e| !e.is_empty()) {
        let Some(b64) = entry.strip_prefix("v1,") else {
            continue;
        };
        let Ok(given) = STANDARD.decode(b64) else {
            continue;
        };
        any = true;
        matched |= given.ct_eq(&expected);
    }
    if !any {
        return Err(SigningError::Malformed(SIGNATURE_HEADER));
    }
    if bool::from(matched) {
        Ok(())
    } else {
        Err(SigningError::Mismatch)
    }
}

// ---------------------------------------------------------------- headers

/// A GitLab delivery's identity and kind, from its headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitLabDelivery {
    /// `gitlab-<Idempotency-Key>`, else `gitlab-<X-Gitlab-Event-UUID>`; a key
    /// that does not fit [`DeliveryId`] is hashed (`gitlab-<56 hex digits>`).
    pub id: DeliveryId,
    /// `X-Gitlab-Event`: `Merge Request Hook`, `Note Hook`, …
    pub hook: String,
}

impl GitLabDelivery {
    /// Reads `X-Gitlab-Event` and the dedupe key from `(name, value)` pairs,
    /// matching names case-insensitively.
    pub fn from_headers<'a>(
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<GitLabDelivery, HeaderError> {
        let mut hook = None;
        let mut idempotency = None;
        let mut uuid = None;
        for (name, value) in headers {
            let slot = if name.eq_ignore_ascii_case(EVENT_HEADER) {
                (&mut hook, EVENT_HEADER)
            } else if name.eq_ignore_ascii_case(IDEMPOTENCY_HEADER) {
                (&mut idempotency, IDEMPOTENCY_HEADER)
            } else if name.eq_ignore_ascii_case(EVENT_UUID_HEADER) {
                (&mut uuid, EVENT_UUID_HEADER)
            } else {
                continue;
            };
            if slot.0.replace(value).is_some() {
                return Err(HeaderError::Repeated(slot.1));
            }
        }
        let hook = hook.ok_or(HeaderError::Missing(EVENT_HEADER))?;
        let hook_ok = !hook.is_empty()
            && hook.len() <= 64
            && hook.bytes().all(|b| b.is_ascii_alphabetic() || b == b' ');
        if !hook_ok {
            return Err(HeaderError::Invalid {
                header: EVENT_HEADER,
                expected: "a GitLab event name (letters and spaces, like `Merge Request Hook`)",
            });
        }
        let key = [idempotency, uuid]
            .into_iter()
            .flatten()
            .map(str::trim)
            .find(|key| !key.is_empty())
            .ok_or(HeaderError::Missing(IDEMPOTENCY_HEADER))?;
        let id = DeliveryId::new(&format!("gitlab-{key}")).unwrap_or_else(|| {
            let digest = hex::encode(Sha256::digest(key.as_bytes()));
            DeliveryId::new(&format!("gitlab-{}", &digest[..56])).expect("hex fits the id rule")
        });
        Ok(GitLabDelivery {
            id,
            hook: hook.to_owned(),
        })
    }

    /// The event name the delivery is stored under: `gitlab:<X-Gitlab-Event>`.
    pub fn stored_event(&self) -> String {
        stored_event_name(&self.hook)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_matches_any_configured_secret_and_nothing_else() {
        let secrets: Vec<SecretSlice<u8>> = [&b""[..], b"old", b"new"]
            .map(|s| s.to_vec().into())
            .to_vec();
        assert_eq!(verify_token(&secrets, Some("old")), Ok(()));
        assert_eq!(verify_token(&secrets, Some("new")), Ok(()));
        assert_eq!(
            verify_token(&secrets, Some("ne")),
            Err(TokenError::Mismatch)
        );
        assert_eq!(verify_token(&secrets, Some("")), Err(TokenError::Mismatch));
        assert_eq!(verify_token(&secrets, None), Err(TokenError::Missing));
        assert_eq!(
            verify_token(&[Vec::new().into()], Some("")),
            Err(TokenError::NoSecret)
        );
    }

    #[test]
    fn a_key_that_does_not_fit_the_id_rule_is_hashed() {
        let long = "k".repeat(80);
        for key in [long.as_str(), "a/b", "ключ"] {
            let d = GitLabDelivery::from_headers([
                ("X-Gitlab-Event", "Note Hook"),
                ("Idempotency-Key", key),
            ])
            .unwrap();
            assert_eq!(d.id.as_str().len(), 63, "{key}");
            assert!(d.id.as_str().starts_with("gitlab-"));
        }
        let uuid = "13792a34-cac6-4fda-95a8-c58e00a3954e";
        let d = GitLabDelivery::from_headers([
            ("x-gitlab-event", "Note Hook"),
            ("x-gitlab-event-uuid", uuid),
        ])
        .unwrap();
        assert_eq!(d.id.as_str(), format!("gitlab-{uuid}"));
        assert_eq!(d.stored_event(), "gitlab:Note Hook");
    }
}
