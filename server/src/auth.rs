//! Client authentication: who may log in, and the two password exchanges PostgreSQL
//! clients speak, SCRAM-SHA-256 (RFC 5802 and RFC 7677, as PostgreSQL runs it over SASL)
//! and md5.
//!
//! The methods (`[auth] method` in the configuration file):
//! - none configured and no users: trust, for loopback clients only (a client from
//!   another host is refused with 28000);
//! - `trust`: everyone, without a password;
//! - `scram-sha-256` (the default when users are configured): the salted challenge and
//!   response; the server never sees the password, and proves it knows the verifier. On
//!   a TLS connection SCRAM-SHA-256-PLUS is offered first, binding the exchange to the
//!   server certificate (RFC 5929 `tls-server-end-point`), as PostgreSQL does; a client
//!   that says it could bind but saw no PLUS ("y") is refused there: a downgrade;
//! - `md5`: `md5` + md5(md5(password + user) + salt). As in PostgreSQL, a user whose
//!   stored secret is a SCRAM verifier logs in with SCRAM instead.
//!
//! The users (`[auth.users]`, name = secret) are stored in the configuration file, never
//! given on the command line. A secret is written as PostgreSQL stores it in
//! `pg_authid.rolpassword`, so verifiers can be copied from a PostgreSQL server:
//! `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` (base64 fields), or
//! `md5<32 hex digits>` (md5 of password + user name), or else the plain password. A
//! plain password is turned into a SCRAM verifier (random salt, 4096 iterations) when
//! the configuration is read, so a scram login derives nothing; md5 needs the plain
//! password or its md5 form.
//!
//! Failures tell the client no more than PostgreSQL does: a wrong password and an unknown
//! user both end with FATAL 28P01 "password authentication failed for user ...", and an
//! unknown user goes through a whole exchange (with a salt derived from the name, stable
//! across attempts) before failing. This module only computes; `connection` moves the
//! messages.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use md5::Md5;
use sha2::{Digest, Sha256};

/// The SASL mechanisms: without channel binding, and with it (TLS connections only).
pub const SCRAM_MECHANISM: &str = "SCRAM-SHA-256";
pub const SCRAM_PLUS_MECHANISM: &str = "SCRAM-SHA-256-PLUS";
/// The only channel binding type PostgreSQL's clients use.
const CHANNEL_BINDING_TYPE: &str = "tls-server-end-point";
/// PBKDF2 iterations for the verifiers derived here (PostgreSQL's default).
pub const SCRAM_ITERATIONS: u32 = 4096;
/// Verifiers with more iterations than this are refused: each login would cost seconds.
const SCRAM_MAX_ITERATIONS: u32 = 10_000_000;
const SCRAM_SALT_BYTES: usize = 16;
/// Random bytes in the server's part of the nonce (PostgreSQL's length).
const SCRAM_NONCE_BYTES: usize = 18;
const KEY_BYTES: usize = 32;

type HmacSha256 = Hmac<Sha256>;

/// How clients prove who they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMethod {
    /// Nothing configured: clients on a loopback address are trusted, others refused.
    LoopbackTrust,
    Trust,
    Md5,
    ScramSha256,
}

impl AuthMethod {
    pub const NAMES: [&'static str; 3] = ["trust", "md5", "scram-sha-256"];

    /// The configuration's name for the method.
    pub fn name(self) -> &'static str {
        match self {
            AuthMethod::LoopbackTrust => "trust (loopback clients only)",
            AuthMethod::Trust => "trust",
            AuthMethod::Md5 => "md5",
            AuthMethod::ScramSha256 => "scram-sha-256",
        }
    }

    pub fn parse(text: &str) -> Option<AuthMethod> {
        match text.to_ascii_lowercase().as_str() {
            "trust" => Some(AuthMethod::Trust),
            "md5" => Some(AuthMethod::Md5),
            "scram-sha-256" => Some(AuthMethod::ScramSha256),
            _ => None,
        }
    }
}

/// A SCRAM-SHA-256 verifier: what the server keeps instead of the password.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramVerifier {
    pub iterations: u32,
    pub salt: Vec<u8>,
    pub stored_key: [u8; KEY_BYTES],
    pub server_key: [u8; KEY_BYTES],
}

impl ScramVerifier {
    /// The verifier of `password` (normalised with SASLprep, as PostgreSQL and libpq do;
    /// a password SASLprep refuses is used as it is, as they do too).
    pub fn from_password(password: &str, salt: &[u8], iterations: u32) -> ScramVerifier {
        let prepared = stringprep::saslprep(password).map(|p| p.into_owned()).unwrap_or(password.to_string());
        let salted: [u8; KEY_BYTES] =
            pbkdf2::pbkdf2_hmac_array::<Sha256, KEY_BYTES>(prepared.as_bytes(), salt, iterations);
        let client_key = hmac(&salted, b"Client Key");
        ScramVerifier {
            iterations,
            salt: salt.to_vec(),
            stored_key: Sha256::digest(client_key).into(),
            server_key: hmac(&salted, b"Server Key"),
        }
    }

    /// Parses PostgreSQL's form `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`.
    pub fn parse(text: &str) -> Option<ScramVerifier> {
        let rest = text.strip_prefix("SCRAM-SHA-256$")?;
        let (params, keys) = rest.split_once('$')?;
        let (iterations, salt) = params.split_once(':')?;
        let (stored, server) = keys.split_once(':')?;
        let iterations: u32 = iterations.parse().ok()?;
        if iterations == 0 || iterations > SCRAM_MAX_ITERATIONS {
            return None;
        }
        let salt = BASE64.decode(salt).ok().filter(|s| !s.is_empty())?;
        Some(ScramVerifier {
            iterations,
            salt,
            stored_key: BASE64.decode(stored).ok()?.try_into().ok()?,
            server_key: BASE64.decode(server).ok()?.try_into().ok()?,
        })
    }
}

/// Shows the parameters, not the keys.
impl fmt::Debug for ScramVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ScramVerifier {{ iterations: {}, .. }}", self.iterations)
    }
}

impl fmt::Display for ScramVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SCRAM-SHA-256${}:{}${}:{}",
            self.iterations,
            BASE64.encode(&self.salt),
            BASE64.encode(self.stored_key),
            BASE64.encode(self.server_key)
        )
    }
}

/// What the server keeps for one user.
#[derive(Clone)]
pub enum Secret {
    /// Kept only where md5 needs it (method md5).
    Plain(String),
    /// md5(password + user name), 32 lowercase hex digits.
    Md5Hex(String),
    Scram(ScramVerifier),
}

impl Secret {
    /// Reads a secret as written in the configuration file.
    pub fn parse(text: &str) -> Secret {
        if let Some(verifier) = ScramVerifier::parse(text) {
            return Secret::Scram(verifier);
        }
        if let Some(hex) = text.strip_prefix("md5") {
            if hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Secret::Md5Hex(hex.to_ascii_lowercase());
            }
        }
        Secret::Plain(text.to_string())
    }
}

/// Never prints a password or a verifier's keys.
impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Secret::Plain(_) => "Plain(..)",
            Secret::Md5Hex(_) => "Md5Hex(..)",
            Secret::Scram(_) => "Scram(..)",
        })
    }
}

/// The checked authentication configuration.
#[derive(Clone)]
pub struct AuthConfig {
    pub method: AuthMethod,
    users: BTreeMap<String, Secret>,
    /// Random per server start: the salts of unknown users are derived from it, so that
    /// they look like real ones and stay the same across attempts.
    mock_key: [u8; KEY_BYTES],
}

impl fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthConfig")
            .field("method", &self.method)
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Default for AuthConfig {
    fn default() -> AuthConfig {
        AuthConfig { method: AuthMethod::LoopbackTrust, users: BTreeMap::new(), mock_key: [0; KEY_BYTES] }
    }
}

impl AuthConfig {
    /// Checks the method and the users' secrets; derives a SCRAM verifier for each plain
    /// password the method does not need in the plain. The error names the problem.
    pub fn new(method: Option<&str>, users: &BTreeMap<String, String>) -> Result<AuthConfig, String> {
        let method = match method {
            Some(text) => AuthMethod::parse(text).ok_or_else(|| {
                format!("auth.method {text:?} is not one of {}", AuthMethod::NAMES.join(", "))
            })?,
            None if users.is_empty() => AuthMethod::LoopbackTrust,
            None => AuthMethod::ScramSha256,
        };
        let needs_passwords = matches!(method, AuthMethod::Md5 | AuthMethod::ScramSha256);
        if needs_passwords && users.is_empty() {
            return Err("password authentication needs at least one user in [auth.users]".into());
        }
        let mut resolved = BTreeMap::new();
        for (user, text) in users {
            if user.is_empty() {
                return Err("an empty user name in [auth.users]".into());
            }
            let secret = match (method, Secret::parse(text)) {
                (AuthMethod::ScramSha256, Secret::Md5Hex(_)) => {
                    return Err(format!(
                        "user {user:?} has an md5 hash, which cannot log in with scram-sha-256: \
                         give the password or a SCRAM-SHA-256 verifier"
                    ))
                }
                (AuthMethod::ScramSha256, Secret::Plain(password)) => {
                    if password.is_empty() {
                        return Err(format!("user {user:?} has an empty password"));
                    }
                    Secret::Scram(ScramVerifier::from_password(
                        &password,
                        &random_bytes::<SCRAM_SALT_BYTES>(),
                        SCRAM_ITERATIONS,
                    ))
                }
                (_, Secret::Plain(password)) if password.is_empty() => {
                    return Err(format!("user {user:?} has an empty password"));
                }
                (_, secret) => secret,
            };
            resolved.insert(user.clone(), secret);
        }
        Ok(AuthConfig { method, users: resolved, mock_key: random_bytes() })
    }

    /// What a login of `user` from `peer` must go through.
    pub fn plan(&self, user: &str, peer: Option<IpAddr>) -> Plan {
        match self.method {
            AuthMethod::Trust => Plan::Accept,
            AuthMethod::LoopbackTrust => {
                if peer.is_some_and(|ip| ip.is_loopback() || is_mapped_loopback(ip)) {
                    Plan::Accept
                } else {
                    Plan::Refuse(format!(
                        "no authentication is configured for host {}: only loopback clients are \
                         trusted (configure [auth] users, or method = \"trust\")",
                        peer.map(|p| p.to_string()).unwrap_or_else(|| "(unknown)".into())
                    ))
                }
            }
            AuthMethod::ScramSha256 => Plan::Scram(self.scram_verifier(user)),
            AuthMethod::Md5 => match self.users.get(user) {
                Some(Secret::Scram(verifier)) => Plan::Scram(Some(verifier.clone())),
                Some(Secret::Md5Hex(hex)) => Plan::Md5(Some(hex.clone())),
                Some(Secret::Plain(password)) => {
                    Plan::Md5(Some(md5_hex(&[password.as_bytes(), user.as_bytes()])))
                }
                None => Plan::Md5(None),
            },
        }
    }

    fn scram_verifier(&self, user: &str) -> Option<ScramVerifier> {
        match self.users.get(user) {
            Some(Secret::Scram(verifier)) => Some(verifier.clone()),
            _ => None,
        }
    }

    /// The salt shown to an unknown user: derived from the name, the same each attempt.
    fn mock_salt(&self, user: &str) -> Vec<u8> {
        let mut digest = Sha256::new();
        digest.update(self.mock_key);
        digest.update(user.as_bytes());
        digest.finalize()[..SCRAM_SALT_BYTES].to_vec()
    }

    /// Starts a SCRAM exchange for `user` (its verifier, or None for an unknown user), on
    /// a connection with this channel binding data (TLS) or none.
    pub fn scram(
        &self,
        user: &str,
        verifier: Option<ScramVerifier>,
        channel_binding: Option<Vec<u8>>,
    ) -> ScramExchange {
        let nonce = BASE64.encode(random_bytes::<SCRAM_NONCE_BYTES>());
        let exchange = match verifier {
            Some(v) => ScramExchange::new(v, true, nonce),
            None => {
                let mock = ScramVerifier {
                    iterations: SCRAM_ITERATIONS,
                    salt: self.mock_salt(user),
                    stored_key: random_bytes(),
                    server_key: random_bytes(),
                };
                ScramExchange::new(mock, false, nonce)
            }
        };
        exchange.with_channel_binding(channel_binding)
    }
}

/// `::ffff:127.0.0.1` is loopback too (a dual-stack listener).
fn is_mapped_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
        IpAddr::V4(_) => false,
    }
}

/// What a login goes through.
#[derive(Debug)]
pub enum Plan {
    Accept,
    /// Refused without an exchange (28000), with this message.
    Refuse(String),
    /// md5 against this md5(password + user) (None: an unknown user, who fails).
    Md5(Option<String>),
    /// SCRAM against this verifier (None: an unknown user, who fails at the end).
    Scram(Option<ScramVerifier>),
}

/// Random bytes from the operating system.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("the operating system's random source works");
    bytes
}

fn hmac(key: &[u8], message: &[u8]) -> [u8; KEY_BYTES] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

fn md5_hex(parts: &[&[u8]]) -> String {
    let mut digest = Md5::new();
    for part in parts {
        digest.update(part);
    }
    digest.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares without an early exit, so the time taken does not tell how much matched.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether the client's md5 response (`md5` + 32 hex digits) is right for `salt`.
/// `stored` is md5(password + user) in hex; None (an unknown user) never matches.
pub fn md5_response_matches(stored: Option<&str>, salt: &[u8; 4], response: &str) -> bool {
    let expected = format!("md5{}", md5_hex(&[stored.unwrap_or("").as_bytes(), salt]));
    constant_time_eq(expected.as_bytes(), response.as_bytes()) && stored.is_some()
}

/// Why a SCRAM exchange failed.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScramError {
    /// The client sent something that is not SCRAM as agreed (08P01).
    #[error("malformed SCRAM message: {0}")]
    Protocol(String),
    /// The proof is wrong, or the user is unknown (28P01).
    #[error("password authentication failed")]
    WrongPassword,
}

fn protocol(message: &str) -> ScramError {
    ScramError::Protocol(message.to_string())
}

/// The server's side of one SCRAM-SHA-256 exchange: client-first -> server-first,
/// client-final -> server-final (or a failure).
pub struct ScramExchange {
    verifier: ScramVerifier,
    /// False for an unknown user: the exchange runs to its end, then fails.
    user_known: bool,
    server_nonce: String,
    /// The connection's `tls-server-end-point` data: Some on TLS, where the PLUS
    /// mechanism is offered.
    channel_binding: Option<Vec<u8>>,
    /// Set by the client-first message.
    first: Option<ScramFirst>,
}

struct ScramFirst {
    /// What the client-final's `c=` must hold: the GS2 header as sent ("n,,", "y,," or
    /// "p=tls-server-end-point,,"), then the channel binding data if bound.
    expected_binding: Vec<u8>,
    client_first_bare: String,
    server_first: String,
    nonce: String,
}

impl ScramExchange {
    pub fn new(verifier: ScramVerifier, user_known: bool, server_nonce: String) -> ScramExchange {
        ScramExchange { verifier, user_known, server_nonce, channel_binding: None, first: None }
    }

    /// Offers channel binding with this data (a TLS connection), or not.
    pub fn with_channel_binding(mut self, data: Option<Vec<u8>>) -> ScramExchange {
        self.channel_binding = data;
        self
    }

    /// The mechanisms to offer, the preferred first.
    pub fn mechanisms(&self) -> Vec<String> {
        match self.channel_binding {
            Some(_) => vec![SCRAM_PLUS_MECHANISM.into(), SCRAM_MECHANISM.into()],
            None => vec![SCRAM_MECHANISM.into()],
        }
    }

    /// Takes the mechanism the client chose and its client-first message (the data of
    /// SASLInitialResponse); returns the server-first message.
    pub fn client_first(&mut self, mechanism: &str, message: &[u8]) -> Result<String, ScramError> {
        if self.first.is_some() {
            return Err(protocol("a second client-first message"));
        }
        let plus = match mechanism {
            SCRAM_MECHANISM => false,
            SCRAM_PLUS_MECHANISM if self.channel_binding.is_some() => true,
            _ => return Err(protocol("the client selected a SASL mechanism that was not offered")),
        };
        let message = std::str::from_utf8(message).map_err(|_| protocol("not UTF-8"))?;
        // gs2-header = gs2-cbind-flag "," [authzid] ","
        let (flag, rest) = message.split_once(',').ok_or_else(|| protocol("no GS2 header"))?;
        let binding_data: &[u8] = match (flag, plus) {
            ("n", false) => &[],
            // The client could bind but saw no PLUS: on a connection where it was
            // offered, someone in between removed it.
            ("y", false) if self.channel_binding.is_none() => &[],
            ("y", false) => return Err(protocol("channel binding negotiation error (a downgrade)")),
            (_, true) if flag.strip_prefix("p=") == Some(CHANNEL_BINDING_TYPE) => {
                self.channel_binding.as_deref().expect("PLUS is offered only with binding data")
            }
            (_, true) if flag.starts_with("p=") => return Err(protocol("unsupported channel binding type")),
            (_, true) => return Err(protocol("SCRAM-SHA-256-PLUS without channel binding")),
            (_, false) if flag.starts_with("p=") => {
                return Err(protocol("channel binding requested with SCRAM-SHA-256"))
            }
            _ => return Err(protocol("invalid channel binding flag")),
        };
        let (authzid, bare) = rest.split_once(',').ok_or_else(|| protocol("no GS2 header"))?;
        if !authzid.is_empty() {
            return Err(protocol("an authorization identity is not supported"));
        }
        let mut expected_binding = message.as_bytes()[..message.len() - bare.len()].to_vec();
        expected_binding.extend_from_slice(binding_data);
        // client-first-message-bare = [reserved-mext ","] username "," nonce ["," extensions]
        let mut attributes = bare.split(',');
        let user = attributes.next().unwrap_or("");
        if user.starts_with("m=") {
            return Err(protocol("mandatory extensions are not supported"));
        }
        if !user.starts_with("n=") {
            return Err(protocol("no user name attribute"));
        }
        // The user name is the startup packet's; libpq sends an empty one here.
        let client_nonce =
            attributes.next().and_then(|a| a.strip_prefix("r=")).ok_or_else(|| protocol("no nonce"))?;
        if client_nonce.is_empty() || !client_nonce.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',') {
            return Err(protocol("invalid nonce"));
        }
        let nonce = format!("{client_nonce}{}", self.server_nonce);
        let server_first =
            format!("r={nonce},s={},i={}", BASE64.encode(&self.verifier.salt), self.verifier.iterations);
        self.first = Some(ScramFirst {
            expected_binding,
            client_first_bare: bare.to_string(),
            server_first: server_first.clone(),
            nonce,
        });
        Ok(server_first)
    }

    /// Takes the client-final message (the data of SASLResponse); verifies the proof and
    /// returns the server-final message (`v=` the server signature).
    pub fn client_final(&mut self, message: &[u8]) -> Result<String, ScramError> {
        let first = self.first.take().ok_or_else(|| protocol("client-final before client-first"))?;
        let message = std::str::from_utf8(message).map_err(|_| protocol("not UTF-8"))?;
        let (without_proof, proof) =
            message.rsplit_once(",p=").ok_or_else(|| protocol("no proof in client-final"))?;
        let mut attributes = without_proof.split(',');
        let binding = attributes
            .next()
            .and_then(|a| a.strip_prefix("c="))
            .ok_or_else(|| protocol("no channel binding attribute"))?;
        let binding = BASE64.decode(binding).map_err(|_| protocol("channel binding is not base64"))?;
        if binding != first.expected_binding {
            return Err(protocol("the channel binding data does not match"));
        }
        let nonce =
            attributes.next().and_then(|a| a.strip_prefix("r=")).ok_or_else(|| protocol("no nonce"))?;
        if nonce != first.nonce {
            return Err(protocol("the nonce does not match"));
        }
        let proof: [u8; KEY_BYTES] = BASE64
            .decode(proof)
            .ok()
            .and_then(|p| p.try_into().ok())
            .ok_or_else(|| protocol("invalid proof"))?;
        let auth_message = format!("{},{},{}", first.client_first_bare, first.server_first, without_proof);
        let client_signature = hmac(&self.verifier.stored_key, auth_message.as_bytes());
        let mut client_key = [0u8; KEY_BYTES];
        for (k, (p, s)) in client_key.iter_mut().zip(proof.iter().zip(&client_signature)) {
            *k = p ^ s;
        }
        let stored_key: [u8; KEY_BYTES] = Sha256::digest(client_key).into();
        if !constant_time_eq(&stored_key, &self.verifier.stored_key) || !self.user_known {
            return Err(ScramError::WrongPassword);
        }
        let server_signature = hmac(&self.verifier.server_key, auth_message.as_bytes());
        Ok(format!("v={}", BASE64.encode(server_signature)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677, section 3: user "user", password "pencil".
    const CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
    const SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    const SERVER_FIRST: &str =
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    const CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                                p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    fn rfc_verifier() -> ScramVerifier {
        ScramVerifier::from_password("pencil", &BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap(), 4096)
    }

    #[test]
    fn scram_exchange_matches_rfc_7677_test_vector() {
        let mut exchange = ScramExchange::new(rfc_verifier(), true, SERVER_NONCE.into());
        assert_eq!(exchange.client_first(SCRAM_MECHANISM, CLIENT_FIRST.as_bytes()).unwrap(), SERVER_FIRST);
        assert_eq!(exchange.client_final(CLIENT_FINAL.as_bytes()).unwrap(), SERVER_FINAL);
    }

    #[test]
    fn scram_verifier_round_trips_through_postgresql_text_form() {
        let verifier = rfc_verifier();
        let text = verifier.to_string();
        assert!(text.starts_with("SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$"), "{text}");
        assert!(ScramVerifier::parse(&text) == Some(verifier));
        assert!(ScramVerifier::parse("SCRAM-SHA-256$0:c2FsdA==$AAAA:AAAA").is_none());
        assert!(matches!(Secret::parse(&text), Secret::Scram(_)));
        assert!(matches!(Secret::parse("md5a3556571e93b0d20722ba62be61e8c2d"), Secret::Md5Hex(_)));
        assert!(matches!(Secret::parse("md5 is my password"), Secret::Plain(_)));
    }

    #[test]
    fn scram_rejects_a_wrong_proof_and_an_unknown_user() {
        let wrong_proof = CLIENT_FINAL.replace("p=dHzb", "p=dHzc");
        let mut exchange = ScramExchange::new(rfc_verifier(), true, SERVER_NONCE.into());
        exchange.client_first(SCRAM_MECHANISM, CLIENT_FIRST.as_bytes()).unwrap();
        assert_eq!(exchange.client_final(wrong_proof.as_bytes()), Err(ScramError::WrongPassword));
        // The right proof for a user the server does not know still fails.
        let mut exchange = ScramExchange::new(rfc_verifier(), false, SERVER_NONCE.into());
        exchange.client_first(SCRAM_MECHANISM, CLIENT_FIRST.as_bytes()).unwrap();
        assert_eq!(exchange.client_final(CLIENT_FINAL.as_bytes()), Err(ScramError::WrongPassword));
    }

    #[test]
    fn scram_rejects_malformed_and_mismatched_messages() {
        let first = |message: &str| {
            ScramExchange::new(rfc_verifier(), true, "x".into())
                .client_first(SCRAM_MECHANISM, message.as_bytes())
        };
        assert!(matches!(first("p=tls-server-end-point,,n=,r=abc"), Err(ScramError::Protocol(_))));
        assert!(matches!(first("n,a=admin,n=,r=abc"), Err(ScramError::Protocol(_))));
        assert!(matches!(first("n,,m=ext,n=,r=abc"), Err(ScramError::Protocol(_))));
        assert!(matches!(first("n,,n=,r="), Err(ScramError::Protocol(_))));
        assert!(matches!(first("garbage"), Err(ScramError::Protocol(_))));
        assert!(first("y,,n=,r=abc").is_ok(), "a client that supports binding but was not offered it");

        let final_with = |message: &str| {
            let mut exchange = ScramExchange::new(rfc_verifier(), true, SERVER_NONCE.into());
            exchange.client_first(SCRAM_MECHANISM, CLIENT_FIRST.as_bytes()).unwrap();
            exchange.client_final(message.as_bytes())
        };
        // A nonce other than the one agreed, and a `c=` that is not the GS2 header sent.
        assert!(matches!(final_with(&CLIENT_FINAL.replace("$k0,p", "$k1,p")), Err(ScramError::Protocol(_))));
        assert!(matches!(
            final_with(&CLIENT_FINAL.replace("c=biws", "c=eSws")),
            Err(ScramError::Protocol(_))
        ));
        assert!(matches!(final_with("c=biws"), Err(ScramError::Protocol(_))));
    }

    /// The client's side of an exchange, as libpq computes it: (client-first, the
    /// client-final for the server-first `server_first`).
    fn client_final(
        password: &str,
        gs2_header: &str,
        binding: &[u8],
        bare: &str,
        server_first: &str,
    ) -> String {
        let nonce = server_first.split(',').next().unwrap().strip_prefix("r=").unwrap();
        let salt =
            BASE64.decode(server_first.split(",s=").nth(1).unwrap().split(',').next().unwrap()).unwrap();
        let iterations: u32 = server_first.rsplit(",i=").next().unwrap().parse().unwrap();
        let salted = pbkdf2::pbkdf2_hmac_array::<Sha256, KEY_BYTES>(password.as_bytes(), &salt, iterations);
        let client_key = hmac(&salted, b"Client Key");
        let stored_key: [u8; KEY_BYTES] = Sha256::digest(client_key).into();
        let mut c = gs2_header.as_bytes().to_vec();
        c.extend_from_slice(binding);
        let without_proof = format!("c={},r={nonce}", BASE64.encode(c));
        let signature = hmac(&stored_key, format!("{bare},{server_first},{without_proof}").as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(signature).map(|(k, s)| k ^ s).collect();
        format!("{without_proof},p={}", BASE64.encode(proof))
    }

    #[test]
    fn scram_plus_binds_the_exchange_to_the_server_certificate() {
        let end_point = b"the certificate's hash".to_vec();
        let exchange = || {
            ScramExchange::new(rfc_verifier(), true, "servernonce".into())
                .with_channel_binding(Some(end_point.clone()))
        };
        assert_eq!(exchange().mechanisms(), [SCRAM_PLUS_MECHANISM, SCRAM_MECHANISM]);
        let header = "p=tls-server-end-point,,";
        let bare = "n=,r=clientnonce";

        let mut bound = exchange();
        let server_first =
            bound.client_first(SCRAM_PLUS_MECHANISM, format!("{header}{bare}").as_bytes()).unwrap();
        let message = client_final("pencil", header, &end_point, bare, &server_first);
        assert!(bound.client_final(message.as_bytes()).unwrap().starts_with("v="));

        // Another certificate's hash (a man in the middle terminating TLS) fails.
        let mut bound = exchange();
        let server_first =
            bound.client_first(SCRAM_PLUS_MECHANISM, format!("{header}{bare}").as_bytes()).unwrap();
        let message = client_final("pencil", header, b"another certificate", bare, &server_first);
        assert!(matches!(bound.client_final(message.as_bytes()), Err(ScramError::Protocol(_))));

        // The plain mechanism still works on TLS ("n"), but "y" there is a downgrade, and
        // PLUS is never accepted without binding data or on a plain connection.
        let mut plain = exchange();
        let server_first = plain.client_first(SCRAM_MECHANISM, format!("n,,{bare}").as_bytes()).unwrap();
        let message = client_final("pencil", "n,,", &[], bare, &server_first);
        assert!(plain.client_final(message.as_bytes()).is_ok());
        let first = |mechanism: &str, message: &str| exchange().client_first(mechanism, message.as_bytes());
        assert!(matches!(first(SCRAM_MECHANISM, "y,,n=,r=abc"), Err(ScramError::Protocol(_))));
        assert!(matches!(first(SCRAM_PLUS_MECHANISM, "n,,n=,r=abc"), Err(ScramError::Protocol(_))));
        assert!(matches!(
            first(SCRAM_PLUS_MECHANISM, "p=tls-unique,,n=,r=abc"),
            Err(ScramError::Protocol(_))
        ));
        assert!(matches!(first("SCRAM-SHA-1", "n,,n=,r=abc"), Err(ScramError::Protocol(_))));
        let unbound = ScramExchange::new(rfc_verifier(), true, "x".into());
        assert_eq!(unbound.mechanisms(), [SCRAM_MECHANISM]);
        let mut unbound = unbound;
        assert!(matches!(
            unbound.client_first(SCRAM_PLUS_MECHANISM, b"p=tls-server-end-point,,n=,r=abc"),
            Err(ScramError::Protocol(_))
        ));
    }

    #[test]
    fn md5_response_is_checked_against_the_stored_hash() {
        // md5("pencil" + "user"), then md5(that + salt), as libpq computes it.
        let stored = md5_hex(&[b"pencil", b"user"]);
        let salt = [1, 2, 3, 4];
        let response = format!("md5{}", md5_hex(&[stored.as_bytes(), &salt]));
        assert!(md5_response_matches(Some(&stored), &salt, &response));
        assert!(!md5_response_matches(Some(&stored), &[4, 3, 2, 1], &response));
        assert!(!md5_response_matches(None, &salt, &response));
        assert!(!md5_response_matches(Some(&stored), &salt, "md5"));
    }

    #[test]
    fn configuration_checks_methods_and_secrets() {
        let users = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(u, p)| (u.to_string(), p.to_string())).collect()
        };
        assert_eq!(AuthConfig::new(None, &users(&[])).unwrap().method, AuthMethod::LoopbackTrust);
        let scram = AuthConfig::new(None, &users(&[("alice", "secret")])).unwrap();
        assert_eq!(scram.method, AuthMethod::ScramSha256);
        assert!(matches!(scram.plan("alice", None), Plan::Scram(Some(_))));
        assert!(matches!(scram.plan("bob", None), Plan::Scram(None)));
        assert_eq!(scram.mock_salt("bob"), scram.mock_salt("bob"), "stable across attempts");
        assert!(format!("{scram:?}").contains("alice") && !format!("{scram:?}").contains("secret"));

        let md5 = AuthConfig::new(
            Some("md5"),
            &users(&[("alice", "secret"), ("carol", &rfc_verifier().to_string())]),
        )
        .unwrap();
        assert!(matches!(md5.plan("alice", None), Plan::Md5(Some(_))));
        assert!(matches!(md5.plan("carol", None), Plan::Scram(Some(_))), "a SCRAM verifier upgrades md5");
        assert!(matches!(md5.plan("dave", None), Plan::Md5(None)));

        assert!(AuthConfig::new(Some("password"), &users(&[])).unwrap_err().contains("password"));
        assert!(AuthConfig::new(Some("scram-sha-256"), &users(&[])).unwrap_err().contains("auth.users"));
        let md5_hash = format!("md5{}", md5_hex(&[b"secret", b"alice"]));
        assert!(AuthConfig::new(None, &users(&[("alice", &md5_hash)])).unwrap_err().contains("alice"));

        let local = AuthConfig::new(None, &users(&[])).unwrap();
        assert!(matches!(local.plan("x", Some("127.0.0.1".parse().unwrap())), Plan::Accept));
        assert!(matches!(local.plan("x", Some("::ffff:127.0.0.1".parse().unwrap())), Plan::Accept));
        assert!(matches!(local.plan("x", Some("10.1.2.3".parse().unwrap())), Plan::Refuse(_)));
        let trust = AuthConfig::new(Some("trust"), &users(&[])).unwrap();
        assert!(matches!(trust.plan("x", Some("10.1.2.3".parse().unwrap())), Plan::Accept));
    }
}
