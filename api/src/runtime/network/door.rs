//! A run's door (a run with a writeback output policy): its namespace's listener,
//! whose requests are relayed to this service's callback routes (below
//! [`CALLBACK_PREFIX`], whose own credentials decide the rest), and to no other
//! route or address.

use super::{IsolatedNetwork, REFUSED, read_head};
use domain::tables::callback_token::CALLBACK_PREFIX;
use std::net::SocketAddr;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

impl IsolatedNetwork {
    /// Serves the listener as a door until `stop` fires, relaying each allowed
    /// request to `service` (this service's own listener).
    pub fn open_door(&mut self, service: SocketAddr, stop: CancellationToken) {
        self.serve(stop, move |stream| relay(stream, service));
    }
}

/// Relays one request: its head is checked ([`forwarded_head`]) and forwarded
/// with `connection: close`, so the service answers it alone and a pipelined
/// second request never reaches it.
async fn relay(mut inside: TcpStream, service: SocketAddr) {
    let Some((head, rest)) = read_head(&mut inside).await else {
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
