//! Serving the API on a socket: HTTP/1.1 on hyper, with what `axum::serve`
//! does not offer.
//!
//! - **A header-read timeout.** A client that does not send a request's
//!   headers within [`ListenOptions::header_read_timeout`] (slow or
//!   half-open connections, idle keep-alive ones included) is disconnected,
//!   so such connections cannot pile up. hyper enforces it; it needs a timer,
//!   which `axum::serve` does not give it.
//! - **Parse errors in the JSON error shape.** hyper answers requests it
//!   cannot parse itself, before any route or layer runs: 400 (malformed),
//!   414 (a request target over 65,534 bytes) and 431 (headers over its
//!   buffer), with an empty body. [`JsonParseErrors`] recognises those
//!   automatic answers on their way out (a bare status head without a
//!   `content-type`, which no route produces) and replaces them with the
//!   same status and a `{"error": {"code", "message"}}` body. hyper closes the
//!   connection after them, so nothing else follows on it.
//! - Graceful shutdown as `axum::serve` does it: stop accepting when the
//!   signal future completes, let each connection finish its request, return
//!   when every connection has closed.
//!
//! Threading: one task per connection on the tokio runtime.

use std::future::Future;
use std::io;
use std::pin::{pin, Pin};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::serve::Listener;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Connection settings of [`serve`].
#[derive(Clone, Copy, Debug)]
pub struct ListenOptions {
    pub header_read_timeout: Duration,
}

/// Serves `app` on `listener` until `signal` completes, then waits for the
/// open connections to finish their requests.
pub async fn serve(
    mut listener: TcpListener,
    app: Router,
    options: ListenOptions,
    signal: impl Future<Output = ()> + Send + 'static,
) {
    let (signal_tx, signal_rx) = watch::channel(());
    tokio::spawn(async move {
        signal.await;
        drop(signal_rx);
    });
    let (close_tx, close_rx) = watch::channel(());
    loop {
        let (stream, _addr) = tokio::select! {
            conn = Listener::accept(&mut listener) => conn,
            _ = signal_tx.closed() => break,
        };
        let _ = stream.set_nodelay(true);
        let io = TokioIo::new(JsonParseErrors::new(stream));
        let service = TowerToHyperService::new(app.clone());
        let signal_tx = signal_tx.clone();
        let close_rx = close_rx.clone();
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(options.header_read_timeout);
            let mut conn = pin!(builder.serve_connection(io, service));
            let mut closed = pin!(signal_tx.closed());
            let mut shutting_down = false;
            loop {
                tokio::select! {
                    result = conn.as_mut() => {
                        if let Err(e) = result {
                            tracing::debug!(error = %e, "connection ended with an error");
                        }
                        break;
                    }
                    _ = &mut closed, if !shutting_down => {
                        shutting_down = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
            drop(close_rx);
        });
    }
    drop(close_rx);
    drop(listener);
    close_tx.closed().await;
}

/// A connection whose hyper-made parse-error answers (400, 414, 431 with an
/// empty body) are rewritten into the JSON error shape; everything else
/// passes through untouched. Writes are never vectored, so hyper hands over
/// each response head in one buffer.
pub struct JsonParseErrors<T> {
    inner: T,
    /// A replacement being written: its bytes, how many are written, and the
    /// length of the buffer it replaces (reported as written when done).
    replacing: Option<(Vec<u8>, usize, usize)>,
}

impl<T> JsonParseErrors<T> {
    pub fn new(inner: T) -> Self {
        JsonParseErrors {
            inner,
            replacing: None,
        }
    }
}

/// The JSON response replacing `head`, if `head` is one of hyper's automatic
/// parse-error answers.
pub fn rewrite_parse_error(head: &[u8]) -> Option<Vec<u8>> {
    if head.len() > 512 || !head.ends_with(b"\r\n\r\n") {
        return None;
    }
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next()?;
    let rest = status_line
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| status_line.strip_prefix("HTTP/1.0 "))?;
    let (code, message) = match rest.get(..3)? {
        "400" => ("invalid_argument", "malformed HTTP request"),
        "414" => (
            "payload_too_large",
            "the request URI is too long (at most 65534 bytes)",
        ),
        "431" => ("payload_too_large", "the request headers are too large"),
        _ => return None,
    };
    let mut date = None;
    for line in lines.filter(|l| !l.is_empty()) {
        let lower = line.to_ascii_lowercase();
        if lower.starts_with("content-type:") {
            return None;
        }
        if lower.starts_with("content-length:") && lower.trim_end() != "content-length: 0" {
            return None;
        }
        if lower.starts_with("date:") {
            date = Some(line);
        }
    }
    let body = serde_json::json!({"error": {"code": code, "message": message}}).to_string();
    let mut out = format!(
        "{status_line}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    if let Some(d) = date {
        out.push_str(d);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.push_str(&body);
    Some(out.into_bytes())
}

impl<T: AsyncRead + Unpin> AsyncRead for JsonParseErrors<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for JsonParseErrors<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.replacing.is_none() {
            match rewrite_parse_error(buf) {
                Some(replacement) => this.replacing = Some((replacement, 0, buf.len())),
                None => return Pin::new(&mut this.inner).poll_write(cx, buf),
            }
        }
        let Some((bytes, written, original)) = this.replacing.as_mut() else {
            unreachable!("set above")
        };
        while *written < bytes.len() {
            let n = ready!(Pin::new(&mut this.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        let original = *original;
        this.replacing = None;
        Poll::Ready(Ok(original))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::rewrite_parse_error;

    #[test]
    fn only_bare_parse_error_heads_are_rewritten() {
        let head = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: Tue, 01 Dec 2026 12:00:00 GMT\r\n\r\n";
        let out = String::from_utf8(rewrite_parse_error(head).unwrap()).unwrap();
        assert!(out.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{out}");
        assert!(out.contains("content-type: application/json\r\n"));
        assert!(out.contains("date: Tue, 01 Dec 2026 12:00:00 GMT\r\n"));
        let (head_part, body) = out.split_once("\r\n\r\n").unwrap();
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "payload_too_large");
        assert!(head_part.contains(&format!("content-length: {}", body.len())));
        assert!(rewrite_parse_error(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\r\n"
        )
        .is_some());
        assert!(
            rewrite_parse_error(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n").is_some()
        );
        // Our own responses carry a content type and are left alone, as are
        // other statuses and anything that is not a whole head.
        assert!(rewrite_parse_error(
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n"
        )
        .is_none());
        assert!(
            rewrite_parse_error(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n").is_none()
        );
        assert!(
            rewrite_parse_error(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n").is_none()
        );
        assert!(
            rewrite_parse_error(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 5\r\n\r\n").is_none()
        );
        assert!(rewrite_parse_error(b"{\"HTTP/1.1 400\"}").is_none());
    }
}
