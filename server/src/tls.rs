//! TLS for client connections (PostgreSQL's SSLRequest): the certificate chain and key
//! are read from PEM files once, when the server starts, so that a bad path or file
//! stops the start with the file's name instead of failing every connection later.
//!
//! rustls runs with the `ring` provider only (no aws-lc-rs, which needs a C build), TLS
//! 1.2 and 1.3.
//!
//! Client certificates: with `tls_client_ca` (a PEM file of CA certificates) every client
//! must present a certificate that chains to one of them, valid now
//! (rustls' `WebPkiClientVerifier`), or the handshake fails; this is PostgreSQL's
//! `hostssl ... clientcert=verify-ca`. The certificate proves the client holds a key the
//! CA vouched for; which user it logs in as is still up to the authentication method
//! (the certificate's name is not matched with the user, as `verify-full` would). Since a
//! plain connection presents no certificate, the configuration refuses those (`config`).
//! Certificate revocation lists are not read.
//!
//! For SCRAM channel binding (SCRAM-SHA-256-PLUS, RFC 5929's `tls-server-end-point`) the
//! server certificate's hash is computed here: with the hash of its signature algorithm,
//! SHA-256 for MD5 and SHA-1. A certificate signed otherwise (RSASSA-PSS, Ed25519) gets
//! no channel binding: the plain mechanism is offered alone, as libpq then expects.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256, Sha384, Sha512};
use tokio_rustls::TlsAcceptor;

/// TLS as the connections use it.
#[derive(Clone)]
pub struct Tls {
    pub acceptor: TlsAcceptor,
    /// The `tls-server-end-point` channel binding data of the server certificate, if its
    /// signature algorithm gives one.
    pub server_end_point: Option<Arc<[u8]>>,
}

/// The files of the server's certificate (`tls_cert`) and private key (`tls_key`), and
/// of the CA certificates client certificates must chain to (`tls_client_ca`; None: no
/// client certificate is asked for).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_ca: Option<PathBuf>,
}

/// Why TLS could not be set up: always names the file, or the pair.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading the TLS certificate file {path}: {message}")]
    Cert { path: PathBuf, message: String },
    #[error("reading the TLS key file {path}: {message}")]
    Key { path: PathBuf, message: String },
    #[error("the TLS certificate {cert} and key {key} do not go together: {message}")]
    Pair { cert: PathBuf, key: PathBuf, message: String },
    #[error("reading the client CA file {path} (tls_client_ca): {message}")]
    ClientCa { path: PathBuf, message: String },
}

/// Reads the certificate chain and key and builds the acceptor.
pub fn load(files: &TlsFiles) -> Result<Tls, TlsError> {
    let cert_error = |message: String| TlsError::Cert { path: files.cert.clone(), message };
    let key_error = |message: String| TlsError::Key { path: files.key.clone(), message };
    readable(&files.cert).map_err(cert_error)?;
    readable(&files.key).map_err(key_error)?;
    let chain = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| cert_error(e.to_string()))?;
    if chain.is_empty() {
        return Err(cert_error("no PEM certificate (BEGIN CERTIFICATE) in the file".into()));
    }
    let server_end_point = tls_server_end_point(&chain[0]).map(Arc::from);
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| key_error(e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Pair {
            cert: files.cert.clone(),
            key: files.key.clone(),
            message: e.to_string(),
        })?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(path) => builder.with_client_cert_verifier(client_verifier(path, provider)?),
    };
    let config = builder.with_single_cert(chain, key).map_err(|e| TlsError::Pair {
        cert: files.cert.clone(),
        key: files.key.clone(),
        message: e.to_string(),
    })?;
    Ok(Tls { acceptor: TlsAcceptor::from(Arc::new(config)), server_end_point })
}

/// The verifier of client certificates: they must chain to a CA certificate of `path`.
fn client_verifier(
    path: &Path,
    provider: Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<dyn rustls::server::danger::ClientCertVerifier>, TlsError> {
    let error = |message: String| TlsError::ClientCa { path: path.to_path_buf(), message };
    readable(path).map_err(error)?;
    let certificates = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| error(e.to_string()))?;
    if certificates.is_empty() {
        return Err(error("no PEM certificate (BEGIN CERTIFICATE) in the file".into()));
    }
    let mut roots = rustls::RootCertStore::empty();
    for certificate in certificates {
        roots.add(certificate).map_err(|e| error(format!("not a usable CA certificate: {e}")))?;
    }
    rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| error(e.to_string()))
}

/// RFC 5929's `tls-server-end-point`: the certificate hashed with its signature's hash
/// function (SHA-256 for MD5 and SHA-1). None for an algorithm without one.
pub fn tls_server_end_point(certificate: &[u8]) -> Option<Vec<u8>> {
    // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue };
    // signatureAlgorithm ::= SEQUENCE { algorithm OBJECT IDENTIFIER, parameters ANY }.
    let (tag, certificate_body, _) = der(certificate)?;
    if tag != 0x30 {
        return None;
    }
    let (_, _, after_tbs) = der(certificate_body)?;
    let (tag, algorithm, _) = der(after_tbs)?;
    if tag != 0x30 {
        return None;
    }
    let (tag, oid, _) = der(algorithm)?;
    if tag != 0x06 {
        return None;
    }
    const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01];
    const ECDSA_SHA2: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03];
    const ECDSA_SHA1: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x01];
    enum Hash {
        Sha256,
        Sha384,
        Sha512,
    }
    let hash = match oid {
        [rsa @ .., last] if rsa == RSA => match last {
            0x04 | 0x05 | 0x0b => Hash::Sha256, // md5, sha1, sha256 WithRSAEncryption
            0x0c => Hash::Sha384,
            0x0d => Hash::Sha512,
            _ => return None, // RSASSA-PSS (its hash is in the parameters) and others
        },
        [ecdsa @ .., last] if ecdsa == ECDSA_SHA2 => match last {
            0x02 => Hash::Sha256,
            0x03 => Hash::Sha384,
            0x04 => Hash::Sha512,
            _ => return None,
        },
        _ if oid == ECDSA_SHA1 => Hash::Sha256,
        _ => return None,
    };
    Some(match hash {
        Hash::Sha256 => Sha256::digest(certificate).to_vec(),
        Hash::Sha384 => Sha384::digest(certificate).to_vec(),
        Hash::Sha512 => Sha512::digest(certificate).to_vec(),
    })
}

/// One DER element: (tag, contents, the bytes after it). None if malformed.
fn der(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let bytes = (first & 0x7f) as usize;
        if bytes == 0 || bytes > 4 || rest.len() < bytes {
            return None;
        }
        let length = rest[..bytes].iter().fold(0usize, |n, b| (n << 8) | *b as usize);
        (length, &rest[bytes..])
    };
    if rest.len() < length {
        return None;
    }
    Some((tag, &rest[..length], &rest[length..]))
}

/// A missing or unreadable file, said plainly (the PEM reader's own error is vaguer).
fn readable(path: &Path) -> Result<(), String> {
    std::fs::File::open(path).map(|_| ()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_malformed_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate").unwrap();
        let missing = TlsFiles { cert: dir.path().join("nope.crt"), key: junk.clone(), client_ca: None };
        let e = load(&missing).err().expect("a missing certificate fails").to_string();
        assert!(e.contains("nope.crt") && e.contains("certificate"), "{e}");
        let malformed = TlsFiles { cert: junk.clone(), key: junk.clone(), client_ca: None };
        let e = load(&malformed).err().expect("a file without PEM fails").to_string();
        assert!(e.contains("junk.pem"), "{e}");
    }

    #[test]
    fn the_end_point_hash_follows_the_signature_algorithm() {
        // A certificate reduced to its outline: SEQUENCE { tbs, algorithm, signature }.
        let certificate = |oid: &[u8]| {
            let mut algorithm = vec![0x06, oid.len() as u8];
            algorithm.extend_from_slice(oid);
            algorithm.extend_from_slice(&[0x05, 0x00]);
            let mut body = vec![0x30, 0x03, 0x02, 0x01, 0x01, 0x30, algorithm.len() as u8];
            body.extend(algorithm);
            body.extend_from_slice(&[0x03, 0x02, 0x00, 0xff]);
            let mut der = vec![0x30, body.len() as u8];
            der.extend(body);
            der
        };
        let sha256_rsa = certificate(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b]);
        assert_eq!(tls_server_end_point(&sha256_rsa), Some(Sha256::digest(&sha256_rsa).to_vec()));
        let sha1_rsa = certificate(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x05]);
        assert_eq!(tls_server_end_point(&sha1_rsa), Some(Sha256::digest(&sha1_rsa).to_vec()));
        let sha384_ecdsa = certificate(&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03]);
        assert_eq!(tls_server_end_point(&sha384_ecdsa), Some(Sha384::digest(&sha384_ecdsa).to_vec()));
        let ed25519 = certificate(&[0x2b, 0x65, 0x70]);
        assert_eq!(tls_server_end_point(&ed25519), None);
        assert_eq!(tls_server_end_point(&sha256_rsa[..10]), None, "truncated");
    }
}
