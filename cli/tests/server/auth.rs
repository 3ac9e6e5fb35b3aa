//! `redodb serve` authentication and TLS, driven by psql (libpq) and a raw protocol
//! client: SCRAM-SHA-256 and md5 with the right and a wrong password, an unknown user,
//! TLS with a self-signed certificate (made here with the `openssl` command), a server
//! that requires TLS, client certificates signed by the configured CA (`tls_client_ca`),
//! and a start refused for a missing certificate file.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{protocol, require_tool, Server};

/// psql as `user` with `password` (None: no password at all), in `sslmode`, running
/// `args`. Nothing from the environment's pgpass or service files.
fn psql_as(server: &Server, user: &str, password: Option<&str>, sslmode: &str, args: &[&str]) -> Output {
    let conninfo = format!("host=127.0.0.1 port={} user={user} dbname=redodb sslmode={sslmode}", server.port);
    let mut command = Command::new("psql");
    command
        .args(["-X", "-At", "-w", "-v", "ON_ERROR_STOP=1", "-d", &conninfo])
        .args(args)
        .env("PGCONNECT_TIMEOUT", "10")
        .env("PGPASSFILE", "/dev/null")
        .env_remove("PGPASSWORD")
        .env_remove("PGSSLMODE");
    if let Some(password) = password {
        command.env("PGPASSWORD", password);
    }
    command.output().expect("run psql")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_ok(out: &Output) -> String {
    assert!(out.status.success(), "psql failed: {}", stderr(out));
    stdout(out)
}

fn assert_password_failed(out: &Output, user: &str) {
    assert!(!out.status.success(), "psql should have failed: {}", stdout(out));
    let expected = format!("password authentication failed for user \"{user}\"");
    assert!(stderr(out).contains(&expected), "{}", stderr(out));
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("redodb.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A self-signed certificate and its key, made with the openssl command-line tool.
fn self_signed_certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let found = Command::new("openssl").arg("version").stdout(Stdio::null()).status();
    assert!(
        found.is_ok_and(|s| s.success()),
        "`openssl` is needed by the TLS tests to make a certificate: apt-get install openssl"
    );
    let (cert, key) = (dir.join("server.crt"), dir.join("server.key"));
    let out = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-days", "2"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("run openssl");
    assert!(out.status.success(), "openssl req: {}", String::from_utf8_lossy(&out.stderr));
    (cert, key)
}

/// A raw startup as `user`; returns the stream and the first message's (type, body).
fn raw_startup(server: &Server, user: &str) -> (TcpStream, (u8, Vec<u8>)) {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    protocol::send_startup(&mut stream, user);
    let first = protocol::read_message(&mut stream).expect("an authentication request");
    (stream, first)
}

fn auth_code(message: &(u8, Vec<u8>)) -> i32 {
    assert_eq!(message.0, b'R', "an authentication message");
    i32::from_be_bytes(message.1[..4].try_into().unwrap())
}

#[test]
fn scram_sha_256_accepts_the_right_password_and_refuses_a_wrong_one_or_an_unknown_user() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    // carol's secret is a verifier in PostgreSQL's format: the password is not stored.
    let carol = server::auth::ScramVerifier::from_password("c4rol pass", b"sixteen byte salt", 4096);
    let config = write_config(
        dir.path(),
        &format!(
            "[auth]\nmethod = \"scram-sha-256\"\n[auth.users]\nalice = \"pencil\"\ncarol = \"{carol}\"\n"
        ),
    );
    let server = Server::start(&dir.path().join("data"), &["--config", config.to_str().unwrap()]);

    assert_eq!(assert_ok(&psql_as(&server, "alice", Some("pencil"), "disable", &["-c", "SELECT 1"])), "1\n");
    assert_eq!(
        assert_ok(&psql_as(&server, "carol", Some("c4rol pass"), "disable", &["-c", "SELECT 2"])),
        "2\n"
    );
    assert_password_failed(
        &psql_as(&server, "alice", Some("pencel"), "disable", &["-c", "SELECT 1"]),
        "alice",
    );
    assert_password_failed(
        &psql_as(&server, "mallory", Some("pencil"), "disable", &["-c", "SELECT 1"]),
        "mallory",
    );
    let out = psql_as(&server, "alice", None, "disable", &["-c", "SELECT 1"]);
    assert!(stderr(&out).contains("no password supplied"), "{}", stderr(&out));

    // The SQLSTATE, which psql does not show: a raw client with a wrong proof.
    let (mut stream, request) = raw_startup(&server, "alice");
    assert_eq!(auth_code(&request), 10, "AuthenticationSASL");
    assert!(String::from_utf8_lossy(&request.1[4..]).starts_with("SCRAM-SHA-256\0"));
    let client_first = "n,,n=,r=clientnonce123";
    let mut body = protocol::cstring("SCRAM-SHA-256");
    body.extend_from_slice(&(client_first.len() as i32).to_be_bytes());
    body.extend_from_slice(client_first.as_bytes());
    protocol::send(&mut stream, b'p', &body);
    let server_first = protocol::read_message(&mut stream).unwrap();
    assert_eq!(auth_code(&server_first), 11, "AuthenticationSASLContinue");
    let server_first = String::from_utf8(server_first.1[4..].to_vec()).unwrap();
    let nonce = server_first.split(',').next().unwrap().strip_prefix("r=").unwrap();
    assert!(nonce.starts_with("clientnonce123") && nonce.len() > "clientnonce123".len(), "{server_first}");
    let client_final = format!("c=biws,r={nonce},p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    protocol::send(&mut stream, b'p', client_final.as_bytes());
    let (kind, body) = protocol::read_message(&mut stream).unwrap();
    assert_eq!(kind, b'E');
    assert_eq!(protocol::sqlstate(&body), "28P01");
    assert!(protocol::read_message(&mut stream).is_none(), "the connection ends");
    assert!(server.terminate().success());
}

#[test]
fn md5_accepts_the_right_password_and_refuses_a_wrong_one() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "[auth]\nmethod = \"md5\"\n[auth.users]\nbob = \"b0b's secret\"\n");
    let server = Server::start(&dir.path().join("data"), &["--config", config.to_str().unwrap()]);
    assert_eq!(
        assert_ok(&psql_as(&server, "bob", Some("b0b's secret"), "disable", &["-c", "SELECT 'in'"])),
        "in\n"
    );
    assert_password_failed(
        &psql_as(&server, "bob", Some("b0b's secrets"), "disable", &["-c", "SELECT 1"]),
        "bob",
    );
    assert_password_failed(
        &psql_as(&server, "eve", Some("b0b's secret"), "disable", &["-c", "SELECT 1"]),
        "eve",
    );

    // A raw md5 exchange with a wrong response: 28P01.
    let (mut stream, request) = raw_startup(&server, "bob");
    assert_eq!(auth_code(&request), 5, "AuthenticationMD5Password");
    assert_eq!(request.1.len(), 8, "a 4-byte salt");
    protocol::send(&mut stream, b'p', &protocol::cstring("md500000000000000000000000000000000"));
    let (kind, body) = protocol::read_message(&mut stream).unwrap();
    assert_eq!(kind, b'E');
    assert_eq!(protocol::sqlstate(&body), "28P01");
    assert!(server.terminate().success());
}

#[test]
fn tls_is_accepted_with_a_certificate_and_scram_runs_over_it() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed_certificate(dir.path());
    let config = write_config(
        dir.path(),
        &format!(
            "tls_cert = {:?}\ntls_key = {:?}\n[auth]\n[auth.users]\nalice = \"pencil\"\n",
            cert.display().to_string(),
            key.display().to_string()
        ),
    );
    let server = Server::start(&dir.path().join("data"), &["--config", config.to_str().unwrap()]);
    let out = psql_as(
        &server,
        "alice",
        Some("pencil"),
        "require",
        &[
            "-c",
            "\\conninfo",
            "-c",
            "CREATE TABLE t (k INT PRIMARY KEY)",
            "-c",
            "INSERT INTO t VALUES (1), (2)",
            "-c",
            "SELECT count(*) FROM t",
        ],
    );
    let text = assert_ok(&out);
    assert!(text.contains("SSL connection (protocol: TLSv1."), "{text}");
    assert!(text.trim_end().ends_with('2'), "{text}");
    assert_password_failed(
        &psql_as(&server, "alice", Some("wrong"), "require", &["-c", "SELECT 1"]),
        "alice",
    );
    // SCRAM-SHA-256-PLUS: the exchange is bound to the server's certificate.
    let out = psql_as(
        &server,
        "alice",
        Some("pencil"),
        "require channel_binding=require",
        &["-c", "SELECT 'bound'"],
    );
    assert_eq!(assert_ok(&out), "bound\n");
    // No binding on a plain connection: a client that requires it refuses the server.
    let out =
        psql_as(&server, "alice", Some("pencil"), "disable channel_binding=require", &["-c", "SELECT 1"]);
    assert!(stderr(&out).contains("channel binding"), "{}", stderr(&out));
    // Plain connections still work when TLS is not required.
    assert_eq!(assert_ok(&psql_as(&server, "alice", Some("pencil"), "disable", &["-c", "SELECT 3"])), "3\n");
    assert!(server.terminate().success());

    // Without a certificate, SSLRequest is declined: sslmode=require cannot connect.
    let plain = Server::start(&dir.path().join("plain"), &[]);
    let out = psql_as(&plain, "anyone", None, "require", &["-c", "SELECT 1"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("does not support SSL"), "{}", stderr(&out));
    assert_eq!(assert_ok(&psql_as(&plain, "anyone", None, "prefer", &["-c", "SELECT 4"])), "4\n");
    assert!(plain.terminate().success());
}

#[test]
fn tls_required_refuses_plain_connections() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed_certificate(dir.path());
    let server = Server::start(
        &dir.path().join("data"),
        &["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap(), "--tls-required", "true"],
    );
    let out = psql_as(&server, "anyone", None, "disable", &["-c", "SELECT 1"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("requires TLS"), "{}", stderr(&out));
    assert_eq!(assert_ok(&psql_as(&server, "anyone", None, "require", &["-c", "SELECT 5"])), "5\n");
    assert!(server.terminate().success());
}

#[test]
fn a_missing_certificate_file_stops_the_start_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.crt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_redodb"))
        .args(["serve", "--data"])
        .arg(dir.path().join("data"))
        .args(["--port", "0", "--tls-cert"])
        .arg(&missing)
        .arg("--tls-key")
        .arg(dir.path().join("missing.key"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the server should refuse to start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains(&missing.display().to_string()), "{text}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
}

/// Runs `openssl` with `args` in `dir`, expecting success.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").current_dir(dir).args(args).output().expect("run openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A CA (`{name}.crt`, `{name}.key`) and certificates it signed: one for the server
/// (`server.crt`, CN=localhost) and one for a client (`client.crt`, CN=alice), with keys
/// libpq accepts (mode 0600).
fn certificate_authority(dir: &Path, name: &str) {
    let found = Command::new("openssl").arg("version").stdout(Stdio::null()).status();
    assert!(
        found.is_ok_and(|s| s.success()),
        "`openssl` is needed by the TLS tests: apt-get install openssl"
    );
    let (ca_crt, ca_key) = (format!("{name}.crt"), format!("{name}.key"));
    openssl(
        dir,
        &["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", &format!("/CN={name}")]
            .into_iter()
            .chain(["-keyout", &ca_key, "-out", &ca_crt])
            .collect::<Vec<_>>(),
    );
    std::fs::write(dir.join("server.ext"), "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
        .unwrap();
    std::fs::write(dir.join("client.ext"), "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
        .unwrap();
    for (who, cn) in [("server", "localhost"), ("client", "alice")] {
        let (key, csr, crt, ext) =
            (format!("{who}.key"), format!("{who}.csr"), format!("{who}.crt"), format!("{who}.ext"));
        openssl(
            dir,
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                &format!("/CN={cn}"),
                "-keyout",
                &key,
                "-out",
                &csr,
            ],
        );
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                &ca_crt,
                "-CAkey",
                &ca_key,
                "-CAcreateserial",
                "-days",
                "2",
            ]
            .into_iter()
            .chain(["-extfile", &ext, "-out", &crt])
            .collect::<Vec<_>>(),
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join(&key), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

/// `tls_client_ca`: a client must present a certificate the CA signed (psql's sslcert
/// and sslkey), and it verifies the server's against the same CA (sslrootcert,
/// sslmode=verify-ca). No certificate, one from another CA, or no TLS: refused.
#[test]
fn client_certificates_signed_by_the_configured_ca_are_required() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let (ours, theirs) = (dir.path().join("ours"), dir.path().join("theirs"));
    std::fs::create_dir_all(&ours).unwrap();
    std::fs::create_dir_all(&theirs).unwrap();
    certificate_authority(&ours, "ca");
    certificate_authority(&theirs, "other-ca");
    let path = |dir: &Path, file: &str| dir.join(file).display().to_string();
    let server = Server::start(
        &dir.path().join("data"),
        &[
            "--tls-cert",
            &path(&ours, "server.crt"),
            "--tls-key",
            &path(&ours, "server.key"),
            "--tls-client-ca",
            &path(&ours, "ca.crt"),
        ],
    );
    let with_certificate = |certificates: &Path| {
        format!(
            "verify-ca sslrootcert={} sslcert={} sslkey={}",
            path(&ours, "ca.crt"),
            path(certificates, "client.crt"),
            path(certificates, "client.key")
        )
    };
    let out = psql_as(
        &server,
        "alice",
        None,
        &with_certificate(&ours),
        &["-c", "\\conninfo", "-c", "SELECT 'mutual'"],
    );
    let text = assert_ok(&out);
    assert!(text.contains("SSL connection") && text.ends_with("mutual\n"), "{text}");

    // No certificate: the handshake fails.
    let no_certificate =
        format!("verify-ca sslrootcert={} sslcert=/nonexistent sslkey=/nonexistent", path(&ours, "ca.crt"));
    let out = psql_as(&server, "alice", None, &no_certificate, &["-c", "SELECT 1"]);
    assert!(!out.status.success(), "a client without a certificate got in: {}", stdout(&out));
    // A certificate another CA signed: refused as well.
    let out = psql_as(&server, "alice", None, &with_certificate(&theirs), &["-c", "SELECT 1"]);
    assert!(!out.status.success(), "a certificate of another CA got in: {}", stdout(&out));
    assert!(
        stderr(&out).to_lowercase().contains("certificate") || stderr(&out).contains("SSL"),
        "{}",
        stderr(&out)
    );
    // Without TLS there is no certificate: plain clients are refused.
    let out = psql_as(&server, "alice", None, "disable", &["-c", "SELECT 1"]);
    assert!(stderr(&out).contains("requires TLS"), "{}", stderr(&out));
    // The server goes on serving certified clients.
    assert_eq!(
        assert_ok(&psql_as(&server, "alice", None, &with_certificate(&ours), &["-c", "SELECT 2"])),
        "2\n"
    );
    assert!(server.terminate().success());
}
