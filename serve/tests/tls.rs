//! TLS and mutual TLS on the daemon's gRPC listener, in process: a client with a certificate
//! the daemon's client CA signed is served; one without a certificate, or with a certificate of
//! another CA, is refused with an error that says why; a plain-text client of a TLS daemon and a
//! TLS client of a plain daemon get errors that say what to change; missing, unreadable and
//! malformed certificate and key files are clear errors naming the file. Certificates are made
//! here (rcgen).

mod common;

use std::path::{Path, PathBuf};

use bellows_cpu as _; // the built-in CPU backend the daemon proves on
use bellows_serve::{
    client::{connect_with, rpc_error},
    config::ServeConfig,
    proto,
    server::Daemon,
    tls::ClientTls,
    ServeError,
};
use common::pki::{Ca, Leaf};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bellows-tls-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn config(d: &Path) -> ServeConfig {
    ServeConfig {
        listen: Some("127.0.0.1:0".into()),
        state_dir: Some(d.join("state")),
        synthesis_workers: Some(1),
        finalizers: Some(1),
        pce: Some(false),
        ..Default::default()
    }
}

/// A daemon serving in the background until the returned sender is dropped.
async fn serve(cfg: &ServeConfig) -> (String, tokio::sync::oneshot::Sender<()>) {
    let d = Daemon::start(cfg, Some(1)).await.unwrap();
    let addr = d.local_addr().unwrap().to_string();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(d.serve(async {
        let _ = rx.await;
    }));
    (addr, tx)
}

/// A Status call over a fresh connection: Ok, or the error as a client shows it.
async fn status(addr: &str, tls: Option<&ClientTls>) -> Result<proto::StatusReply, String> {
    let mut c = connect_with(addr, None, tls)
        .await
        .map_err(|e| e.to_string())?;
    c.status(proto::StatusRequest { max_jobs: 1 })
        .await
        .map(tonic::Response::into_inner)
        .map_err(|s| rpc_error(s).to_string())
}

fn client(ca: &Path, leaf: Option<&Leaf>) -> ClientTls {
    ClientTls {
        ca: ca.to_path_buf(),
        cert: leaf.map(|l| l.cert.clone()),
        key: leaf.map(|l| l.key.clone()),
        domain: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_serves_clients_of_its_ca_and_refuses_the_others() {
    let d = dir("mtls");
    let ca = Ca::new("bellows test CA");
    let other = Ca::new("some other CA");
    let ca_pem = ca.write(&d, "ca");
    let other_pem = other.write(&d, "other-ca");
    let server = ca.leaf(&d, "server", false);
    let good = ca.leaf(&d, "client", true);
    let stranger = other.leaf(&d, "stranger", true);

    let mut cfg = config(&d);
    cfg.tls_cert = Some(server.cert.clone());
    cfg.tls_key = Some(server.key.clone());
    cfg.tls_client_ca = Some(ca_pem.clone());
    let (addr, _stop) = serve(&cfg).await;

    // A certificate the client CA signed: served (by IP address and by name).
    let st = status(&addr, Some(&client(&ca_pem, Some(&good))))
        .await
        .unwrap();
    assert_eq!(st.devices[0].backend, "cpu");
    let by_name = addr.replace("127.0.0.1", "localhost");
    status(&by_name, Some(&client(&ca_pem, Some(&good))))
        .await
        .unwrap();

    // No client certificate: refused, and the error says what is missing.
    let e = status(&addr, Some(&client(&ca_pem, None)))
        .await
        .unwrap_err();
    println!("no client certificate: {e}");
    assert!(
        e.contains("requires a client certificate") && e.contains("--tls-cert"),
        "{e}"
    );

    // A certificate of another CA: refused.
    let e = status(&addr, Some(&client(&ca_pem, Some(&stranger))))
        .await
        .unwrap_err();
    println!("another CA's client certificate: {e}");
    assert!(
        e.contains("refused this client's certificate") && e.contains("client CA"),
        "{e}"
    );

    // The client does not trust the daemon's CA: refused on the client's side.
    let e = status(&addr, Some(&client(&other_pem, Some(&good))))
        .await
        .unwrap_err();
    println!("wrong CA for the daemon: {e}");
    assert!(
        e.contains("not signed by the CA given with --tls-ca"),
        "{e}"
    );

    // Plain text against the TLS daemon.
    let e = status(&addr, None).await.unwrap_err();
    println!("plain-text client: {e}");
    assert!(e.contains("--tls-ca"), "{e}");

    // A name the certificate does not carry.
    let mut named = client(&ca_pem, Some(&good));
    named.domain = Some("prover.example".into());
    let e = status(&addr, Some(&named)).await.unwrap_err();
    println!("wrong name: {e}");
    assert!(e.contains("does not name this host"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_without_client_certificates_and_a_tls_client_of_a_plain_daemon() {
    let d = dir("tls");
    let ca = Ca::new("bellows test CA");
    let ca_pem = ca.write(&d, "ca");
    let server = ca.leaf(&d, "server", false);
    let mut cfg = config(&d);
    cfg.tls_cert = Some(server.cert.clone());
    cfg.tls_key = Some(server.key.clone());
    let (addr, _stop) = serve(&cfg).await;
    // TLS without a client CA: any client that trusts the daemon's CA is served.
    status(&addr, Some(&client(&ca_pem, None))).await.unwrap();
    let e = status(&addr, None).await.unwrap_err();
    assert!(e.contains("--tls-ca"), "{e}");

    // A TLS client of a plain-text daemon.
    let mut plain = config(&d);
    plain.state_dir = Some(d.join("state-plain"));
    let (paddr, _stop2) = serve(&plain).await;
    status(&paddr, None).await.unwrap();
    let e = status(&paddr, Some(&client(&ca_pem, None)))
        .await
        .unwrap_err();
    println!("TLS client, plain daemon: {e}");
    assert!(e.contains("does not speak TLS"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_unreadable_and_malformed_files_are_clear_errors() {
    let d = dir("files");
    let ca = Ca::new("bellows test CA");
    let ca_pem = ca.write(&d, "ca");
    let server = ca.leaf(&d, "server", false);
    let other = ca.leaf(&d, "other", false);
    let garbage = d.join("garbage.pem");
    std::fs::write(&garbage, "this is not PEM at all\n").unwrap();
    let broken = d.join("broken.pem");
    std::fs::write(
        &broken,
        "-----BEGIN CERTIFICATE-----\nMIIB!!!notbase64\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let truncated = d.join("truncated.pem");
    let text = std::fs::read_to_string(&server.cert).unwrap();
    std::fs::write(&truncated, &text[..text.len() / 2]).unwrap();
    let missing = d.join("missing.pem");

    let start = |cert: &Path, key: &Path, client_ca: Option<&Path>| {
        let mut cfg = config(&d);
        cfg.tls_cert = Some(cert.to_path_buf());
        cfg.tls_key = Some(key.to_path_buf());
        cfg.tls_client_ca = client_ca.map(Path::to_path_buf);
        async move { Daemon::start(&cfg, Some(1)).await.map(|_| ()) }
    };
    let err = |r: Result<(), ServeError>| r.unwrap_err().to_string();

    let e = err(start(&missing, &server.key, None).await);
    assert!(
        e.contains("missing.pem") && e.contains("No such file"),
        "{e}"
    );
    let e = err(start(&garbage, &server.key, None).await);
    assert!(
        e.contains("garbage.pem") && e.contains("no certificate"),
        "{e}"
    );
    let e = err(start(&broken, &server.key, None).await);
    assert!(e.contains("broken.pem") && e.contains("malformed"), "{e}");
    let e = err(start(&truncated, &server.key, None).await);
    assert!(
        e.contains("truncated.pem") && e.contains("malformed"),
        "{e}"
    );
    // A certificate file where the key should be.
    let e = err(start(&server.cert, &server.cert, None).await);
    assert!(e.contains("no private key"), "{e}");
    // A key that is not the certificate's.
    let e = err(start(&server.cert, &other.key, None).await);
    println!("mismatched key: {e}");
    assert!(e.contains("server.pem") && e.contains("other.key"), "{e}");
    let e = err(start(&server.cert, &server.key, Some(&garbage)).await);
    assert!(e.contains("client CA") && e.contains("garbage.pem"), "{e}");
    #[cfg(unix)]
    if !is_root() {
        use std::os::unix::fs::PermissionsExt;
        let locked = d.join("locked.key");
        std::fs::copy(&server.key, &locked).unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        let e = err(start(&server.cert, &locked, None).await);
        assert!(
            e.contains("locked.key") && e.contains("ermission denied"),
            "{e}"
        );
    }

    // The client's files: the same checks, before connecting.
    let e = status("127.0.0.1:1", Some(&client(&garbage, None)))
        .await
        .unwrap_err();
    assert!(e.contains("--tls-ca") && e.contains("garbage.pem"), "{e}");
    let bad_key = Leaf {
        cert: server.cert.clone(),
        key: garbage.clone(),
    };
    let e = status("127.0.0.1:1", Some(&client(&ca_pem, Some(&bad_key))))
        .await
        .unwrap_err();
    assert!(
        e.contains("--tls-key") && e.contains("no private key"),
        "{e}"
    );
    assert!(ClientTls::resolve(None, Some(&server.cert), None, None).is_err());
    assert!(ClientTls::resolve(None, Some(&server.cert), Some(&server.key), None).is_err());
    let _ = std::fs::remove_dir_all(&d);
}

#[cfg(unix)]
fn is_root() -> bool {
    // Root reads files whatever their mode; the permission check is skipped then.
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}
