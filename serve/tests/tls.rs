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
};
use common::pki::{Ca, Leaf};

/// A fresh folder `tls-NAME` with a test CA (its certificate in `ca.pem`) and a server
/// certificate it signed: (folder, CA, CA file, server certificate).
fn with_ca(name: &str) -> (PathBuf, Ca, PathBuf, Leaf) {
    let d = common::dir(&format!("tls-{name}"));
    let ca = Ca::new("bellows test CA");
    let ca_pem = ca.write(&d, "ca");
    let server = ca.leaf(&d, "server", false);
    (d, ca, ca_pem, server)
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

/// [`config`] with TLS: the server's certificate and key, and the CA its clients' certificates
/// must come from (none: no client certificates).
fn tls_config(d: &Path, server: &Leaf, client_ca: Option<&Path>) -> ServeConfig {
    ServeConfig {
        tls_cert: Some(server.cert.clone()),
        tls_key: Some(server.key.clone()),
        tls_client_ca: client_ca.map(Path::to_path_buf),
        ..config(d)
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

/// A Status call that is refused (`what`, shown), with an error that holds each of `want`.
async fn refused(addr: &str, tls: Option<&ClientTls>, what: &str, want: &[&str]) {
    let e = status(addr, tls).await.unwrap_err();
    println!("{what}: {e}");
    assert!(want.iter().all(|w| e.contains(w)), "{what}: {e}");
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
    let (d, ca, ca_pem, server) = with_ca("mtls");
    let other = Ca::new("some other CA");
    let other_pem = other.write(&d, "other-ca");
    let good = ca.leaf(&d, "client", true);
    let stranger = other.leaf(&d, "stranger", true);

    let (addr, _stop) = serve(&tls_config(&d, &server, Some(&ca_pem))).await;

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
    let none = client(&ca_pem, None);
    let want = ["requires a client certificate", "--tls-cert"];
    refused(&addr, Some(&none), "no client certificate", &want).await;
    // A certificate of another CA: refused.
    let theirs = client(&ca_pem, Some(&stranger));
    let want = ["refused this client's certificate", "client CA"];
    refused(
        &addr,
        Some(&theirs),
        "another CA's client certificate",
        &want,
    )
    .await;
    // The client does not trust the daemon's CA: refused on the client's side.
    let distrust = client(&other_pem, Some(&good));
    let want = ["not signed by the CA given with --tls-ca"];
    refused(&addr, Some(&distrust), "wrong CA for the daemon", &want).await;
    // A name the certificate does not carry.
    let mut named = client(&ca_pem, Some(&good));
    named.domain = Some("prover.example".into());
    let want = ["does not name this host"];
    refused(&addr, Some(&named), "wrong name", &want).await;

    // Plain text against the TLS daemon.
    refused(&addr, None, "plain-text client", &["--tls-ca"]).await;
    let _ = std::fs::remove_dir_all(&d);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_without_client_certificates_and_a_tls_client_of_a_plain_daemon() {
    let (d, _, ca_pem, server) = with_ca("tls");
    let (addr, _stop) = serve(&tls_config(&d, &server, None)).await;
    // TLS without a client CA: any client that trusts the daemon's CA is served.
    status(&addr, Some(&client(&ca_pem, None))).await.unwrap();
    refused(&addr, None, "plain-text client", &["--tls-ca"]).await;

    // A TLS client of a plain-text daemon.
    let mut plain = config(&d);
    plain.state_dir = Some(d.join("state-plain"));
    let (paddr, _stop2) = serve(&plain).await;
    status(&paddr, None).await.unwrap();
    let tls = client(&ca_pem, None);
    let want = ["does not speak TLS"];
    refused(&paddr, Some(&tls), "TLS client, plain daemon", &want).await;
    let _ = std::fs::remove_dir_all(&d);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_unreadable_and_malformed_files_are_clear_errors() {
    let (d, ca, ca_pem, server) = with_ca("files");
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

    // A daemon started with these files fails with an error that holds each of `want`.
    let start_refused = |cert: &Path, key: &Path, client_ca: Option<&Path>, want: &[&str]| {
        let leaf = Leaf {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
        };
        let cfg = tls_config(&d, &leaf, client_ca);
        let want: Vec<String> = want.iter().map(|w| w.to_string()).collect();
        async move {
            let e = Daemon::start(&cfg, Some(1))
                .await
                .err()
                .unwrap()
                .to_string();
            println!("{e}");
            assert!(want.iter().all(|w| e.contains(w)), "{e}");
        }
    };
    let key = &server.key;
    start_refused(&missing, key, None, &["missing.pem", "No such file"]).await;
    start_refused(&garbage, key, None, &["garbage.pem", "no certificate"]).await;
    start_refused(&broken, key, None, &["broken.pem", "malformed"]).await;
    start_refused(&truncated, key, None, &["truncated.pem", "malformed"]).await;
    // A certificate file where the key should be.
    start_refused(&server.cert, &server.cert, None, &["no private key"]).await;
    // A key that is not the certificate's.
    start_refused(&server.cert, &other.key, None, &["server.pem", "other.key"]).await;
    let want = ["client CA", "garbage.pem"];
    start_refused(&server.cert, key, Some(&garbage), &want).await;
    #[cfg(unix)]
    if !is_root() {
        use std::os::unix::fs::PermissionsExt;
        let locked = d.join("locked.key");
        std::fs::copy(&server.key, &locked).unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        let want = ["locked.key", "ermission denied"];
        start_refused(&server.cert, &locked, None, &want).await;
    }

    // The client's files: the same checks, before connecting.
    let (nowhere, bad_ca) = ("127.0.0.1:1", client(&garbage, None));
    refused(
        nowhere,
        Some(&bad_ca),
        "a CA that is not PEM",
        &["--tls-ca", "garbage.pem"],
    )
    .await;
    let bad_key = Leaf {
        cert: server.cert.clone(),
        key: garbage.clone(),
    };
    let tls = client(&ca_pem, Some(&bad_key));
    refused(
        nowhere,
        Some(&tls),
        "a key that is not PEM",
        &["--tls-key", "no private key"],
    )
    .await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_names_the_owner_of_the_jobs_it_submits() {
    // #43 item 9: the identity of a mutual-TLS client is its certificate's common name; its
    // jobs are its own (and an admin's to see).
    let (d, ca, ca_pem, server) = with_ca("owners");
    let params = common::synthetic_params(&d, 6);
    let [alice, bob, carol] = ["alice", "bob", "carol"].map(|n| ca.leaf(&d, n, true));
    let mut cfg = tls_config(&d, &server, Some(&ca_pem));
    cfg.params_dirs = vec![d.clone()];
    cfg.admins = vec!["tls:CN=carol".into()];
    let (addr, _stop) = serve(&cfg).await;
    let connect = |who: &Leaf| {
        let tls = client(&ca_pem, Some(who));
        let addr = addr.clone();
        async move { connect_with(&addr, None, Some(&tls)).await.unwrap() }
    };
    let job = connect(&alice)
        .await
        .submit(proto::SubmitRequest {
            kind: Some(proto::submit_request::Kind::Builtin(
                proto::BuiltinCircuit {
                    name: "synthetic".into(),
                    log_size: Some(6),
                    ..Default::default()
                },
            )),
            params_path: params.display().to_string(),
            partitions: 1,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let jobs = |st: proto::StatusReply| st.jobs.iter().map(|j| j.job_id).collect::<Vec<_>>();
    let status = |who: &Leaf| {
        let c = connect(who);
        async move {
            c.await
                .status(proto::StatusRequest { max_jobs: 10 })
                .await
                .unwrap()
                .into_inner()
        }
    };
    assert_eq!(jobs(status(&alice).await), vec![job]);
    assert!(jobs(status(&bob).await).is_empty());
    assert_eq!(
        jobs(status(&carol).await),
        vec![job],
        "an admin sees every job"
    );
    let e = connect(&bob)
        .await
        .cancel(proto::CancelRequest { job_id: job })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
}
