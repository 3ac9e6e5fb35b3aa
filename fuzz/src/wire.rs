//! The `wire_startup` and `wire_session` targets: the server's connection handling
//! (`server::connection::serve_stream`: startup packets, authentication, framing, then
//! the protocol's messages run by a session) driven in process through an in-memory
//! pipe, on a scratch database of its own for each input.
//!
//! - `wire_startup`: `auth u8, bytes...`: the bytes are all the client sends, from the
//!   first (startup packets, SSLRequest, CancelRequest, password messages). `auth` picks
//!   how clients are authenticated: trust for loopback clients, md5 or SCRAM-SHA-256 for
//!   configured users, or a client from another host (refused).
//! - `wire_session`: the bytes follow a valid startup packet (user `fuzz`, trusted), so
//!   they reach the message loop at once.
//!
//! The database is the process's scratch database (`scratch`), put back after each input;
//! every row a connection committed must fit its table as recovery checks it.
//!
//! The client side writes the bytes, closes its half, and reads every reply to the end
//! (the server then never waits on a full pipe). Bounds: the input's length, and a
//! watchdog that sends a CancelRequest for the session (with the key from its
//! BackendKeyData), as a client would, every 10 ms once the budget is spent.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use server::auth::AuthConfig;
use server::connection::{serve_stream, ServerContext};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::runtime::Runtime;
use tokio::sync::watch;

use crate::scratch::{check_tables, with_scratch_db};

/// The time an input's statements may take before they are cancelled.
pub const BUDGET: Duration = Duration::from_millis(500);

const CANCEL_REQUEST_CODE: i32 = 80877102;

/// The runtime the connections run on: multi-threaded, as the server's (a session that
/// sleeps hands its worker over with `block_in_place`, which needs one).
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// How the server authenticates the client, and where the client connects from.
#[derive(Clone, Copy, Debug)]
pub enum Auth {
    LoopbackTrust,
    Md5,
    Scram,
    /// Nothing configured, and a client from another host: refused.
    Remote,
}

impl Auth {
    pub fn from_byte(b: u8) -> Auth {
        match b % 4 {
            0 => Auth::LoopbackTrust,
            1 => Auth::Md5,
            2 => Auth::Scram,
            _ => Auth::Remote,
        }
    }

    fn config(self) -> AuthConfig {
        // Made once: a SCRAM verifier derived from a password costs 4096 PBKDF2 rounds.
        static MD5: OnceLock<AuthConfig> = OnceLock::new();
        static SCRAM: OnceLock<AuthConfig> = OnceLock::new();
        let users = || BTreeMap::from([("alice".to_string(), "secret".to_string())]);
        match self {
            Auth::LoopbackTrust | Auth::Remote => AuthConfig::default(),
            Auth::Md5 => {
                MD5.get_or_init(|| AuthConfig::new(Some("md5"), &users()).expect("md5 users")).clone()
            }
            Auth::Scram => SCRAM
                .get_or_init(|| AuthConfig::new(Some("scram-sha-256"), &users()).expect("scram users"))
                .clone(),
        }
    }

    fn peer(self) -> SocketAddr {
        match self {
            Auth::Remote => SocketAddr::from(([192, 0, 2, 7], 40000)),
            _ => SocketAddr::from(([127, 0, 0, 1], 40000)),
        }
    }
}

/// The startup packet `wire_session` inputs follow: protocol 3.0, user and database
/// `fuzz`, an application name.
pub fn startup_packet() -> Vec<u8> {
    let mut body = 196608i32.to_be_bytes().to_vec();
    for (name, value) in [("user", "fuzz"), ("database", "fuzz"), ("application_name", "fuzz")] {
        body.extend_from_slice(name.as_bytes());
        body.push(0);
        body.extend_from_slice(value.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut packet = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    packet.extend_from_slice(&body);
    packet
}

pub fn run_startup(data: &[u8]) {
    let Some((&auth, bytes)) = data.split_first() else { return };
    run_connection(Auth::from_byte(auth), bytes.to_vec());
}

pub fn run_session(data: &[u8]) {
    let mut bytes = startup_packet();
    bytes.extend_from_slice(data);
    run_connection(Auth::LoopbackTrust, bytes);
}

/// One connection that sends `bytes`, on the scratch database.
fn run_connection(auth: Auth, bytes: Vec<u8>) {
    with_scratch_db(|db| {
        let context = Arc::new(ServerContext::new(db.clone(), 8).with_security(auth.config(), None, false));
        connect(context, auth.peer(), bytes);
        check_tables(&db.snapshot());
    });
}

/// Serves one connection that sends `bytes`, to its end.
fn connect(context: Arc<ServerContext>, peer: SocketAddr, bytes: Vec<u8>) {
    let peer = Some(peer);
    runtime().block_on(async move {
        let (_stop, shutdown) = watch::channel(false);
        let (client, server_end) = tokio::io::duplex(64 << 10);
        let connection = tokio::spawn(serve_stream(server_end, peer, context.clone(), shutdown.clone()));
        let (mut from_server, mut to_server) = tokio::io::split(client);
        let key: Arc<Mutex<Option<(i32, i32)>>> = Arc::default();
        let reader_key = key.clone();
        let reader = tokio::spawn(async move {
            // The BackendKeyData comes right after authentication: it is looked for in
            // the first replies only.
            let mut seen = Some(Vec::new());
            let mut buf = vec![0u8; 16 << 10];
            while let Ok(n) = from_server.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                if let Some(first) = seen.as_mut() {
                    first.extend_from_slice(&buf[..n]);
                    if let Some(found) = backend_key(first) {
                        *reader_key.lock().expect("key poisoned") = Some(found);
                        seen = None;
                    } else if first.len() > 64 << 10 {
                        seen = None;
                    }
                }
            }
        });
        // The server may close first (a FATAL error): what it did not read is dropped.
        let _ = to_server.write_all(&bytes).await;
        let _ = to_server.shutdown().await;
        let watchdog = async {
            tokio::time::sleep(BUDGET).await;
            loop {
                let found = *key.lock().expect("key poisoned");
                if let Some((pid, secret)) = found {
                    cancel(&context, peer, shutdown.clone(), pid, secret).await;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::select! {
            ended = connection => {
                // An error ends a connection (bad bytes do); a panic is a finding.
                let _ = ended.expect("the connection's task does not panic");
            }
            _ = watchdog => unreachable!("the watchdog loops until the connection ends"),
        }
        reader.await.expect("the reader does not panic");
    });
}

/// The BackendKeyData in `replies`, if there: 'K', length 12, process id, secret key.
fn backend_key(replies: &[u8]) -> Option<(i32, i32)> {
    let at = replies.windows(5).position(|w| w == [b'K', 0, 0, 0, 12])?;
    let field = |i: usize| {
        replies
            .get(at + 5 + 4 * i..at + 9 + 4 * i)
            .map(|b| i32::from_be_bytes(b.try_into().expect("4 bytes")))
    };
    Some((field(0)?, field(1)?))
}

/// A CancelRequest on a connection of its own, as a client sends one.
async fn cancel(
    context: &Arc<ServerContext>,
    peer: Option<SocketAddr>,
    shutdown: watch::Receiver<bool>,
    pid: i32,
    secret: i32,
) {
    let (mut client, server_end) = tokio::io::duplex(64);
    let connection = tokio::spawn(serve_stream(server_end, peer, context.clone(), shutdown));
    let mut packet = 16i32.to_be_bytes().to_vec();
    packet.extend_from_slice(&CANCEL_REQUEST_CODE.to_be_bytes());
    packet.extend_from_slice(&pid.to_be_bytes());
    packet.extend_from_slice(&secret.to_be_bytes());
    let _ = client.write_all(&packet).await;
    let _ = client.shutdown().await;
    let _ = connection.await;
}
