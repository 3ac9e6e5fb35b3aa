//! One client connection, on the async side: the startup exchange (SSL declined, trust
//! authentication, the parameter statuses drivers expect), then the message loop. Each
//! batch of messages that has arrived is handed to the connection's dedicated thread in
//! one call, and its replies are written in one write once a Sync, Flush or Query asks
//! for them (one send per round trip, also for a pipeline of many Bind/Execute).
//!
//! A message over [`MAX_MESSAGE_BYTES`] or that does not decode ends this connection
//! with an error; the server goes on serving the others.

use std::collections::BTreeMap;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, BytesMut};
use db::Database;
use pgwire::error::PgWireError;
use pgwire::messages::response::{ReadyForQuery, TransactionStatus};
use pgwire::messages::startup::{Authentication, BackendKeyData, NegotiateProtocolVersion, SecretKey};
use pgwire::messages::{DecodeContext, PgWireBackendMessage, PgWireFrontendMessage, ProtocolVersion};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::client_sql::ClientSettings;
use crate::protocol::{error_response, SessionState, SqlError};
use crate::worker::{LiveThreads, SessionWorker, WorkerGone};

/// The largest message a client may send.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;
/// The largest startup packet (PostgreSQL's limit).
const MAX_STARTUP_BYTES: usize = 10_000;
const SSL_REQUEST_CODE: i32 = 80877103;
const GSSENC_REQUEST_CODE: i32 = 80877104;
const CANCEL_REQUEST_CODE: i32 = 80877102;

/// What every connection shares.
pub struct ServerContext {
    pub db: Arc<Database>,
    pub max_connections: usize,
    pub live_threads: Arc<LiveThreads>,
    connections: AtomicUsize,
    next_id: AtomicU32,
}

impl ServerContext {
    pub fn new(db: Arc<Database>, max_connections: usize) -> ServerContext {
        ServerContext {
            db,
            max_connections,
            live_threads: Arc::new(LiveThreads::default()),
            connections: AtomicUsize::new(0),
            next_id: AtomicU32::new(1),
        }
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
    #[error("could not start the session thread: {0}")]
    Spawn(io::Error),
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

async fn send_fatal(stream: &mut TcpStream, error: SqlError) -> Result<(), ConnectionError> {
    let mut out = BytesMut::new();
    encode(error_response("FATAL", &error), &mut out);
    stream.write_all(&out).await?;
    Ok(())
}

/// The startup packet's fields.
struct Startup {
    minor_version: u16,
    parameters: BTreeMap<String, String>,
}

/// Reads the startup packet, declining SSL and GSS encryption. None for a cancel
/// request (not supported: the connection just closes) or a client that left.
async fn read_startup(stream: &mut TcpStream) -> Result<Option<Startup>, ConnectionError> {
    loop {
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
        match code {
            SSL_REQUEST_CODE | GSSENC_REQUEST_CODE => stream.write_all(b"N").await?,
            CANCEL_REQUEST_CODE => return Ok(None),
            _ if code >> 16 == 3 => {
                let mut fields =
                    body[4..].split(|b| *b == 0).map(|f| String::from_utf8_lossy(f).into_owned());
                let mut parameters = BTreeMap::new();
                while let Some(name) = fields.next().filter(|n| !n.is_empty()) {
                    parameters.insert(name, fields.next().unwrap_or_default());
                }
                return Ok(Some(Startup { minor_version: (code & 0xffff) as u16, parameters }));
            }
            _ => {
                send_fatal(
                    stream,
                    SqlError::new(
                        "0A000",
                        format!("unsupported frontend protocol {}.{}", code >> 16, code & 0xffff),
                    ),
                )
                .await?;
                return Ok(None);
            }
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

/// Serves one connection to its end.
pub async fn serve(
    mut stream: TcpStream,
    context: Arc<ServerContext>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), ConnectionError> {
    stream.set_nodelay(true)?;
    let Some(startup) = read_startup(&mut stream).await? else { return Ok(()) };
    let _slot = Slot(&context.connections);
    if context.connections.fetch_add(1, Ordering::SeqCst) >= context.max_connections {
        return send_fatal(&mut stream, SqlError::new("53300", "sorry, too many clients already")).await;
    }
    let user = startup.parameters.get("user").cloned().unwrap_or_default();
    let mut settings = ClientSettings::new(&user);
    if let Err(e) = settings.apply_startup(&startup.parameters) {
        return send_fatal(&mut stream, e.into()).await;
    }
    let id = context.next_id.fetch_add(1, Ordering::Relaxed);
    let db = context.db.clone();
    let session_settings = settings.clone();
    let client = db::sessions::ClientInfo {
        username: user.clone(),
        program: startup.parameters.get("application_name").cloned().unwrap_or_default(),
        machine: stream.peer_addr().map(|a| a.to_string()).unwrap_or_default(),
    };
    let worker =
        SessionWorker::spawn(format!("redodb-session-{id}"), context.live_threads.clone(), move || {
            let session = db.session();
            session.set_client_info(client);
            SessionState::new(session, session_settings)
        })
        .map_err(ConnectionError::Spawn)?;
    log::debug!("connection {id}: user {user:?}, parameters {:?}", startup.parameters);

    let mut out = BytesMut::with_capacity(1024);
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
    for (name, value) in settings.reported() {
        reply.parameter_status(name, value);
    }
    out.extend_from_slice(&reply.take());
    // Cancel requests are not supported, so the key only needs to be well formed.
    let key = BackendKeyData::new(id as i32, SecretKey::I32(id.wrapping_mul(2_654_435_761) as i32));
    encode(PgWireBackendMessage::BackendKeyData(key), &mut out);
    encode(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(TransactionStatus::Idle)), &mut out);
    stream.write_all(&out).await?;
    out.clear();

    // The session's client traffic, counted here and handed to its thread with the next
    // call: time waiting for the client since the last reply (`SQL*Net message from
    // client`, idle), time sending (`SQL*Net message to client`), round trips and bytes.
    let mut traffic = ClientTraffic::default();
    let mut idle_since = Instant::now();
    let mut input = BytesMut::with_capacity(8192);
    loop {
        let mut batch = Vec::new();
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
                    );
                    batch.push(message);
                }
                Ok(None) => break,
                Err(e) => {
                    fatal = Some(e);
                    break;
                }
            }
        }
        if !batch.is_empty() {
            if traffic.waiting_for_client {
                traffic.from_client = Some(idle_since.elapsed());
                traffic.waiting_for_client = false;
            }
            let account = std::mem::take(&mut traffic);
            let replies = worker
                .call(move |state: &mut SessionState| {
                    account.record(state.session());
                    state.handle_messages(batch)
                })
                .await?;
            out.extend_from_slice(&replies);
        }
        if let Some(e) = fatal {
            let sqlstate = if matches!(e, ConnectionError::TooLarge(_)) { "54000" } else { "08P01" };
            encode(error_response("FATAL", &SqlError::new(sqlstate, e.to_string())), &mut out);
            stream.write_all(&out).await?;
            return Err(e);
        }
        if (wants_reply || terminate) && !out.is_empty() {
            let sending = Instant::now();
            stream.write_all(&out).await?;
            traffic.to_client = Some(sending.elapsed());
            traffic.bytes_sent += out.len() as u64;
            traffic.roundtrips += 1;
            traffic.waiting_for_client = true;
            idle_since = Instant::now();
            out.clear();
        }
        if terminate {
            return Ok(());
        }
        if *shutdown.borrow() {
            return send_fatal(&mut stream, shutting_down()).await;
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
            _ = shutdown.changed() => return send_fatal(&mut stream, shutting_down()).await,
        }
    }
}

/// Client traffic not yet counted on the session.
#[derive(Default)]
struct ClientTraffic {
    waiting_for_client: bool,
    from_client: Option<std::time::Duration>,
    to_client: Option<std::time::Duration>,
    roundtrips: u64,
    bytes_sent: u64,
    bytes_received: u64,
}

impl ClientTraffic {
    fn record(self, session: &db::Session) {
        use db::sessions::{DbEvent, NetStat};
        if let Some(waited) = self.from_client {
            session.record_wait(DbEvent::SqlNetMessageFromClient, waited);
        }
        if let Some(sent) = self.to_client {
            session.record_wait(DbEvent::SqlNetMessageToClient, sent);
        }
        session.add_net(NetStat::Roundtrips, self.roundtrips);
        session.add_net(NetStat::BytesSent, self.bytes_sent);
        session.add_net(NetStat::BytesReceived, self.bytes_received);
    }
}

fn shutting_down() -> SqlError {
    SqlError::new("57P01", "terminating connection due to administrator command")
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
