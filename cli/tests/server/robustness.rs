//! Clients that misbehave end only their own connection: many connections sending random
//! bytes, truncated and malformed messages while a well-behaved client commits and reads
//! without a single failure; and a client that stops reading its replies is disconnected
//! after `client_send_timeout_ms`, its transaction rolled back, so the row lock it held
//! goes to the client waiting for it.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::common::protocol::{
    self, cstring, extended_pipeline, kinds, kinds_until_ready_or_closed, message, query,
};
use crate::common::{require_tool, Server};
use redo::sim::SimRng;

/// How long the garbage runs; the healthy client runs until it stops.
const GARBAGE_FOR: Duration = Duration::from_secs(3);
const GARBAGE_THREADS: u64 = 8;
/// Connections per garbage thread, at most (the time bound usually ends it first).
const GARBAGE_CONNECTIONS: u64 = 400;

fn random_bytes(rng: &mut SimRng, max_len: u64) -> Vec<u8> {
    (0..rng.upto(max_len)).map(|_| rng.next_u64() as u8).collect()
}

/// What one garbage connection sends (after a startup, for most): see `misbehave`.
fn garbage(rng: &mut SimRng) -> (bool, Vec<u8>) {
    const KINDS: &[u8] = b"QPBEDSHCXdcfpF!\0\xff";
    match rng.upto(6) {
        // Random bytes instead of a startup packet.
        0 => (false, random_bytes(rng, 300)),
        // A startup packet whose length field lies.
        1 => {
            let mut bytes = (rng.next_u64() as i32).to_be_bytes().to_vec();
            bytes.extend(196608i32.to_be_bytes());
            bytes.extend(random_bytes(rng, 100));
            (false, bytes)
        }
        // An SSLRequest, then garbage where the startup packet should be.
        2 => {
            let mut bytes = vec![0, 0, 0, 8];
            bytes.extend(80877103i32.to_be_bytes());
            bytes.extend(random_bytes(rng, 200));
            (false, bytes)
        }
        // After startup: random bytes.
        3 => (true, random_bytes(rng, 2000)),
        // After startup: messages of random types with random bodies, correctly framed.
        4 => {
            let count = 1 + rng.upto(5);
            let bytes = (0..count)
                .flat_map(|_| {
                    let kind = KINDS[rng.upto(KINDS.len() as u64 - 1) as usize];
                    message(kind, &random_bytes(rng, 200))
                })
                .collect();
            (true, bytes)
        }
        // After startup: a valid pipeline cut at a random byte, or with one byte changed.
        5 => {
            let key = (1_000_000 + rng.upto(1_000_000)).to_string();
            let mut bytes = extended_pipeline("INSERT INTO garbage_victim VALUES ($1)", &[&key]);
            if rng.upto(1) == 0 {
                bytes.truncate(rng.upto(bytes.len() as u64 - 1) as usize);
            } else {
                let at = rng.upto(bytes.len() as u64 - 1) as usize;
                bytes[at] = rng.next_u64() as u8;
            }
            (true, bytes)
        }
        // After startup: a message whose length field lies (huge, negative or short).
        _ => {
            let kind = KINDS[rng.upto(KINDS.len() as u64 - 1) as usize];
            let mut bytes = vec![kind];
            bytes.extend((rng.next_u64() as i32).to_be_bytes());
            bytes.extend(random_bytes(rng, 50));
            (true, bytes)
        }
    }
}

/// One garbage connection: connect, maybe start up, send the garbage, read whatever
/// comes back for a moment (the server may answer, close, or wait for more), then go.
fn misbehave(port: u16, rng: &mut SimRng) {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return };
    stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    stream.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let (start_up, bytes) = garbage(rng);
    if start_up {
        protocol::send_startup(&mut stream, "test");
        if kinds_until_ready_or_closed(&mut stream).is_none() {
            return;
        }
    }
    if stream.write_all(&bytes).is_err() {
        return;
    }
    let mut sink = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_millis(300);
    while Instant::now() < deadline {
        match stream.read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return,
            Err(_) => return,
        }
    }
}

#[test]
fn garbage_from_many_connections_never_disturbs_a_well_behaved_client() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE garbage_victim (k BIGINT PRIMARY KEY)");
    let port = server.port;
    let stop = Arc::new(AtomicBool::new(false));

    // The well-behaved client: one connection, an INSERT and a count per round trip,
    // every answer checked, for as long as the garbage lasts.
    let healthy = {
        let stop = stop.clone();
        thread::spawn(move || {
            let mut stream = server.connect();
            let mut committed = 0u64;
            while !stop.load(Ordering::SeqCst) {
                committed += 1;
                let replies = query(&mut stream, &format!("INSERT INTO garbage_victim VALUES ({committed})"));
                assert_eq!(kinds(&replies), "CZ", "insert {committed} during the garbage");
                let replies = query(&mut stream, "SELECT count(*) FROM garbage_victim WHERE k < 1000000");
                assert_eq!(kinds(&replies), "TDCZ");
                let count = &replies[1].1[6..];
                assert_eq!(count, committed.to_string().as_bytes(), "rows seen after insert {committed}");
            }
            (server, committed)
        })
    };

    let seed = std::env::var("GARBAGE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x6A4B);
    eprintln!("garbage seed {seed} (GARBAGE_SEED=n replays)");
    let started = Instant::now();
    let senders: Vec<_> = (0..GARBAGE_THREADS)
        .map(|t| {
            thread::spawn(move || {
                let mut rng = SimRng::new(seed ^ (t << 32));
                let mut connections = 0;
                while started.elapsed() < GARBAGE_FOR && connections < GARBAGE_CONNECTIONS {
                    misbehave(port, &mut rng);
                    connections += 1;
                }
                connections
            })
        })
        .collect();
    let connections: u64 = senders.into_iter().map(|s| s.join().expect("a garbage thread")).sum();
    stop.store(true, Ordering::SeqCst);
    let (server, committed) = healthy.join().expect("the healthy client never failed");
    eprintln!("{connections} garbage connections; the healthy client committed {committed} times meanwhile");
    assert!(connections >= GARBAGE_THREADS * 20, "only {connections} garbage connections were made");
    assert!(committed > 0);

    // Still serving new clients, with every healthy commit (a garbled pipeline may, rarely,
    // still be a valid INSERT of a key from 1,000,000 up).
    assert_eq!(
        server.query("SELECT count(*) FROM garbage_victim WHERE k < 1000000").trim(),
        committed.to_string()
    );
    assert_eq!(server.terminate().code(), Some(0), "a clean shutdown after all that");
}

#[test]
fn a_client_that_stops_reading_is_disconnected_and_its_locks_released() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--client-send-timeout-ms", "500"]);
    server.query("CREATE TABLE stalled (k BIGINT PRIMARY KEY, v TEXT)");
    server.query("INSERT INTO stalled VALUES (1, 'before')");

    // It takes the row's lock, then asks for ~64 MB of replies and reads none of them.
    let mut stalled = server.connect();
    assert_eq!(kinds(&query(&mut stalled, "BEGIN; UPDATE stalled SET v = 'stalled' WHERE k = 1")), "CCZ");
    let flood = message(b'Q', &cstring("SELECT repeat('x', 1000000)")).repeat(64);
    let mut writer = stalled.try_clone().unwrap();
    writer.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    // The server stops reading too once its replies back up: this write then blocks
    // until the server closes the connection, and fails or ends.
    let flooding = thread::spawn(move || {
        let _ = writer.write_all(&flood);
    });

    // The row's next updater waits for the stalled transaction's lock, which the
    // disconnection releases (a rollback: the stalled update is undone). Without it, this
    // read gives up after 20 s.
    let started = Instant::now();
    let mut updater = server.connect();
    assert_eq!(kinds(&query(&mut updater, "UPDATE stalled SET v = 'after' WHERE k = 1")), "CZ");
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(20), "the lock was held for {waited:?}");
    assert_eq!(server.query("SELECT v FROM stalled"), "after\n");

    // The stalled connection was closed: reading now drains what was sent, then ends.
    stalled.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut drained = 0usize;
    let mut sink = vec![0u8; 1 << 16];
    loop {
        match stalled.read(&mut sink) {
            Ok(0) => break,
            Ok(n) => drained += n,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the stalled connection was not closed ({drained} bytes read): {e}"),
        }
    }
    assert!(drained < 64 << 20, "the server sent all {drained} bytes: it never gave up");
    flooding.join().unwrap();
    // Others are served as before.
    assert_eq!(kinds(&query(&mut updater, "SELECT 1")), "TDCZ");
    assert_eq!(server.terminate().code(), Some(0));
}
