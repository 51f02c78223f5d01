//! The governor's wire protocol and listener under random input (issue 51): any
//! bytes are a request or a refusal, never a panic; and whatever clients of
//! another user do at once (random bytes, well-formed and malformed requests,
//! any pace, descriptors sent along, hang-ups, many connections), root's look
//! at the board is answered within a second throughout, and the listener stops
//! when asked.

mod common;

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{NOBODY, Served, as_user, is_root, production, root_is_answered};
use oslab_wcall::shm::wire::{REPLY_BYTES, REQUEST_BYTES, Reply, Request, WIRE_MAGIC};
use proptest::prelude::*;

proptest! {
    /// Bytes of any length and content: a request only when they are one of
    /// this version, which reads back to the same bytes.
    #[test]
    fn any_bytes_are_a_request_or_refused(bytes in prop::collection::vec(any::<u8>(), 0..130), head in any::<bool>()) {
        let mut bytes = bytes;
        if head && bytes.len() >= 12 {
            bytes[..8].copy_from_slice(&WIRE_MAGIC.to_le_bytes());
            bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
        }
        match Request::from_bytes(&bytes) {
            Ok(r) => {
                prop_assert_eq!(bytes.len(), REQUEST_BYTES);
                prop_assert_eq!(&r.to_bytes()[..24], &bytes[..24]);
            }
            Err(why) => prop_assert!(!why.is_empty()),
        }
        if let Ok(r) = Reply::from_bytes(&bytes) {
            prop_assert_eq!(bytes.len(), REPLY_BYTES);
            prop_assert!(r.reason.chars().count() <= REPLY_BYTES - 32);
        }
    }
}

/// One client of the other user.
#[derive(Debug, Clone)]
enum Client {
    /// Connects and says nothing.
    Silent,
    /// Connects and hangs up.
    HangUp,
    /// Sends these bytes at once.
    Bytes(Vec<u8>),
    /// Sends a well-formed request (any ask, group and pid).
    Request(u32, u32, u32),
    /// Sends a request's bytes, one every `gap` ms.
    Paced(u64),
    /// Sends a request with descriptors along.
    Descriptors(usize),
    /// Opens this many connections and sends half a request on each.
    Many(usize),
}

fn client() -> impl Strategy<Value = Client> {
    prop_oneof![
        Just(Client::Silent),
        Just(Client::HangUp),
        prop::collection::vec(any::<u8>(), 0..200).prop_map(Client::Bytes),
        (1u32..8, 0u32..6, any::<u32>()).prop_map(|(a, g, p)| Client::Request(a, g, p)),
        (0u64..300).prop_map(Client::Paced),
        (1usize..3).prop_map(Client::Descriptors),
        (1usize..200).prop_map(Client::Many),
    ]
}

fn request_bytes(ask: u32, group: u32, pid: u32) -> [u8; REQUEST_BYTES] {
    let mut b = [0u8; REQUEST_BYTES];
    b[..8].copy_from_slice(&WIRE_MAGIC.to_le_bytes());
    b[8..12].copy_from_slice(&1u32.to_le_bytes());
    for (at, v) in [(12, ask), (16, group), (20, pid)] {
        b[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    b
}

/// Plays `c` against the socket at `path` until `stop`, holding what it opened.
fn play(c: Client, path: std::path::PathBuf, stop: Arc<AtomicBool>) {
    let connect = || UnixStream::connect(&path).ok();
    let mut held = Vec::new();
    match c {
        Client::Silent => held.extend(connect()),
        Client::HangUp => drop(connect()),
        Client::Bytes(b) => held.extend(connect().map(|mut s| {
            let _ = s.write_all(&b);
            s
        })),
        Client::Request(a, g, p) => held.extend(connect().map(|mut s| {
            let _ = s.write_all(&request_bytes(a, g, p));
            s
        })),
        Client::Paced(gap) => {
            if let Some(mut s) = connect() {
                for b in request_bytes(4, 0, 0) {
                    if stop.load(Ordering::Relaxed) || s.write_all(&[b]).is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(gap));
                }
                held.push(s);
            }
        }
        Client::Descriptors(n) => held.extend(connect().inspect(|s| {
            // a socket pair's ends, or the connection itself
            let (a, b) = UnixStream::pair().unwrap();
            let fds = [a.as_raw_fd(), s.as_raw_fd(), b.as_raw_fd()];
            let bytes = request_bytes(4, 0, 0);
            let _ = oslab_wcall::shm::wire::send(s.as_raw_fd(), &bytes, &fds[..n]);
        })),
        Client::Many(n) => {
            for _ in 0..n {
                held.extend(connect().map(|mut s| {
                    let _ = s.write_all(&request_bytes(1, 0, 0)[..REQUEST_BYTES / 2]);
                    s
                }));
            }
        }
    }
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Whatever another user's clients do together, root is answered within a
    /// second, three times over, and the listener stops when asked.
    #[test]
    fn root_is_answered_whatever_others_send(
        clients in prop::collection::vec(client(), 0..40),
        refuse in any::<bool>(),
    ) {
        let uid = if is_root() { NOBODY } else { oslab_sys::process::uid() };
        let served = Served::start(production(), refuse);
        let stop = Arc::new(AtomicBool::new(false));
        let players: Vec<_> = clients
            .into_iter()
            .map(|c| {
                let (path, stop) = (served.path.clone(), stop.clone());
                as_user(uid, move || play(c, path, stop))
            })
            .collect();
        let start = Instant::now();
        for i in 0..3 {
            root_is_answered(&served.path, &format!("look {i}"));
            std::thread::sleep(Duration::from_millis(150));
        }
        stop.store(true, Ordering::Relaxed);
        for p in players {
            p.join().unwrap();
        }
        served.stop_within(Duration::from_secs(5));
        prop_assert!(start.elapsed() < Duration::from_secs(60));
    }
}
