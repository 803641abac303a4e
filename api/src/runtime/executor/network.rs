//! A run's network (spec: no outbound network at runtime): a namespace of its own
//! with only loopback up. A run with a writeback output policy also gets one door
//! in it: a listener on 127.0.0.1 whose requests are relayed to this service's
//! callback routes (below [`CALLBACK_PREFIX`], whose own credentials decide the
//! rest), and to no other route or address.
//!
//! The namespace is made on a short-lived thread of its own (`unshare` moves only
//! the calling thread), which brings loopback up and binds the door before it ends;
//! the open namespace file keeps the namespace alive, and `nsenter` puts the run's
//! process tree in it.

use domain::tables::callback_token::CALLBACK_PREFIX;
use nix::sched::{CloneFlags, unshare};
use std::fs::File;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Most bytes of a request head through a door.
const MAX_HEAD: usize = 16 * 1024;
/// How long a door waits for a request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// The answer to a request a door does not let through.
const REFUSED: &[u8] = b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/// A run's network namespace and, when asked for, its door's listener.
pub(super) struct RunNetwork {
    namespace: File,
    door: Option<std::net::TcpListener>,
}

impl RunNetwork {
    /// Makes the namespace, with a door when `door` is set.
    pub(super) async fn create(door: bool) -> anyhow::Result<Self> {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("run-network".into())
            .spawn(move || {
                let _ = sender.send(Self::create_on_this_thread(door));
            })?;
        receiver.await?
    }

    /// Moves this (throwaway) thread into a new network namespace and sets it up.
    fn create_on_this_thread(door: bool) -> anyhow::Result<Self> {
        unshare(CloneFlags::CLONE_NEWNET)?;
        loopback_up()?;
        let namespace = File::open("/proc/thread-self/ns/net")?;
        let door = if door {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
            listener.set_nonblocking(true)?;
            Some(listener)
        } else {
            None
        };
        Ok(Self { namespace, door })
    }

    /// The `nsenter` argument that enters the namespace (through this process's
    /// open file of it).
    pub(super) fn nsenter_arg(&self) -> String {
        format!(
            "--net=/proc/{}/fd/{}",
            std::process::id(),
            self.namespace.as_raw_fd()
        )
    }

    /// The door's port inside the namespace.
    pub(super) fn door_port(&self) -> Option<u16> {
        self.door
            .as_ref()
            .and_then(|listener| listener.local_addr().ok())
            .map(|addr| addr.port())
    }

    /// Serves the door until `stop` fires, relaying each allowed request to
    /// `service` (this service's own listener). Connections still open then are cut.
    pub(super) fn open_door(&mut self, service: SocketAddr, stop: CancellationToken) {
        let Some(listener) = self.door.take() else {
            return;
        };
        tokio::spawn(async move {
            let listener = match TcpListener::from_std(listener) {
                Ok(listener) => listener,
                Err(error) => {
                    tracing::warn!(%error, "a run's door could not be opened");
                    return;
                }
            };
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    accepted = listener.accept() => {
                        if let Ok((stream, _)) = accepted {
                            connections.spawn(relay(stream, service));
                        }
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
    }
}

/// `ip link set lo up` in the calling thread's namespace (a child inherits it), with
/// `ip` found on the `PATH` or in the sbin directories a service's `PATH` may lack.
fn loopback_up() -> anyhow::Result<()> {
    let mut last = None;
    for program in ["ip", "/usr/sbin/ip", "/sbin/ip"] {
        match std::process::Command::new(program)
            .args(["link", "set", "lo", "up"])
            .status()
        {
            Ok(status) if status.success() => return Ok(()),
            Ok(status) => anyhow::bail!("`ip link set lo up` failed: {status}"),
            Err(error) => last = Some(error),
        }
    }
    Err(anyhow::anyhow!(
        "`ip` (iproute2) could not be started: {last:?}"
    ))
}

/// Relays one request: its head is checked ([`forwarded_head`]) and forwarded
/// with `connection: close`, so the service answers it alone and a pipelined
/// second request never reaches it.
async fn relay(mut inside: TcpStream, service: SocketAddr) {
    let Ok(Ok(Some((head, rest)))) =
        tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut inside)).await
    else {
        return;
    };
    let Some(forwarded) = forwarded_head(&head) else {
        let _ = inside.write_all(REFUSED).await;
        return;
    };
    let Ok(mut outside) = TcpStream::connect(service).await else {
        return;
    };
    if outside.write_all(forwarded.as_bytes()).await.is_err()
        || outside.write_all(&rest).await.is_err()
    {
        return;
    }
    // The client's end of input is not passed on (the service would drop a
    // half-closed connection before answering); the relay ends when the service,
    // told `connection: close`, has answered and closed.
    let (mut inside_read, mut inside_write) = inside.split();
    let (mut outside_read, mut outside_write) = outside.split();
    let upload = async {
        let _ = tokio::io::copy(&mut inside_read, &mut outside_write).await;
        std::future::pending::<()>().await
    };
    let download = async {
        let _ = tokio::io::copy(&mut outside_read, &mut inside_write).await;
        let _ = inside_write.shutdown().await;
    };
    tokio::select! {
        () = upload => {}
        () = download => {}
    }
}

/// Reads up to the end of the request head: (head without its blank line, the bytes
/// read after it). `None` when the stream ends first or the head is too long.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buffer.split_off(end + 4);
            buffer.truncate(end);
            return Ok(String::from_utf8(buffer).ok().map(|head| (head, rest)));
        }
        if buffer.len() > MAX_HEAD {
            return Ok(None);
        }
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
}

/// The head to send on, or `None` when the request may not pass: only `GET` and
/// `POST` of a path below [`CALLBACK_PREFIX`] made of letters, digits, `-` and `/`.
/// Any `connection` header is replaced by `connection: close`.
fn forwarded_head(head: &str) -> Option<String> {
    let mut lines = head.split("\r\n");
    let request_line = lines.next()?;
    let mut parts = request_line.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    let tail = target.strip_prefix(CALLBACK_PREFIX)?.strip_prefix('/')?;
    let plain = tail
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '/');
    if !matches!(method, "GET" | "POST") || !plain || !version.starts_with("HTTP/1.") {
        return None;
    }
    let mut forwarded = format!("{request_line}\r\n");
    for line in lines {
        let name = line.split(':').next().unwrap_or("").trim();
        if !name.eq_ignore_ascii_case("connection") {
            forwarded.push_str(line);
            forwarded.push_str("\r\n");
        }
    }
    forwarded.push_str("connection: close\r\n\r\n");
    Some(forwarded)
}

#[cfg(test)]
mod tests {
    use super::forwarded_head;

    #[test]
    fn a_door_passes_only_callback_requests_and_closes_after_one() {
        let head = "POST /public/module/custom_tables/callback/4f1c-aa HTTP/1.1\r\nHost: x\r\nConnection: keep-alive";
        assert_eq!(
            forwarded_head(head).unwrap(),
            "POST /public/module/custom_tables/callback/4f1c-aa HTTP/1.1\r\nHost: x\r\nconnection: close\r\n\r\n"
        );
        for refused in [
            "POST /private/sandbox/secrets HTTP/1.1",
            "POST /public/module/custom_tables/callback/../../private/x HTTP/1.1",
            "POST /public/module/custom_tables/callback/a%2F..%2F HTTP/1.1",
            "POST http://evil/public/module/custom_tables/callback/a HTTP/1.1",
            "DELETE /public/module/custom_tables/callback/a HTTP/1.1",
            "GET /public/module/custom_tables/callback/a?x=1 HTTP/1.1",
        ] {
            assert_eq!(forwarded_head(refused), None, "{refused}");
        }
    }
}
