//! Whether GitHub can reach a URL the setup page was given: a loopback, private,
//! link-local or local-only address cannot be reached from github.com, so the
//! App's webhooks would never arrive. The answer is a warning, never a refusal:
//! people test through tunnels, and a GitHub Enterprise Server on the same
//! network reaches private addresses.
//!
//! Reads the host as the `url` crate parsed it and asks `std::net`'s address
//! methods; parses nothing itself.

use std::net::{Ipv4Addr, Ipv6Addr};
use url::{Host, Url};

/// Why github.com cannot reach a host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Unreachable {
    /// 127.0.0.0/8, ::1, `localhost`: this machine only.
    Loopback,
    /// 0.0.0.0, `::`: an address to listen on, not to connect to.
    Unspecified,
    /// 10/8, 172.16/12, 192.168/16, 100.64/10 (carrier-grade NAT), fc00::/7.
    Private,
    /// 169.254/16, fe80::/10.
    LinkLocal,
    /// A name only a local network resolves: one label (`cascade`), or `.local`,
    /// `.localhost`, `.internal`, `.lan`, `.home.arpa`.
    LocalName,
}

/// Why github.com cannot reach `url`'s host, or `None` when it may.
pub(super) fn unreachable(url: &Url) -> Option<Unreachable> {
    match url.host()? {
        Host::Ipv4(ip) => ipv4(ip),
        Host::Ipv6(ip) => match ip.to_ipv4_mapped() {
            Some(v4) => ipv4(v4),
            None => ipv6(ip),
        },
        Host::Domain(name) => domain(name),
    }
}

fn ipv4(ip: Ipv4Addr) -> Option<Unreachable> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some(Unreachable::Loopback)
    } else if ip.is_unspecified() {
        Some(Unreachable::Unspecified)
    // 100.64.0.0/10 (RFC 6598; Tailscale's addresses): `Ipv4Addr::is_shared` is unstable.
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        Some(Unreachable::Private)
    } else if ip.is_link_local() {
        Some(Unreachable::LinkLocal)
    } else {
        None
    }
}

fn ipv6(ip: Ipv6Addr) -> Option<Unreachable> {
    if ip.is_loopback() {
        Some(Unreachable::Loopback)
    } else if ip.is_unspecified() {
        Some(Unreachable::Unspecified)
    } else if ip.is_unique_local() {
        Some(Unreachable::Private)
    } else if ip.is_unicast_link_local() {
        Some(Unreachable::LinkLocal)
    } else {
        None
    }
}

/// Names no public DNS answers. `url` gives them lower-cased (punycode beyond ASCII), and
/// an http(s) host that reads as an IPv4 address as one.
fn domain(name: &str) -> Option<Unreachable> {
    let name = name.trim_end_matches('.');
    if name == "localhost" || name.ends_with(".localhost") {
        return Some(Unreachable::Loopback);
    }
    let local_suffix = [".local", ".internal", ".lan", ".home.arpa"]
        .iter()
        .any(|suffix| name.ends_with(suffix));
    (local_suffix || !name.contains('.')).then_some(Unreachable::LocalName)
}

/// The setup page's warning for `url`, or `None` when github.com may reach it.
pub(super) fn warning(url: &Url) -> Option<String> {
    let why = unreachable(url)?;
    let host = url.host_str().unwrap_or_default();
    let what = match why {
        Unreachable::Loopback => "is this machine's own (loopback) address",
        Unreachable::Unspecified => "is an address to listen on, not one to connect to",
        Unreachable::Private => "is a private network address",
        Unreachable::LinkLocal => "is a link-local address",
        Unreachable::LocalName => "is a name only a local network resolves",
    };
    Some(format!(
        "GitHub cannot reach {host}: it {what}. github.com sends the App's webhooks from the \
         internet, so they would never arrive here. Give the address the internet reaches this \
         server at (a public name, or a tunnel such as cloudflared or ngrok that forwards to it); \
         or go on if this is for a GitHub Enterprise Server on the same network, or if you will \
         change the webhook URL in the App's settings later."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(url: &str) -> Option<Unreachable> {
        unreachable(&Url::parse(url).unwrap())
    }

    #[test]
    fn addresses_github_cannot_reach_are_named() {
        use Unreachable::*;
        for (url, expected) in [
            ("http://127.0.0.1:8080", Loopback),
            ("http://127.1.2.3", Loopback),
            ("http://[::1]:8080", Loopback),
            ("http://localhost:8080", Loopback),
            ("http://LOCALHOST.", Loopback),
            ("http://cascade.localhost", Loopback),
            ("http://0.0.0.0:8080", Unspecified),
            ("http://[::]", Unspecified),
            ("http://10.1.2.3", Private),
            ("http://172.16.0.1", Private),
            ("http://172.31.255.255", Private),
            ("http://192.168.1.10:8080", Private),
            ("http://100.100.1.1", Private),
            ("http://[fd12:3456::1]", Private),
            ("http://[::ffff:10.0.0.1]", Private),
            ("http://169.254.1.1", LinkLocal),
            ("http://[fe80::1]", LinkLocal),
            ("http://cascade", LocalName),
            ("http://build.local", LocalName),
            ("http://ci.corp.internal", LocalName),
            ("http://box.home.arpa", LocalName),
        ] {
            assert_eq!(why(url), Some(expected), "{url}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for url in [
            "https://cascade.example.com",
            "https://abc123.ngrok-free.app",
            "http://8.8.8.8:8080",
            "http://172.32.0.1",
            "http://100.128.0.1",
            "http://[2001:db8::1]",
            "https://localhost.example.com",
            "https://local.example.com",
        ] {
            assert_eq!(why(url), None, "{url}");
        }
    }

    #[test]
    fn the_warning_names_the_host_and_what_to_do() {
        let text = warning(&Url::parse("http://10.0.0.5:8080/x").unwrap()).unwrap();
        assert!(text.starts_with("GitHub cannot reach 10.0.0.5: it is a private network address."));
        assert!(text.contains("tunnel"));
        assert_eq!(
            warning(&Url::parse("https://cascade.example.com").unwrap()),
            None
        );
    }
}
