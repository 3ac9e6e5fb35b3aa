//! Crash over the wire: clients commit through `redodb serve` (simple and extended
//! protocol, one or two commits per call, WAIT and NOWAIT) and remember what was
//! acknowledged; the server is killed with SIGKILL at a random moment under that load,
//! restarted on the same directory, and then, for every client,
//!
//! - every commit acknowledged under WAIT is there,
//! - its recovered rows are a dense prefix of what it sent (a NOWAIT commit may be lost
//!   only with everything after it), and nothing it never sent is there,
//!
//! round after round on the same directory, so recovery after recovery is tested, with
//! checkpoints and log switches happening under the load.

use std::io::Write;
use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use crate::common::protocol::{cstring, extended_pipeline, kinds_until_ready_or_closed, message};
use crate::common::{require_tool, Server};
use redo::sim::SimRng;

const ROUNDS: u64 = 8;
const CLIENTS: u64 = 6;

/// What one client learned before the kill.
#[derive(Debug, Default)]
struct Acknowledged {
    /// The highest n acknowledged by a WAIT commit (every n below it was committed
    /// earlier by this client, so it is covered too).
    waited: Option<u64>,
    /// The highest n sent in a commit request (acknowledged or not).
    sent: Option<u64>,
}

/// Commits n = first, first + 1, ... until the server dies; returns what was acknowledged.
fn client(port: u16, client: u64, first: u64, seed: u64) -> Acknowledged {
    let mut rng = SimRng::new(seed);
    let mut acked = Acknowledged::default();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    crate::common::protocol::startup(&mut stream);
    let mut n = first;
    loop {
        let insert = |n: u64| format!("INSERT INTO acks (client, n) VALUES ({client}, {n})");
        // (request, the highest n it commits, whether the acknowledgement means durable,
        // the reply's message kinds)
        let (request, last, wait, expected) = match rng.upto(9) {
            // Autocommit, one commit per call.
            0..=3 => (message(b'Q', &cstring(&insert(n))), n, true, "CZ"),
            // The extended protocol's implicit transaction.
            4..=5 => (
                extended_pipeline(
                    "INSERT INTO acks (client, n) VALUES ($1, $2)",
                    &[&client.to_string(), &n.to_string()],
                ),
                n,
                true,
                "12CZ",
            ),
            // Two commits in one call: the first as NOWAIT, the call waits for both once.
            6..=7 => (
                message(
                    b'Q',
                    &cstring(&format!("BEGIN; {}; COMMIT; BEGIN; {}; COMMIT", insert(n), insert(n + 1))),
                ),
                n + 1,
                true,
                "CCCCCCZ",
            ),
            // An explicit NOWAIT commit: acknowledged before it is durable.
            _ => (
                message(b'Q', &cstring(&format!("BEGIN; {}; COMMIT WRITE NOWAIT", insert(n)))),
                n,
                false,
                "CCCZ",
            ),
        };
        acked.sent = Some(last);
        if stream.write_all(&request).is_err() {
            return acked;
        }
        let Some(kinds) = kinds_until_ready_or_closed(&mut stream) else { return acked };
        assert_eq!(kinds, expected, "client {client} committing up to {last}");
        if wait {
            acked.waited = Some(last);
        }
        n = last + 1;
    }
}

#[test]
fn every_acknowledged_wait_commit_survives_kill_9_under_load() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    // Checkpoint images every 100 ms, on 4 MiB log files (Server::start): both happen
    // during the load.
    let flags = ["--checkpoint-interval-ms", "100"];
    let server = Server::start(dir.path(), &flags);
    server.query("CREATE TABLE acks (client BIGINT, n BIGINT, PRIMARY KEY (client, n))");
    let mut next = vec![0u64; CLIENTS as usize];
    let mut rng = SimRng::new(0xC4A5);
    let mut server = Some(server);
    let (mut total_waited, mut total_recovered) = (0, 0);
    for round in 0..ROUNDS {
        let running = server.take().unwrap_or_else(|| Server::start(dir.path(), &flags));
        let port = running.port;
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let first = next[c as usize];
                thread::spawn(move || client(port, c, first, round << 8 | c))
            })
            .collect();
        thread::sleep(Duration::from_millis(150 + rng.upto(450)));
        running.kill9();
        let acked: Vec<Acknowledged> = clients.into_iter().map(|c| c.join().expect("a client")).collect();

        let restarted = Server::start(dir.path(), &flags);
        let rows = restarted.query("SELECT client, n FROM acks ORDER BY client, n");
        let mut recovered = vec![Vec::new(); CLIENTS as usize];
        for line in rows.lines() {
            let (c, n) = line.split_once('|').expect("client|n");
            recovered[c.parse::<usize>().unwrap()].push(n.parse::<u64>().unwrap());
        }
        for c in 0..CLIENTS as usize {
            let got = &recovered[c];
            // A dense prefix: 0, 1, 2, ... with nothing missing in between.
            assert!(
                got.iter().enumerate().all(|(i, &n)| n == i as u64),
                "round {round}: client {c}'s rows are not a prefix: {:?}",
                &got[..got.len().min(20)]
            );
            let have = got.len() as u64;
            if let Some(waited) = acked[c].waited {
                assert!(
                    have > waited,
                    "round {round}: client {c} lost an acknowledged WAIT commit: {waited} acknowledged, \
                     rows 0..{have} recovered"
                );
                total_waited += waited + 1 - next[c];
            }
            let sent = acked[c].sent.map_or(0, |s| s + 1);
            assert!(have <= sent.max(next[c]), "round {round}: client {c} has rows it never sent");
            total_recovered += have - next[c];
            next[c] = have;
        }
        server = Some(restarted);
    }
    eprintln!("{ROUNDS} kills: {total_waited} WAIT-acknowledged commits, {total_recovered} rows recovered");
    assert!(total_waited > ROUNDS * CLIENTS, "the clients hardly committed: {total_waited}");
    assert_eq!(server.take().unwrap().terminate().code(), Some(0));
}
