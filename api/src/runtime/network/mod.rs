//! Network namespaces for work a tenant controls: a run (no outbound network,
//! spec: "no outbound network at runtime") and a build's `RUN` steps ("can reach
//! the public internet", and nothing else).
//!
//! Each gets a namespace of its own with only loopback up, and at most one
//! listener bound on 127.0.0.1 inside it before any of its processes start. This
//! service serves the listener from outside, in its own namespace: a run's door
//! relays callback requests to this service ([`door`]), a build's proxy relays
//! to public addresses only ([`egress`]).
//!
//! The namespace is made on a short-lived thread of its own (`unshare` moves only
//! the calling thread), which brings loopback up and binds the listener before it
//! ends; the open namespace file keeps the namespace alive, and `nsenter` puts the
//! work's process tree in it.

pub mod door;
pub mod egress;

use crate::runtime::programs::sbin;
use nix::sched::{CloneFlags, unshare};
use std::fs::File;
use std::future::Future;
use std::os::fd::AsRawFd;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Most bytes of a request head read by a listener.
const MAX_HEAD: usize = 16 * 1024;
/// How long a listener waits for a request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Most connections a listener serves at once; more are closed unanswered (each
/// one holds a file of this process, which the work must not exhaust).
const MAX_CONNECTIONS: usize = 128;
/// The answer to a request a listener does not let through.
const REFUSED: &[u8] = b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/// A network namespace with loopback only and, when asked for, one listener in it.
pub struct IsolatedNetwork {
    namespace: File,
    listener: Option<std::net::TcpListener>,
    port: Option<u16>,
}

impl IsolatedNetwork {
    /// Makes the namespace, with a listener when `listen` is set.
    pub async fn create(listen: bool) -> anyhow::Result<Self> {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("isolated-network".into())
            .spawn(move || {
                let _ = sender.send(Self::create_on_this_thread(listen));
            })?;
        receiver.await?
    }

    /// Moves this (throwaway) thread into a new network namespace and sets it up.
    fn create_on_this_thread(listen: bool) -> anyhow::Result<Self> {
        unshare(CloneFlags::CLONE_NEWNET)?;
        loopback_up()?;
        let namespace = File::open("/proc/thread-self/ns/net")?;
        let listener = if listen {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
            listener.set_nonblocking(true)?;
            Some(listener)
        } else {
            None
        };
        let port = match &listener {
            Some(listener) => Some(listener.local_addr()?.port()),
            None => None,
        };
        Ok(Self {
            namespace,
            listener,
            port,
        })
    }

    /// The `nsenter` argument that enters the namespace (through this process's
    /// open file of it).
    pub fn nsenter_arg(&self) -> String {
        format!(
            "--net=/proc/{}/fd/{}",
            std::process::id(),
            self.namespace.as_raw_fd()
        )
    }

    /// The listener's port inside the namespace (also once it is served).
    pub fn listener_port(&self) -> Option<u16> {
        self.port
    }

    /// Serves the listener until `stop` fires, each connection with `handle`, at
    /// most [`MAX_CONNECTIONS`] at once. Connections still open then are cut.
    fn serve<F, H>(&mut self, stop: CancellationToken, handle: H)
    where
        H: Fn(TcpStream) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let Some(listener) = self.listener.take() else {
            return;
        };
        tokio::spawn(async move {
            let listener = match TcpListener::from_std(listener) {
                Ok(listener) => listener,
                Err(error) => {
                    tracing::warn!(%error, "a namespace's listener could not be served");
                    return;
                }
            };
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    accepted = listener.accept() => {
                        if let Ok((stream, _)) = accepted
                            && connections.len() < MAX_CONNECTIONS
                        {
                            connections.spawn(handle(stream));
                        }
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
    }
}

/// `ip link set lo up` in the calling thread's namespace (a child inherits it).
fn loopback_up() -> anyhow::Result<()> {
    let status = std::process::Command::new(sbin("ip"))
        .args(["link", "set", "lo", "up"])
        .status()
        .map_err(|error| anyhow::anyhow!("`ip` (iproute2) could not be started: {error}"))?;
    anyhow::ensure!(status.success(), "`ip link set lo up` failed: {status}");
    Ok(())
}

/// Reads a request head within [`HEAD_TIMEOUT`]: (head without its blank line,
/// the bytes read after it). `None` when the stream ends or stalls first or the
/// head is too long.
async fn read_head(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let read = async {
        let mut buffer = Vec::with_capacity(1024);
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let rest = buffer.split_off(end + 4);
                buffer.truncate(end);
                return String::from_utf8(buffer).ok().map(|head| (head, rest));
            }
            if buffer.len() > MAX_HEAD {
                return None;
            }
            let read = stream.read(&mut chunk).await.ok()?;
            if read == 0 {
                return None;
            }
            buffer.extend_from_slice(&chunk[..read]);
        }
    };
    tokio::time::timeout(HEAD_TIMEOUT, read)
        .await
        .ok()
        .flatten()
}
