//! The HTTP server of `oslab watch --prometheus`: `GET /metrics` answers the latest
//! text ([`Latest`]) in the format the client's Accept header asks for (OpenMetrics
//! for Prometheus, which asks for it; the classic text format for anyone else, as
//! node_exporter does), `GET /` a page that links to it, every other request 404,
//! with hard limits so that no client can hold the server:
//!
//! - at most [`MAX_CONNECTIONS`] connections at once, each on its own thread; one
//!   more closes the oldest (nginx's draining of reusable connections), so idle
//!   clients cannot lock a scraper out, and nothing waits in a queue;
//! - [`READ_TIMEOUT`] for the whole request head from accept, not per read, so a
//!   client that trickles a byte at a time is cut off too; [`WRITE_TIMEOUT`] for
//!   each write;
//! - a request head over [`MAX_HEAD_BYTES`] (or with over [`MAX_HEADERS`] headers)
//!   gets 431 and the connection is closed.
//!
//! One request per connection (`Connection: close`). The accept loop is our own,
//! over std's `TcpListener`, and the request head is parsed by `httparse`
//! (hyper's parser): tiny_http 0.12, the small server crate, has none of these
//! limits (it spawns a thread for every connection without bound, sets no socket
//! timeouts and reads header lines into an unbounded buffer) and accepts only
//! from its own listener, so they cannot be added around it; hyper would bring
//! an async runtime into a binary that has none for one endpoint.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Connections served at once; one more closes the oldest.
pub const MAX_CONNECTIONS: usize = 32;
/// Time from accept to the end of the request head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Time for each write of the response.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// The request line and headers together, in bytes.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Headers in one request.
pub const MAX_HEADERS: usize = 64;

/// The open connections by the order they were accepted (a second handle to each,
/// to close it from the accept loop).
#[derive(Default)]
struct Open {
    next: u64,
    streams: BTreeMap<u64, TcpStream>,
}

/// What `/metrics` answers: the newest text in each format (none before the
/// first is set), each with its content type.
#[derive(Default)]
pub struct Latest {
    texts: Mutex<Vec<(&'static str, String)>>,
}

impl Latest {
    pub fn new() -> Latest {
        Latest::default()
    }

    /// Replaces the texts served: (content type, text) per format, the format
    /// for clients that name none of them last.
    pub fn set(&self, texts: Vec<(&'static str, String)>) {
        *self.texts.lock().unwrap_or_else(PoisonError::into_inner) = texts;
    }

    /// The text whose media type the Accept header names (the first that it
    /// names, in the order given to [`Latest::set`]), else the last one. A type
    /// named with `q=0` is one the client refuses.
    fn for_accept(&self, accept: &str) -> Option<(&'static str, String)> {
        let texts = self.texts.lock().unwrap_or_else(PoisonError::into_inner);
        let wanted = accepted_types(accept);
        let media = |ctype: &str| ctype.split(';').next().unwrap_or("").trim().to_string();
        texts
            .iter()
            .find(|(ctype, _)| wanted.contains(&media(ctype)))
            .or(texts.last())
            .filter(|(_, text)| !text.is_empty())
            .cloned()
    }
}

/// The media types an Accept header asks for, lower case, without those it
/// gives a quality of zero.
fn accepted_types(accept: &str) -> Vec<String> {
    accept
        .split(',')
        .filter_map(|entry| {
            let mut parts = entry.split(';');
            let media = parts.next()?.trim().to_ascii_lowercase();
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f64>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            (!refused && !media.is_empty()).then_some(media)
        })
        .collect()
}

/// The page at `/`.
const LANDING: &str = "<!DOCTYPE html>\n<html><head><title>oslab watch</title></head><body>\n<h1>oslab watch</h1>\n<p><a href=\"/metrics\">/metrics</a>: this machine's counters and levels, OpenMetrics for clients that ask for it (Prometheus does), else Prometheus's classic text format.</p>\n</body></html>\n";

/// Serves `latest` on `listener` from a thread of its own.
pub fn spawn(listener: TcpListener, latest: Arc<Latest>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("oslab-metrics".into())
        .spawn(move || serve(&listener, &latest))
        .map(drop)
}

fn serve(listener: &TcpListener, latest: &Arc<Latest>) {
    let open = Arc::new(Mutex::new(Open::default()));
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            // Out of descriptors or memory: give the open connections time to end.
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        let Some(id) = admit(&open, &stream) else {
            continue;
        };
        let (latest, open2) = (latest.clone(), open.clone());
        let spawned = std::thread::Builder::new()
            .name("oslab-metrics-conn".into())
            .spawn(move || {
                answer(stream, &latest);
                lock(&open2).streams.remove(&id);
            });
        if spawned.is_err() {
            lock(&open).streams.remove(&id);
        }
    }
}

fn lock(open: &Mutex<Open>) -> std::sync::MutexGuard<'_, Open> {
    open.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Registers a new connection, closing the oldest ones past the limit; `None`
/// (the stream is then dropped, so closed) when it cannot be tracked.
fn admit(open: &Mutex<Open>, stream: &TcpStream) -> Option<u64> {
    let handle = stream.try_clone().ok()?;
    let mut open = lock(open);
    while open.streams.len() >= MAX_CONNECTIONS {
        if let Some((_, oldest)) = open.streams.pop_first() {
            // Wakes its thread's read or write, which then ends.
            let _ = oldest.shutdown(Shutdown::Both);
        }
    }
    let id = open.next;
    open.next += 1;
    open.streams.insert(id, handle);
    Some(id)
}

/// Reads one request head within the limits and answers it.
fn answer(mut stream: TcpStream, latest: &Latest) {
    let deadline = Instant::now() + READ_TIMEOUT;
    if stream.set_write_timeout(Some(WRITE_TIMEOUT)).is_err() {
        return;
    }
    let mut head = vec![0u8; MAX_HEAD_BYTES];
    let mut len = 0;
    let (status, ctype, body) = loop {
        if len == head.len() {
            break too_large();
        }
        if !read_some(&mut stream, deadline, &mut head, &mut len) {
            return;
        }
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&head[..len]) {
            Ok(httparse::Status::Partial) => {}
            Ok(httparse::Status::Complete(_)) => {
                let accept = request
                    .headers
                    .iter()
                    .filter(|h| h.name.eq_ignore_ascii_case("accept"))
                    .map(|h| String::from_utf8_lossy(h.value).into_owned())
                    .collect::<Vec<_>>()
                    .join(",");
                break respond(request.method, request.path, &accept, latest);
            }
            Err(httparse::Error::TooManyHeaders) => break too_large(),
            Err(_) => break ("400 Bad Request", "text/plain", "bad request\n".into()),
        }
    };
    let sent = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nVary: Accept\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    if sent.is_ok() {
        linger(&mut stream, deadline + WRITE_TIMEOUT);
    }
}

/// Reads more of the head before `deadline`; false on end of stream, error or
/// time out.
fn read_some(stream: &mut TcpStream, deadline: Instant, buf: &mut [u8], len: &mut usize) -> bool {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return false;
        }
        match stream.read(&mut buf[*len..]) {
            Ok(0) => return false,
            Ok(n) => {
                *len += n;
                return true;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

fn respond(
    method: Option<&str>,
    path: Option<&str>,
    accept: &str,
    latest: &Latest,
) -> (&'static str, &'static str, String) {
    let path = path.unwrap_or("");
    if method == Some("GET") && (path == "/metrics" || path.starts_with("/metrics?")) {
        match latest.for_accept(accept) {
            Some((ctype, body)) => ("200 OK", ctype, body),
            None => (
                "503 Service Unavailable",
                "text/plain",
                "no interval sampled yet\n".into(),
            ),
        }
    } else if method == Some("GET") && path == "/" {
        ("200 OK", "text/html; charset=utf-8", LANDING.into())
    } else {
        (
            "404 Not Found",
            "text/plain",
            "oslab serves / and /metrics\n".into(),
        )
    }
}

fn too_large() -> (&'static str, &'static str, String) {
    (
        "431 Request Header Fields Too Large",
        "text/plain",
        format!("request head over {MAX_HEAD_BYTES} bytes or {MAX_HEADERS} headers\n"),
    )
}

/// Ends the response and discards what the client still sends until it closes,
/// at most until `deadline` (the connection stays one of the counted ones), so
/// that unread input does not turn the close into a reset that could destroy the
/// response before the client reads it.
fn linger(stream: &mut TcpStream, deadline: Instant) {
    if stream.shutdown(Shutdown::Write).is_err() {
        return;
    }
    let mut sink = [0u8; 4096];
    let mut len = 0;
    while read_some(stream, deadline, &mut sink, &mut len) {
        len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served() -> Latest {
        let l = Latest::new();
        l.set(vec![
            ("application/openmetrics-text; version=1.0.0", "om".into()),
            ("text/plain; version=0.0.4", "text".into()),
        ]);
        l
    }

    #[test]
    fn the_accept_header_picks_the_format() {
        let l = served();
        let body = |accept: &str| l.for_accept(accept).unwrap().1;
        assert_eq!(
            body("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
            "om"
        );
        assert_eq!(body("*/*"), "text", "no format named: the classic text");
        assert_eq!(body(""), "text");
        assert_eq!(body("Text/Plain"), "text");
        assert_eq!(
            body("application/openmetrics-text;q=0, text/plain"),
            "text",
            "q=0 refuses a type"
        );
    }
}
