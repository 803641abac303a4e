//! A build's way out (spec: "build-time RUN steps can reach the public
//! internet"): its namespace's listener is an HTTP proxy that connects only to
//! public addresses ([`public_address::is_public`]) other than this host's own,
//! and the blocks the operator adds (`SANDBOX_BUILD_EGRESS_ALLOW`: an internal
//! package mirror, or the gateway a host's resolver answers with for public
//! names). The build reaches nothing
//! else: not this host (its database, this service, other tenants' run doors),
//! not the private network behind it, not a cloud metadata service. buildah and
//! the steps find the proxy through `HTTP_PROXY` / `HTTPS_PROXY` (see
//! [`proxy_env`]); a tool that ignores them finds no route at all.
//!
//! The proxy resolves names itself and connects to the address it checked, so a
//! name that resolves differently a second time cannot lead it elsewhere. It
//! takes `CONNECT host:port` (a tunnel, for HTTPS and anything else over TCP) and
//! plain HTTP requests in absolute form, each connection for one request.

use super::{IsolatedNetwork, REFUSED, read_head};
use domain::public_address;
use ipnet::IpNet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// How long the proxy tries to reach a destination.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// The answer to a destination that cannot be resolved or reached.
const UNREACHABLE: &[u8] =
    b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/// Which destination addresses a proxy connects to: public ones and `extra`.
#[derive(Debug, Clone, Default)]
pub struct Destinations {
    /// Blocks allowed besides the public internet.
    pub extra: Arc<[IpNet]>,
}

impl Destinations {
    /// Whether the proxy may connect to `ip`: a public address that is not one of
    /// this host's own (a public address of the host reaches every service bound
    /// to all its addresses, this one and its database included), or one in the
    /// operator's blocks. When the host's addresses cannot be read, only the
    /// operator's blocks.
    pub fn allow(&self, ip: IpAddr) -> bool {
        self.allow_beside(ip, own_addresses().as_deref())
    }

    /// [`Self::allow`] with the host's addresses given (`None`: unknown).
    fn allow_beside(&self, ip: IpAddr, own: Option<&[IpAddr]>) -> bool {
        let public = public_address::is_public(ip) && own.is_some_and(|own| !own.contains(&ip));
        public || self.extra.iter().any(|block| block.contains(&ip))
    }
}

/// The addresses of this host's interfaces now (they can change while it runs).
fn own_addresses() -> Option<Vec<IpAddr>> {
    match nix::ifaddrs::getifaddrs() {
        Ok(interfaces) => Some(
            interfaces
                .filter_map(|interface| interface.address)
                .filter_map(|address| {
                    address
                        .as_sockaddr_in()
                        .map(|v4| IpAddr::V4(v4.ip()))
                        .or_else(|| address.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip())))
                })
                .collect(),
        ),
        Err(error) => {
            tracing::warn!(%error, "this host's addresses cannot be read");
            None
        }
    }
}

impl IsolatedNetwork {
    /// Serves the listener as a proxy to `destinations` until `stop` fires.
    pub fn open_egress(&mut self, destinations: Destinations, stop: CancellationToken) {
        self.serve(stop, move |stream| proxy(stream, destinations.clone()));
    }
}

/// The variables that send buildah and the build's steps through the proxy on
/// `port`.
pub fn proxy_env(port: u16) -> Vec<(&'static str, String)> {
    let url = format!("http://127.0.0.1:{port}");
    ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"]
        .into_iter()
        .map(|name| (name, url.clone()))
        .collect()
}

/// Serves one proxy request from `inside`.
pub async fn proxy(mut inside: TcpStream, destinations: Destinations) {
    let Some((head, rest)) = read_head(&mut inside).await else {
        return;
    };
    let Some(request) = Request::parse(&head) else {
        let _ = inside.write_all(REFUSED).await;
        return;
    };
    let mut outside = match connect(&request.host, request.port, &destinations).await {
        Ok(outside) => outside,
        Err(Refusal::NotPublic) => {
            let _ = inside.write_all(REFUSED).await;
            return;
        }
        Err(Refusal::Unreachable) => {
            let _ = inside.write_all(UNREACHABLE).await;
            return;
        }
    };
    let opened = match &request.forwarded {
        None => {
            inside
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
        }
        Some(forwarded) => outside.write_all(forwarded.as_bytes()).await,
    };
    if opened.is_err() || outside.write_all(&rest).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut inside, &mut outside).await;
}

/// Why a destination was not connected.
enum Refusal {
    /// It names no public address.
    NotPublic,
    /// It cannot be resolved or reached.
    Unreachable,
}

/// Resolves `host` and connects to its first allowed address that answers.
async fn connect(host: &str, port: u16, destinations: &Destinations) -> Result<TcpStream, Refusal> {
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|_| Refusal::Unreachable)?
        .collect();
    let addresses: Vec<SocketAddr> = resolved
        .iter()
        .copied()
        .filter(|address| destinations.allow(address.ip()))
        .collect();
    if addresses.is_empty() {
        return Err(if resolved.is_empty() {
            Refusal::Unreachable
        } else {
            Refusal::NotPublic
        });
    }
    for address in addresses {
        if let Ok(Ok(stream)) =
            tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await
        {
            return Ok(stream);
        }
    }
    Err(Refusal::Unreachable)
}

/// A request the proxy takes.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    host: String,
    port: u16,
    /// The head to send on (plain HTTP), or `None` for a tunnel (`CONNECT`).
    forwarded: Option<String>,
}

impl Request {
    /// `CONNECT host:port`, or a plain HTTP request in absolute form (`GET
    /// http://host[:port]/path HTTP/1.1`), whose head goes on in origin form with
    /// its proxy headers dropped and `connection: close`.
    fn parse(head: &str) -> Option<Self> {
        let mut lines = head.split("\r\n");
        let mut parts = lines.next()?.split(' ');
        let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || !version.starts_with("HTTP/1.") {
            return None;
        }
        if method.eq_ignore_ascii_case("CONNECT") {
            let (host, port) = split_authority(target, None)?;
            return Some(Self {
                host,
                port,
                forwarded: None,
            });
        }
        let rest = target
            .get(..7)
            .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
            .map(|_| &target[7..])?;
        let (authority, path) = match rest.find(['/', '?']) {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        let (host, port) = split_authority(authority, Some(80))?;
        let mut forwarded = format!("{method} {path} {version}\r\n");
        for line in lines {
            let name = line.split(':').next().unwrap_or("").trim();
            if !(name.eq_ignore_ascii_case("connection")
                || name.eq_ignore_ascii_case("proxy-connection")
                || name.eq_ignore_ascii_case("proxy-authorization"))
            {
                forwarded.push_str(line);
                forwarded.push_str("\r\n");
            }
        }
        forwarded.push_str("connection: close\r\n\r\n");
        Some(Self {
            host,
            port,
            forwarded: Some(forwarded),
        })
    }
}

/// `[user@]host[:port]` (an IPv6 host in brackets) as host and port; without a
/// port, `default` (none for `CONNECT`).
fn split_authority(authority: &str, default: Option<u16>) -> Option<(String, u16)> {
    let authority = authority.rsplit('@').next()?;
    let (host, port) = match authority.strip_prefix('[') {
        Some(bracketed) => {
            let (host, after) = bracketed.split_once(']')?;
            (host, after.strip_prefix(':'))
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let port = match port {
        Some(port) => port.parse().ok()?,
        None => default?,
    };
    (!host.is_empty()).then(|| (host.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::{Destinations, Request, proxy};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    #[test]
    fn connect_and_absolute_form_requests_are_taken_and_nothing_else() {
        assert_eq!(
            Request::parse("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443"),
            Some(Request {
                host: "pypi.org".into(),
                port: 443,
                forwarded: None
            })
        );
        assert_eq!(
            Request::parse("CONNECT [2a04:4e42::644]:443 HTTP/1.1").map(|r| (r.host, r.port)),
            Some(("2a04:4e42::644".into(), 443))
        );
        let plain = Request::parse(
            "GET http://deb.debian.org/debian/dists/x?y=1 HTTP/1.1\r\nHost: deb.debian.org\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive",
        )
        .unwrap();
        assert_eq!((plain.host.as_str(), plain.port), ("deb.debian.org", 80));
        assert_eq!(
            plain.forwarded.unwrap(),
            "GET /debian/dists/x?y=1 HTTP/1.1\r\nHost: deb.debian.org\r\nconnection: close\r\n\r\n"
        );
        assert_eq!(
            Request::parse("GET http://u:p@example.com:8080?q HTTP/1.0").map(|r| (
                r.host,
                r.port,
                r.forwarded.unwrap()
            )),
            Some((
                "example.com".into(),
                8080,
                "GET /?q HTTP/1.0\r\nconnection: close\r\n\r\n".into()
            ))
        );
        for refused in [
            "GET /relative HTTP/1.1",
            "GET https://example.com/ HTTP/1.1",
            "CONNECT example.com HTTP/1.1",
            "CONNECT :443 HTTP/1.1",
            "GET http://example.com/ HTTP/2",
            "GET http://example.com/ a HTTP/1.1",
        ] {
            assert_eq!(Request::parse(refused), None, "{refused}");
        }
    }

    /// A server on this host that answers one request with `hello`.
    async fn server() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut buffer = [0u8; 1024];
                let _ = stream.read(&mut buffer).await;
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello")
                    .await;
            }
        });
        port
    }

    /// One request through a proxy that lets `allowed` through.
    async fn through_proxy(request: String, allowed: Destinations) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            proxy(stream, allowed).await;
        });
        let mut client = TcpStream::connect(address).await.unwrap();
        client.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            client.read_to_end(&mut answer),
        )
        .await;
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[test]
    fn the_host_s_own_public_addresses_are_refused_unless_the_operator_allows_them() {
        let own: std::net::IpAddr = "203.0.114.7".parse().unwrap();
        let other: std::net::IpAddr = "8.8.8.8".parse().unwrap();
        let none = Destinations::default();
        assert!(none.allow_beside(other, Some(&[own])));
        assert!(!none.allow_beside(own, Some(&[own])));
        assert!(!none.allow_beside(other, None), "unknown own addresses");
        let operator = Destinations {
            extra: ["203.0.114.0/24".parse().unwrap()].into(),
        };
        assert!(operator.allow_beside(own, Some(&[own])));
        assert!(
            super::own_addresses()
                .unwrap()
                .contains(&"127.0.0.1".parse().unwrap())
        );
    }

    #[tokio::test]
    async fn the_proxy_relays_to_allowed_addresses_and_refuses_the_rest() {
        let port = server().await;
        let plain = format!("GET http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: h\r\n\r\n");
        let tunnel = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nGET /x HTTP/1.1\r\n\r\n");
        let loopback = Destinations {
            extra: ["127.0.0.0/8".parse().unwrap()].into(),
        };
        let answer = through_proxy(plain.clone(), loopback.clone()).await;
        assert!(
            answer.starts_with("HTTP/1.1 200 OK") && answer.ends_with("hello"),
            "{answer}"
        );
        let answer = through_proxy(tunnel.clone(), loopback).await;
        assert!(
            answer.starts_with("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK")
                && answer.ends_with("hello"),
            "{answer}"
        );
        for request in [
            plain,
            tunnel,
            "GET http://localhost:1/ HTTP/1.1\r\n\r\n".into(),
        ] {
            let answer = through_proxy(request.clone(), Destinations::default()).await;
            assert!(answer.starts_with("HTTP/1.1 403"), "{request}: {answer}");
        }
        let answer = through_proxy(
            "CONNECT no-such-host.invalid:443 HTTP/1.1\r\n\r\n".into(),
            Destinations::default(),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
    }
}
