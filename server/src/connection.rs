//! One client connection, on the async side: the startup exchange, then the message
//! loop. Each batch of messages that has arrived is handed to the connection's session
//! (`worker`) in one call, and its replies are written in one write once a Sync, Flush or
//! Query asks for them (one send per round trip, also for a pipeline of many
//! Bind/Execute). A message whose commit must wait for durability stops the call: its
//! wait is awaited here, then the rest of the batch runs.
//!
//! Startup, as PostgreSQL does it:
//! 1. SSLRequest: 'S' and a TLS handshake when a certificate is configured, else 'N' (the
//!    client goes on in plain text); GSSENCRequest: 'N'. With `tls_required`, a startup
//!    packet on a plain connection is refused (FATAL 28000).
//! 2. CancelRequest (on a connection of its own): if the process id and secret key match
//!    a connection's BackendKeyData, that session's running or waiting statement is
//!    cancelled (`db::sessions::CancelHandle`); either way the connection just closes.
//! 3. Authentication (`auth`): trust, SCRAM-SHA-256 or md5; a failure ends the connection
//!    with FATAL 28P01 (28000 when refused outright).
//! 4. The startup packet's `options` (`-c name=value`) are applied as SETs: a bad one
//!    ends the connection with FATAL (42704 for an unknown name, 22023 for a bad value).
//! 5. AuthenticationOk, the parameter statuses drivers expect, BackendKeyData (the
//!    session's SID as the process id, and a random secret key), ReadyForQuery.
//!
//! Everything up to the end of authentication must happen within
//! [`AUTHENTICATION_TIMEOUT`], so a client that connects and says nothing does not hold a
//! slot forever. A message over [`MAX_MESSAGE_BYTES`] or that does not decode ends this
//! connection with an error; the server goes on serving the others. So does a client that
//! stops reading: a reply of which it takes no byte for `client_send_timeout` ends its
//! connection, and its session rolls back, releasing its locks (a task blocked in a send
//! would hold them for as long as the client lives).

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use db::sessions::{CancelHandle, DbEvent, NetStat};
use db::Database;
use pgwire::error::PgWireError;
use pgwire::messages::response::{ReadyForQuery, TransactionStatus};
use pgwire::messages::startup::{Authentication, BackendKeyData, NegotiateProtocolVersion, SecretKey};
use pgwire::messages::{DecodeContext, PgWireBackendMessage, PgWireFrontendMessage, ProtocolVersion};
use redo::clock::Stamp;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::timeout_at;

use crate::auth::{self, AuthConfig, Plan, ScramError};
use crate::client_sql::{self, ClientSettings};
use crate::protocol::{error_response, Awaited, SessionState, SqlError};
use crate::tls::Tls;
use crate::worker::{LiveSessions, SessionWorker, WorkerGone};

/// The largest message a client may send.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;
/// The largest startup packet (PostgreSQL's limit).
const MAX_STARTUP_BYTES: usize = 10_000;
/// The largest password or SASL message (PostgreSQL's PG_MAX_AUTH_TOKEN_LENGTH).
const MAX_AUTH_MESSAGE_BYTES: usize = 65_535;
/// From connecting to being authenticated, at most (PostgreSQL's authentication_timeout).
pub const AUTHENTICATION_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a reply waits for a client that takes none of its bytes, unless configured.
pub const DEFAULT_CLIENT_SEND_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a connection's last message (a FATAL error) waits for the client to take it.
const FATAL_SEND_TIMEOUT: Duration = Duration::from_secs(5);
const SSL_REQUEST_CODE: i32 = 80877103;
const GSSENC_REQUEST_CODE: i32 = 80877104;
const CANCEL_REQUEST_CODE: i32 = 80877102;

/// What every connection shares.
pub struct ServerContext {
    pub db: Arc<Database>,
    pub max_connections: usize,
    pub live_sessions: Arc<LiveSessions>,
    pub auth: AuthConfig,
    /// Set when a certificate is configured: SSLRequest is then accepted.
    pub tls: Option<Tls>,
    /// Refuse clients that start without TLS.
    pub tls_required: bool,
    /// How long a reply may wait for the client to take any of its bytes.
    pub client_send_timeout: Duration,
    connections: AtomicUsize,
    /// Whether the only connection's WAIT commit may write the log itself (see
    /// `with_foreground_log_writes`).
    foreground_log_writes: bool,
    next_id: AtomicU32,
    /// The cancel key of each authenticated connection, by its id (the "process id" of
    /// BackendKeyData).
    cancel_keys: Mutex<HashMap<i32, CancelTarget>>,
}

struct CancelTarget {
    secret: i32,
    handle: CancelHandle,
}

impl ServerContext {
    /// A context with loopback trust and without TLS (see `with_security`).
    pub fn new(db: Arc<Database>, max_connections: usize) -> ServerContext {
        ServerContext {
            db,
            max_connections,
            live_sessions: Arc::new(LiveSessions::default()),
            auth: AuthConfig::default(),
            tls: None,
            tls_required: false,
            client_send_timeout: DEFAULT_CLIENT_SEND_TIMEOUT,
            connections: AtomicUsize::new(0),
            foreground_log_writes: false,
            next_id: AtomicU32::new(1),
            cancel_keys: Mutex::new(HashMap::new()),
        }
    }

    /// With this authentication, TLS acceptor and TLS requirement.
    pub fn with_security(self, auth: AuthConfig, tls: Option<Tls>, tls_required: bool) -> ServerContext {
        assert!(!tls_required || tls.is_some(), "tls_required without a certificate");
        ServerContext { auth, tls, tls_required, ..self }
    }

    /// Whether the WAIT commit of the server's only connection writes the log itself when
    /// the log writer is idle, instead of posting it and awaiting its wake-up: a lone
    /// client's commit then saves two thread hand-offs. With two connections or more it
    /// never does: a worker held in a sync delays every request that arrives on it
    /// (measured: a rule of "no other request in progress" lost 2-19% at 8 clients, see
    /// `worker.rs`). The write holds its worker thread for one write and sync (or for as
    /// long as a stalled disk holds it), so a server of ONE worker thread never does it:
    /// its listener and a cancel request's connection would wait with it.
    pub fn with_foreground_log_writes(self, foreground_log_writes: bool) -> ServerContext {
        ServerContext { foreground_log_writes, ..self }
    }

    /// With this bound on a reply's wait for the client to read.
    pub fn with_client_send_timeout(self, client_send_timeout: Duration) -> ServerContext {
        assert!(!client_send_timeout.is_zero(), "a zero send timeout would end every connection");
        ServerContext { client_send_timeout, ..self }
    }

    fn cancel_keys(&self) -> std::sync::MutexGuard<'_, HashMap<i32, CancelTarget>> {
        self.cancel_keys.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A CancelRequest: cancels the statement of connection `pid` if `secret` is its key.
    /// A wrong key does nothing, and the client is told nothing either way.
    fn cancel(&self, pid: i32, secret: i32) {
        let handle = match self.cancel_keys().get(&pid) {
            Some(target) if target.secret == secret => target.handle.clone(),
            Some(_) => {
                log::warn!("cancel request for connection {pid} with a wrong key: ignored");
                return;
            }
            None => {
                log::debug!("cancel request for connection {pid}, which is not open");
                return;
            }
        };
        log::info!("cancel request for connection {pid} (sid {})", handle.sid());
        handle.cancel();
    }

    /// Cancels the call of every connection (shutdown, once the calls in flight had their
    /// time): each fails with 57014, a commit still waiting for a log file among them
    /// (`log file switch (checkpoint incomplete)` while images cannot be written).
    /// Returns how many connections there were.
    pub fn cancel_all_calls(&self) -> usize {
        let keys = self.cancel_keys();
        for target in keys.values() {
            target.handle.cancel();
        }
        keys.len()
    }
}

/// Forgets a connection's cancel key when the connection ends.
struct CancelKey<'a> {
    context: &'a ServerContext,
    pid: i32,
}

impl Drop for CancelKey<'_> {
    fn drop(&mut self) {
        self.context.cancel_keys().remove(&self.pid);
    }
}

/// Why a connection ended early.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error("protocol violation: {0}")]
    Protocol(String),
    #[error("message of {0} bytes is over the limit of {MAX_MESSAGE_BYTES}")]
    TooLarge(usize),
    #[error(transparent)]
    WorkerGone(#[from] WorkerGone),
    #[error("the client did not complete its startup and authentication within {AUTHENTICATION_TIMEOUT:?}")]
    AuthenticationTimeout,
    #[error("TLS handshake: {0}")]
    Tls(io::Error),
    #[error("the client took none of a reply's bytes for {0:?}: it is not reading")]
    ClientNotReading(Duration),
}

/// Frees a connection slot when the connection ends.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn encode(message: PgWireBackendMessage, out: &mut BytesMut) {
    message.encode(out).expect("startup messages are small");
}

/// Writes `bytes` and flushes them (a TLS stream holds written bytes until flushed).
async fn send<S: AsyncWrite + Unpin>(stream: &mut S, bytes: &[u8]) -> io::Result<()> {
    stream.write_all(bytes).await?;
    stream.flush().await
}

/// Writes `bytes` and flushes them, failing if the client takes no byte for `limit`: a
/// slow reader may take its time over a large reply, one that stopped reading may not.
async fn send_within<S: AsyncWrite + Unpin>(
    stream: &mut S,
    mut bytes: &[u8],
    limit: Duration,
) -> Result<(), ConnectionError> {
    let stalled = || ConnectionError::ClientNotReading(limit);
    while !bytes.is_empty() {
        match tokio::time::timeout(limit, stream.write(bytes)).await {
            Err(_) => return Err(stalled()),
            Ok(Ok(0)) => return Err(io::Error::from(io::ErrorKind::WriteZero).into()),
            Ok(Ok(n)) => bytes = &bytes[n..],
            Ok(Err(e)) => return Err(e.into()),
        }
    }
    tokio::time::timeout(limit, stream.flush()).await.map_err(|_| stalled())??;
    Ok(())
}

/// Sends a FATAL error, the connection's last message (bounded: see `send_within`).
async fn send_fatal<S: AsyncWrite + Unpin>(stream: &mut S, error: SqlError) -> Result<(), ConnectionError> {
    let mut out = BytesMut::new();
    encode(error_response("FATAL", &error), &mut out);
    send_within(stream, &out, FATAL_SEND_TIMEOUT).await
}

/// The startup packet's fields.
struct Startup {
    minor_version: u16,
    parameters: BTreeMap<String, String>,
}

/// The first packet of a connection (or the one after a TLS handshake).
enum Packet {
    Startup(Startup),
    SslRequest,
    GssEncRequest,
    Cancel {
        pid: i32,
        secret: i32,
    },
    /// A protocol version other than 3.x.
    Unsupported(i32),
}

/// Reads a startup-phase packet (a length, a code, a body). None for a client that left.
async fn read_packet<S: AsyncRead + Unpin>(stream: &mut S) -> Result<Option<Packet>, ConnectionError> {
    let mut length = [0u8; 4];
    if stream.read_exact(&mut length).await.is_err() {
        return Ok(None);
    }
    let length = i32::from_be_bytes(length);
    if !(8..=MAX_STARTUP_BYTES as i32).contains(&length) {
        return Err(ConnectionError::Protocol(format!("invalid startup packet length {length}")));
    }
    let mut body = vec![0u8; length as usize - 4];
    stream.read_exact(&mut body).await?;
    let code = i32::from_be_bytes(body[..4].try_into().expect("4 bytes"));
    Ok(Some(match code {
        SSL_REQUEST_CODE => Packet::SslRequest,
        GSSENC_REQUEST_CODE => Packet::GssEncRequest,
        CANCEL_REQUEST_CODE => {
            // Protocol 3.0 keys are 4 bytes; a longer one (3.2) matches no key of ours.
            if body.len() != 12 {
                return Ok(Some(Packet::Cancel { pid: 0, secret: 0 }));
            }
            let pid = i32::from_be_bytes(body[4..8].try_into().expect("4 bytes"));
            let secret = i32::from_be_bytes(body[8..12].try_into().expect("4 bytes"));
            Packet::Cancel { pid, secret }
        }
        _ if code >> 16 == 3 => {
            let mut fields = body[4..].split(|b| *b == 0).map(|f| String::from_utf8_lossy(f).into_owned());
            let mut parameters = BTreeMap::new();
            while let Some(name) = fields.next().filter(|n| !n.is_empty()) {
                parameters.insert(name, fields.next().unwrap_or_default());
            }
            Packet::Startup(Startup { minor_version: (code & 0xffff) as u16, parameters })
        }
        _ => Packet::Unsupported(code),
    }))
}

/// Reads the client's answer to an authentication request (a 'p' message: password,
/// SASLInitialResponse or SASLResponse; which one is known from the request). None when
/// the client closed the connection instead (psql does, to ask the user for a password).
async fn read_password_message<S: AsyncRead + Unpin>(
    stream: &mut S,
) -> Result<Option<Vec<u8>>, ConnectionError> {
    let mut header = [0u8; 5];
    if stream.read_exact(&mut header).await.is_err() {
        return Ok(None);
    }
    if header[0] != b'p' {
        return Err(ConnectionError::Protocol(format!(
            "expected a password response, got a message of type {:?}",
            header[0] as char
        )));
    }
    let length = i32::from_be_bytes(header[1..].try_into().expect("4 bytes"));
    if !(4..=(MAX_AUTH_MESSAGE_BYTES + 4) as i32).contains(&length) {
        return Err(ConnectionError::Protocol(format!("invalid password message length {length}")));
    }
    let mut body = vec![0u8; length as usize - 4];
    stream.read_exact(&mut body).await?;
    Ok(Some(body))
}

/// The text of a password message (a C string).
fn password_text(body: &[u8]) -> String {
    let end = body.iter().position(|b| *b == 0).unwrap_or(body.len());
    String::from_utf8_lossy(&body[..end]).into_owned()
}

/// SASLInitialResponse: the mechanism (a C string), then the length of the data (-1 for
/// none) and the data.
fn sasl_initial_response(body: &[u8]) -> Result<(String, &[u8]), ConnectionError> {
    let malformed = || ConnectionError::Protocol("malformed SASLInitialResponse".into());
    let end = body.iter().position(|b| *b == 0).ok_or_else(malformed)?;
    let mechanism = String::from_utf8_lossy(&body[..end]).into_owned();
    let rest = &body[end + 1..];
    let length = i32::from_be_bytes(rest.get(..4).ok_or_else(malformed)?.try_into().expect("4 bytes"));
    let data = &rest[4..];
    match length {
        -1 => Ok((mechanism, &[])),
        n if n >= 0 && n as usize == data.len() => Ok((mechanism, data)),
        _ => Err(malformed()),
    }
}

fn password_failed(user: &str) -> SqlError {
    SqlError::new("28P01", format!("password authentication failed for user \"{user}\""))
}

/// Authenticates `user` as the configuration says. Returns whether the client may go on;
/// a failure has already been reported to the client. A SCRAM exchange leaves its final
/// message in `out`, to go ahead of AuthenticationOk.
async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    context: &ServerContext,
    user: &str,
    peer: Option<SocketAddr>,
    channel_binding: Option<Vec<u8>>,
    out: &mut BytesMut,
) -> Result<bool, ConnectionError> {
    let who = || format!("{} from {}", user, peer.map_or("?".to_string(), |p| p.to_string()));
    let fail = |error: SqlError| {
        log::warn!("authentication of {}: {}", who(), error.message);
        error
    };
    match context.auth.plan(user, peer.map(|p| p.ip())) {
        Plan::Accept => Ok(true),
        Plan::Refuse(message) => {
            send_fatal(stream, fail(SqlError::new("28000", message))).await?;
            Ok(false)
        }
        Plan::Md5(stored) => {
            let salt = auth::random_bytes::<4>();
            let mut request = BytesMut::new();
            encode(
                PgWireBackendMessage::Authentication(Authentication::MD5Password(salt.to_vec())),
                &mut request,
            );
            send(stream, &request).await?;
            let Some(body) = read_password_message(stream).await? else { return Ok(false) };
            if auth::md5_response_matches(stored.as_deref(), &salt, &password_text(&body)) {
                return Ok(true);
            }
            send_fatal(stream, fail(password_failed(user))).await?;
            Ok(false)
        }
        Plan::Scram(verifier) => {
            let mut exchange = context.auth.scram(user, verifier, channel_binding);
            let mut request = BytesMut::new();
            let mechanisms = exchange.mechanisms();
            encode(PgWireBackendMessage::Authentication(Authentication::SASL(mechanisms)), &mut request);
            send(stream, &request).await?;
            let Some(body) = read_password_message(stream).await? else { return Ok(false) };
            let (mechanism, data) = sasl_initial_response(&body)?;
            let outcome = match exchange.client_first(&mechanism, data) {
                Ok(server_first) => {
                    request.clear();
                    let data = Bytes::from(server_first.into_bytes());
                    encode(
                        PgWireBackendMessage::Authentication(Authentication::SASLContinue(data)),
                        &mut request,
                    );
                    send(stream, &request).await?;
                    let Some(body) = read_password_message(stream).await? else { return Ok(false) };
                    exchange.client_final(&body)
                }
                Err(e) => Err(e),
            };
            let error = match outcome {
                Ok(server_final) => {
                    let data = Bytes::from(server_final.into_bytes());
                    encode(PgWireBackendMessage::Authentication(Authentication::SASLFinal(data)), out);
                    return Ok(true);
                }
                Err(ScramError::WrongPassword) => password_failed(user),
                Err(e @ ScramError::Protocol(_)) => SqlError::new("08P01", e.to_string()),
            };
            send_fatal(stream, fail(error)).await?;
            Ok(false)
        }
    }
}

/// Takes the next whole message out of `input`, if one has arrived.
fn next_message(input: &mut BytesMut) -> Result<Option<PgWireFrontendMessage>, ConnectionError> {
    if input.len() < 5 {
        return Ok(None);
    }
    let kind = input[0];
    let length = i32::from_be_bytes(input[1..5].try_into().expect("4 bytes"));
    if length < 4 {
        return Err(ConnectionError::Protocol(format!("invalid message length {length}")));
    }
    let length = length as usize;
    if length > MAX_MESSAGE_BYTES {
        return Err(ConnectionError::TooLarge(length));
    }
    if input.len() < 1 + length {
        input.reserve(1 + length - input.len());
        return Ok(None);
    }
    // Decoded from its own buffer: a body shorter than its fields must not read into
    // the next message.
    let mut frame = input.split_to(1 + length);
    let mut context = DecodeContext::new(ProtocolVersion::PROTOCOL3_0);
    context.awaiting_frontend_ssl = false;
    context.awaiting_frontend_startup = false;
    // pgwire's decoders index into the body without checking its length, so a truncated
    // body panics; that is a malformed message, not a server failure.
    let decoded = quietly_catching_panics(|| PgWireFrontendMessage::decode(&mut frame, &context));
    match decoded {
        Ok(Ok(Some(message))) => Ok(Some(message)),
        Ok(Ok(None)) => {
            Err(ConnectionError::Protocol(format!("incomplete message of type {:?}", kind as char)))
        }
        Ok(Err(PgWireError::InvalidMessageType(kind))) => {
            Err(ConnectionError::Protocol(format!("invalid frontend message type {:?}", kind as char)))
        }
        Ok(Err(e)) => Err(ConnectionError::Protocol(e.to_string())),
        Err(_) => Err(ConnectionError::Protocol(format!("malformed message of type {:?}", kind as char))),
    }
}

thread_local! {
    /// Set while a decoder runs whose panics are caught and reported as errors.
    static PANICS_ARE_EXPECTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `decode`, turning a panic into `Err(())` without the panic message and backtrace
/// on stderr (the hook installed here stays silent only on a thread inside this call).
fn quietly_catching_panics<T>(decode: impl FnOnce() -> T) -> Result<T, ()> {
    static INSTALL_HOOK: std::sync::Once = std::sync::Once::new();
    INSTALL_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !PANICS_ARE_EXPECTED.with(|expected| expected.get()) {
                previous(info);
            }
        }));
    });
    PANICS_ARE_EXPECTED.with(|expected| expected.set(true));
    let result = catch_unwind(AssertUnwindSafe(decode));
    PANICS_ARE_EXPECTED.with(|expected| expected.set(false));
    result.map_err(|_| ())
}

/// Serves one connection to its end: the startup packets (TLS negotiation, a cancel
/// request), then the session, in plain text or over TLS.
pub async fn serve(
    stream: TcpStream,
    context: Arc<ServerContext>,
    shutdown: watch::Receiver<bool>,
) -> Result<(), ConnectionError> {
    stream.set_nodelay(true)?;
    let peer = stream.peer_addr().ok();
    serve_stream(stream, peer, context, shutdown).await
}

/// As [`serve`], on any byte stream from a client at `peer` (which authentication
/// looks at): the fuzz targets drive connections through in-memory pipes with it.
pub async fn serve_stream<S: AsyncRead + AsyncWrite + Unpin + Send>(
    mut stream: S,
    peer: Option<SocketAddr>,
    context: Arc<ServerContext>,
    shutdown: watch::Receiver<bool>,
) -> Result<(), ConnectionError> {
    let deadline = tokio::time::Instant::now() + AUTHENTICATION_TIMEOUT;
    loop {
        let packet = timeout_at(deadline, read_packet(&mut stream))
            .await
            .map_err(|_| ConnectionError::AuthenticationTimeout)??;
        match packet {
            None => return Ok(()),
            Some(Packet::SslRequest) => {
                let Some(tls) = &context.tls else {
                    send(&mut stream, b"N").await?;
                    continue;
                };
                // Nothing may follow the SSLRequest before the handshake (the client waits
                // for the answer): bytes sent early would be taken as TLS records and fail
                // the handshake, never read as protocol messages.
                send(&mut stream, b"S").await?;
                let channel_binding = tls.server_end_point.as_ref().map(|data| data.to_vec());
                let mut tls = timeout_at(deadline, tls.acceptor.accept(stream))
                    .await
                    .map_err(|_| ConnectionError::AuthenticationTimeout)?
                    .map_err(ConnectionError::Tls)?;
                let packet = timeout_at(deadline, read_packet(&mut tls))
                    .await
                    .map_err(|_| ConnectionError::AuthenticationTimeout)??;
                return match packet {
                    None => Ok(()),
                    Some(Packet::Startup(startup)) => {
                        let security = Security { deadline, channel_binding };
                        serve_session(tls, startup, peer, context, shutdown, security).await
                    }
                    Some(Packet::Cancel { pid, secret }) => {
                        context.cancel(pid, secret);
                        Ok(())
                    }
                    Some(Packet::SslRequest | Packet::GssEncRequest) => {
                        Err(ConnectionError::Protocol("encryption requested twice".into()))
                    }
                    Some(Packet::Unsupported(code)) => send_fatal(&mut tls, unsupported(code)).await,
                };
            }
            Some(Packet::GssEncRequest) => send(&mut stream, b"N").await?,
            Some(Packet::Cancel { pid, secret }) => {
                context.cancel(pid, secret);
                return Ok(());
            }
            Some(Packet::Startup(startup)) => {
                if context.tls_required {
                    let user = startup.parameters.get("user").cloned().unwrap_or_default();
                    let message = format!(
                        "the server requires TLS (tls_required = true): user \"{user}\" connected \
                         without encryption; connect with sslmode=require"
                    );
                    log::warn!("connection from {}: {message}", peer.map_or("?".into(), |p| p.to_string()));
                    return send_fatal(&mut stream, SqlError::new("28000", message)).await;
                }
                let security = Security { deadline, channel_binding: None };
                return serve_session(stream, startup, peer, context, shutdown, security).await;
            }
            Some(Packet::Unsupported(code)) => return send_fatal(&mut stream, unsupported(code)).await,
        }
    }
}

fn unsupported(code: i32) -> SqlError {
    SqlError::new("0A000", format!("unsupported frontend protocol {}.{}", code >> 16, code & 0xffff))
}

/// What the authentication of a connection needs to know besides the client's messages.
struct Security {
    /// The end of the authentication timeout.
    deadline: tokio::time::Instant,
    /// The `tls-server-end-point` data on a TLS connection (SCRAM-SHA-256-PLUS).
    channel_binding: Option<Vec<u8>>,
}

/// The session of a connection whose startup packet has arrived, on `stream` (plain or
/// TLS), to its end; then closes the stream cleanly (a TLS close_notify).
async fn serve_session<S: AsyncRead + AsyncWrite + Unpin + Send>(
    mut stream: S,
    startup: Startup,
    peer: Option<SocketAddr>,
    context: Arc<ServerContext>,
    shutdown: watch::Receiver<bool>,
    security: Security,
) -> Result<(), ConnectionError> {
    let result = run_session(&mut stream, startup, peer, &context, shutdown, security).await;
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.shutdown()).await;
    result
}

async fn run_session<S: AsyncRead + AsyncWrite + Unpin + Send>(
    stream: &mut S,
    startup: Startup,
    peer: Option<SocketAddr>,
    context: &ServerContext,
    mut shutdown: watch::Receiver<bool>,
    security: Security,
) -> Result<(), ConnectionError> {
    let _slot = Slot(&context.connections);
    if context.connections.fetch_add(1, Ordering::SeqCst) >= context.max_connections {
        return send_fatal(stream, SqlError::new("53300", "sorry, too many clients already")).await;
    }
    let user = startup.parameters.get("user").cloned().unwrap_or_default();
    let mut out = BytesMut::with_capacity(1024);
    let authenticated = timeout_at(
        security.deadline,
        authenticate(stream, context, &user, peer, security.channel_binding, &mut out),
    )
    .await
    .map_err(|_| ConnectionError::AuthenticationTimeout)??;
    if !authenticated {
        return Ok(());
    }
    let mut settings = ClientSettings::new(&user);
    if let Err(e) = settings.apply_startup(&startup.parameters) {
        return send_fatal(stream, e.into()).await;
    }
    let mut options = match startup.parameters.get("options").map(|o| client_sql::startup_options(o)) {
        None => Vec::new(),
        Some(Ok(options)) => options,
        Some(Err(e)) => return send_fatal(stream, e.into()).await,
    };
    // As in PostgreSQL, a setting sent as a startup parameter of its own (psql's
    // application_name) wins over the same setting in `options`.
    options.retain(|(name, _)| !startup.parameters.keys().any(|p| p.eq_ignore_ascii_case(name)));
    let id = context.next_id.fetch_add(1, Ordering::Relaxed);
    let db = context.db.clone();
    let session_settings = settings;
    let client = db::sessions::ClientInfo {
        username: user.clone(),
        program: startup.parameters.get("application_name").cloned().unwrap_or_default(),
        machine: peer.map(|a| a.to_string()).unwrap_or_default(),
    };
    let mut worker =
        SessionWorker::open(format!("redodb-session-{id}"), context.live_sessions.clone(), move || {
            let mut session = db.session();
            // WAIT commits leave their wait to this connection, which awaits it.
            session.set_deferred_durability(true);
            session.set_client_info(client);
            SessionState::new(session, session_settings)
        });
    log::debug!("connection {id}: user {user:?}, parameters {:?}", startup.parameters);
    // The startup options are SETs in the new session; a bad one ends the connection
    // after authentication, as in PostgreSQL.
    let started = worker
        .call(move |state: &mut SessionState| {
            state.apply_startup_options(&options)?;
            let session = state.session();
            let timed = session.timed_statistics();
            Ok::<_, SqlError>((session.sid(), session.cancel_handle(), state.reported_settings(), timed))
        })
        .await?;
    let (sid, handle, reported, mut timed) = match started {
        Ok(started) => started,
        Err(error) => {
            log::warn!("connection {id}: startup options of user {user:?} refused: {}", error.message);
            encode(PgWireBackendMessage::Authentication(Authentication::Ok), &mut out);
            send_within(stream, &out, context.client_send_timeout).await?;
            return send_fatal(stream, error).await;
        }
    };
    // The key a CancelRequest must present: the session's SID (the backend's "process
    // id", which `pg_backend_pid()` returns too and `v$session` shows), and a random
    // secret. (After 2^31 sessions the process id wraps; two sessions that far apart are
    // not open together.)
    let pid = (sid % (1 << 31)) as i32;
    let secret = i32::from_be_bytes(auth::random_bytes::<4>());
    context.cancel_keys().insert(pid, CancelTarget { secret, handle });
    let _cancel_key = CancelKey { context, pid };

    if startup.minor_version > 0 {
        // Protocol 3.x with x > 0: answer with the newest we speak, 3.0, and the
        // protocol options we do not know.
        let options = startup.parameters.keys().filter(|k| k.starts_with("_pq_.")).cloned().collect();
        encode(
            PgWireBackendMessage::NegotiateProtocolVersion(NegotiateProtocolVersion::new(0, options)),
            &mut out,
        );
    }
    encode(PgWireBackendMessage::Authentication(Authentication::Ok), &mut out);
    let mut reply = crate::protocol::Reply::default();
    for (name, value) in reported {
        reply.parameter_status(name, value);
    }
    out.extend_from_slice(&reply.take());
    encode(PgWireBackendMessage::BackendKeyData(BackendKeyData::new(pid, SecretKey::I32(secret))), &mut out);
    encode(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(TransactionStatus::Idle)), &mut out);
    send_within(stream, &out, context.client_send_timeout).await?;
    out.clear();

    // The time model of a request (see `db`'s call_clock): a client call opens when the
    // server takes up messages that arrived (`SQL*Net message from client`, idle, ends
    // there) and closes once the reply is sent (`SQL*Net message to client`, inside it);
    // a request that needs more messages before its reply (a pipeline before its Sync, a
    // COPY FROM STDIN's data after its CopyInResponse, up to its end) stays open, and the
    // wait for them is `SQL*Net more data from client`.
    // Its DB time holds the server's work, the durability waits awaited here and these
    // network waits. Stamps are read only while the session times its calls (`timed`, as
    // of its last call: `timed_statistics`).
    let mut traffic = ClientTraffic::default();
    let mut waiting_since = timed.then(Stamp::now);
    let mut request_open = false;
    let mut copying_in = false;
    let mut input = BytesMut::with_capacity(8192);
    loop {
        let mut batch = std::collections::VecDeque::new();
        let mut wants_reply = false;
        let mut terminate = false;
        let mut fatal = None;
        loop {
            match next_message(&mut input) {
                Ok(Some(PgWireFrontendMessage::Terminate(_))) => {
                    terminate = true;
                    break;
                }
                Ok(Some(message)) => {
                    wants_reply |= matches!(
                        message,
                        PgWireFrontendMessage::Query(_)
                            | PgWireFrontendMessage::Sync(_)
                            | PgWireFrontendMessage::Flush(_)
                            // The end of a COPY FROM STDIN's data: its CommandComplete.
                            | PgWireFrontendMessage::CopyDone(_)
                            | PgWireFrontendMessage::CopyFail(_)
                    );
                    batch.push_back(message);
                }
                Ok(None) => break,
                Err(e) => {
                    fatal = Some(e);
                    break;
                }
            }
        }
        let batch_taken = !batch.is_empty();
        if batch_taken {
            let arrived = timed.then(Stamp::now);
            // The wait that just ended: for the next request, or for the rest of this one.
            let event = if request_open {
                DbEvent::SqlNetMoreDataFromClient
            } else {
                DbEvent::SqlNetMessageFromClient
            };
            let waited = waiting_since.zip(arrived).map_or(Duration::ZERO, |(since, now)| now.since(since));
            let mut account = Some(std::mem::take(&mut traffic));
            // (Read without a lock: a connection opened just after costs its client one
            // write's time at most.)
            let write_log_here =
                context.foreground_log_writes && context.connections.load(Ordering::Relaxed) == 1;
            while !batch.is_empty() {
                let (replies, awaited, timed_now, copying) = worker
                    .call(|state: &mut SessionState| {
                        state.session_mut().set_foreground_log_write(write_log_here);
                        if let Some(account) = account.take() {
                            let session = state.session_mut();
                            session.client_call_begin(arrived);
                            match event {
                                // Shown as the session's wait since the request paused.
                                DbEvent::SqlNetMoreDataFromClient => session.end_wait(event, Some(waited)),
                                _ => session.record_wait(event, waited),
                            }
                            account.record(session);
                        }
                        let (replies, awaited) = state.handle_messages(&mut batch);
                        (replies, awaited, state.session().timed_statistics(), state.copying_in())
                    })
                    .await?;
                if let Some(error) = terminated(&context.db) {
                    // Nothing this call read or did may reach the client: the instance
                    // stopped serving while it ran.
                    out.clear();
                    return send_fatal(stream, error).await;
                }
                timed = timed_now;
                copying_in = copying;
                request_open = true;
                out.extend_from_slice(&replies);
                match awaited {
                    Awaited::Nothing => {}
                    // A row lock's wait: this worker serves the other connections
                    // meanwhile, and the next call runs the Execute again. Looked at again
                    // after the recheck interval even if no release woke it.
                    Awaited::RowLock(wait) => {
                        let recheck = wait.recheck_after();
                        let _woken = tokio::time::timeout(recheck, wait).await;
                    }
                    // The commit's `log file sync`, awaited here: this worker serves the
                    // other connections meanwhile.
                    Awaited::Durability(durability) => {
                        if let Err(e) = durability.await {
                            // Nothing of this round trip was sent, and nothing may be: the
                            // commit's durability is unknown. The log refuses every later
                            // commit, so the connection ends, as a crash would end it.
                            log::error!("connection {id}: a commit's durability wait failed: {e}");
                            out.clear();
                            return send_fatal(
                                stream,
                                terminated(&context.db).unwrap_or_else(|| SqlError::from(e)),
                            )
                            .await;
                        }
                    }
                }
            }
            // Until more messages arrive: the rest of the request, unless its reply goes
            // now (then the wait starts once it is sent).
            waiting_since = timed.then(Stamp::now);
        }
        if let Some(e) = fatal {
            let sqlstate = if matches!(e, ConnectionError::TooLarge(_)) { "54000" } else { "08P01" };
            encode(error_response("FATAL", &SqlError::new(sqlstate, e.to_string())), &mut out);
            send_within(stream, &out, FATAL_SEND_TIMEOUT).await?;
            return Err(e);
        }
        if (wants_reply || terminate) && request_open {
            let mut reply = None;
            if !out.is_empty() {
                // The other connections with a request ready run first, so that their
                // replies go out close together: a client polling many connections
                // (pgbench's threads) then wakes once for several. pgbench, 32 clients on
                // 2 CPUs, NOWAIT: BATCH 100-106k -> 113-115k transactions/s, update
                // 103-104k -> 109-110k, IMMEDIATE insert and WAIT unchanged.
                tokio::task::yield_now().await;
                let sending = timed.then(Stamp::now);
                // The round trip is counted before the reply goes: a client that has it
                // and asks (from another connection) finds it counted. The send shows as
                // the session's wait meanwhile.
                let bytes = out.len() as u64;
                worker.account(|state: &mut SessionState| {
                    let session = state.session();
                    session.add_net(NetStat::Roundtrips, 1);
                    session.add_net(NetStat::BytesSent, bytes);
                    session.begin_wait(DbEvent::SqlNetMessageToClient, sending);
                })?;
                send_within(stream, &out, context.client_send_timeout).await?;
                let sent = timed.then(Stamp::now);
                reply = Some((sending.zip(sent).map_or(Duration::ZERO, |(a, b)| b.since(a)), sent));
                out.clear();
            }
            let end = reply.and_then(|(_, sent)| sent).or_else(|| timed.then(Stamp::now));
            // A COPY FROM STDIN goes on: its data is still to come.
            let ends = terminate || !copying_in;
            worker.account(|state: &mut SessionState| {
                let session = state.session_mut();
                if let Some((sending, _)) = reply {
                    session.end_wait(DbEvent::SqlNetMessageToClient, Some(sending));
                }
                if ends {
                    session.client_call_end(end);
                } else {
                    session.begin_wait(DbEvent::SqlNetMoreDataFromClient, end);
                }
            })?;
            request_open = !ends;
            waiting_since = end;
        } else if request_open && batch_taken {
            // The request goes on with messages still to come: the session waits for them
            // inside its call, and shows it (v$session, and an AWR snapshot meanwhile).
            worker.account(|state: &mut SessionState| {
                state.session().begin_wait(DbEvent::SqlNetMoreDataFromClient, waiting_since)
            })?;
        }
        if terminate {
            return Ok(());
        }
        if *shutdown.borrow() {
            return send_fatal(stream, shutting_down(&context.db)).await;
        }
        if input.capacity() - input.len() < 4096 {
            input.reserve(8192);
        }
        tokio::select! {
            read = stream.read_buf(&mut input) => {
                let read = read?;
                traffic.bytes_received += read as u64;
                if read == 0 {
                    if input.has_remaining() {
                        log::debug!("connection {id}: client left in the middle of a message");
                    }
                    return Ok(());
                }
            }
            _ = shutdown.changed() => return send_fatal(stream, shutting_down(&context.db)).await,
        }
    }
}

/// Client traffic not yet counted on the session: the bytes read since the last request
/// began, counted as the next one begins.
#[derive(Default)]
struct ClientTraffic {
    bytes_received: u64,
}

impl ClientTraffic {
    fn record(self, session: &db::Session) {
        session.add_net(NetStat::BytesReceived, self.bytes_received);
    }
}

/// Why the server is closing the connection: the instance terminated, or an orderly
/// shutdown.
fn shutting_down(db: &db::Database) -> SqlError {
    terminated(db)
        .unwrap_or_else(|| SqlError::new("57P01", "terminating connection due to administrator command"))
}

/// The FATAL error every connection gets once the instance has terminated (fail-stop).
fn terminated(db: &db::Database) -> Option<SqlError> {
    db.termination().map(|t| SqlError::from(db::DbError::InstanceTerminated(t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_rejects_bad_lengths_and_truncated_bodies() {
        let mut input = BytesMut::from(&b"Q\x00\x00\x00\x02"[..]);
        assert!(matches!(next_message(&mut input), Err(ConnectionError::Protocol(_))));
        let mut input = BytesMut::from(&b"Q\x7f\x00\x00\x00"[..]);
        assert!(matches!(next_message(&mut input), Err(ConnectionError::TooLarge(_))));
        // A Bind whose body stops short of its counts.
        let mut input = BytesMut::from(&b"B\x00\x00\x00\x06\x00\x00"[..]);
        assert!(matches!(next_message(&mut input), Err(ConnectionError::Protocol(_))));
        let mut input = BytesMut::from(&b"Q\x00\x00\x00\x0dSELECT 1\x00S\x00\x00"[..]);
        assert!(matches!(next_message(&mut input), Ok(Some(PgWireFrontendMessage::Query(_)))));
        assert!(matches!(next_message(&mut input), Ok(None)), "a partial Sync waits for more");
    }
}
