//! `bellows serve` end to end, through the built binary: prove/submit/await/status/cancel, proofs
//! equal to a local `prove --pipeline`, a SIGKILL mid-job and a restart on the same state
//! directory, a fault-injecting plugin device with the CPU fallback, metrics, tokens, mutual
//! TLS on a non-loopback address, and bad input. Small circuits only (2^10..2^12), so it stays within CI's budget.

mod common;
#[path = "../../serve/tests/common/pki.rs"]
mod pki;

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
};

use bellows_serve::{proto, tonic};
use common::{check, cmd, dir, s};

/// A running daemon; killed when dropped.
struct Daemon {
    child: Child,
    addr: String,
    metrics: Option<String>,
    log: PathBuf,
}

impl Daemon {
    fn start(state: &Path, extra: &[&str]) -> Daemon {
        Self::start_on(state, "127.0.0.1:0", extra)
    }

    fn start_on(state: &Path, listen: &str, extra: &[&str]) -> Daemon {
        let log = state.with_extension("log");
        let logf = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_bellows"));
        c.args(["-v", "serve", "--listen", listen, "--state-dir", s(state)])
            .args(extra)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(logf);
        let mut child = c.spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let addr = match line.trim().strip_prefix("listening on ") {
            Some(a) => a.to_string(),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "daemon did not start: {line:?}\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
        };
        let metrics = if extra.contains(&"--metrics-listen") {
            line.clear();
            out.read_line(&mut line).unwrap();
            Some(
                line.trim()
                    .strip_prefix("metrics on ")
                    .expect("metrics line")
                    .to_string(),
            )
        } else {
            None
        };
        Daemon {
            child,
            addr,
            metrics,
            log,
        }
    }

    fn kill9(&mut self) {
        // SIGKILL: no handler runs, nothing is flushed by the daemon itself.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(args: &[&str], code: i32) -> (String, String) {
    let o = cmd(args).output().unwrap();
    check(&o, args, code)
}

/// Trusted parameters (and a verifying key) for synthetic 2^k.
fn setup(d: &Path, k: u32) -> (PathBuf, PathBuf) {
    let (p, vk) = (d.join("p.params"), d.join("p.vk"));
    let k = k.to_string();
    run(
        &[
            "setup",
            "--circuit",
            "synthetic",
            "--log-size",
            &k,
            "--seed",
            "1",
            "--out",
            s(&p),
            "--vk-out",
            s(&vk),
        ],
        0,
    );
    (p, vk)
}

fn verify(vk: &Path, proof: &Path, inputs: &Path) {
    let (out, _) = run(
        &[
            "verify",
            "--vk",
            s(vk),
            "--proof",
            s(proof),
            "--inputs",
            s(inputs),
        ],
        0,
    );
    assert!(out.contains("valid"), "{out}");
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn status_json(addr: &str) -> serde_json::Value {
    let (out, _) = run(&["status", "--daemon", addr, "--json"], 0);
    serde_json::from_str(&out).unwrap()
}

#[test]
fn prove_submit_await_status_and_cancel_through_a_daemon() {
    let d = dir("serve", "roundtrip");
    let (params, vk) = setup(&d, 10);
    let daemon = Daemon::start(&d.join("state"), &["--metrics-listen", "127.0.0.1:0"]);
    let addr = daemon.addr.as_str();
    let circuit = ["--circuit", "synthetic", "--log-size", "10"];

    // prove --daemon writes what a local prove --pipeline writes, byte for byte (same seed).
    let (dp, di) = (d.join("d.proof"), d.join("d.json"));
    let mut args = vec!["prove", "--daemon", addr, "--params", s(&params)];
    args.extend(circuit);
    args.extend([
        "--count",
        "3",
        "--seed",
        "5",
        "--out",
        s(&dp),
        "--inputs-out",
        s(&di),
    ]);
    run(&args, 0);
    verify(&vk, &dp, &di);
    let (lp, li) = (d.join("l.proof"), d.join("l.json"));
    let mut args = vec!["prove", "--pipeline", "--params", s(&params)];
    args.extend(circuit);
    args.extend([
        "--count",
        "3",
        "--seed",
        "5",
        "--out",
        s(&lp),
        "--inputs-out",
        s(&li),
    ]);
    run(&args, 0);
    assert_eq!(std::fs::read(&dp).unwrap(), std::fs::read(&lp).unwrap());
    assert_eq!(std::fs::read(&di).unwrap(), std::fs::read(&li).unwrap());

    // submit prints the id alone on its last line; await writes the files submit named.
    let (sp, si) = (d.join("s.proof"), d.join("s.json"));
    let mut args = vec!["submit", "--daemon", addr, "--params", s(&params)];
    args.extend(circuit);
    args.extend(["--count", "2", "--out", s(&sp), "--inputs-out", s(&si)]);
    let (out, _) = run(&args, 0);
    let id = out.lines().last().unwrap().trim().to_string();
    assert!(id.parse::<u64>().is_ok(), "{out:?}");
    assert!(!sp.exists(), "submit writes nothing itself");
    run(&["await", &id, "--daemon", addr], 0);
    verify(&vk, &sp, &si);
    // Awaiting again is refused without --force (the files exist), and works with it.
    let (_, err) = run(&["await", &id, "--daemon", addr], 1);
    assert!(err.contains("--force"), "{err}");
    run(&["await", &id, "--daemon", addr, "--force"], 0);

    // Without an inputs file, prove prints the inputs on stdout, as locally.
    let op = d.join("o.proof");
    let mut args = vec!["prove", "--daemon", addr, "--params", s(&params)];
    args.extend(circuit);
    args.extend(["--seed", "2", "--out", s(&op)]);
    let (out, _) = run(&args, 0);
    assert!(out.trim().starts_with("[\""), "{out}");

    let st = status_json(addr);
    let jobs = st["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3);
    assert!(jobs.iter().all(|j| j["state"] == "done"), "{st}");
    assert_eq!(st["devices"][0]["backend"], "cpu");
    assert_eq!(st["devices"][0]["partitions"], 6);
    let (text, _) = run(&["status", "--daemon", addr], 0);
    assert!(
        text.contains("devices:") && text.contains("jobs:"),
        "{text}"
    );

    // Cancel: a finished job stays done; an unknown one is an error.
    let (out, _) = run(&["cancel", &id, "--daemon", addr], 0);
    assert_eq!(out.trim(), format!("job {id}: done"));
    let (_, err) = run(&["cancel", "999999", "--daemon", addr], 1);
    assert!(err.contains("no job 999999"), "{err}");
    let (_, err) = run(&["await", "999999", "--daemon", addr], 1);
    assert!(err.contains("no job 999999"), "{err}");

    // Prometheus metrics over HTTP.
    let m = daemon.metrics.clone().unwrap();
    let hostport = m
        .trim_start_matches("http://")
        .trim_end_matches("/metrics")
        .to_string();
    let mut conn = TcpStream::connect(&hostport).unwrap();
    conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut body = String::new();
    conn.read_to_string(&mut body).unwrap();
    for name in [
        "bellows_queue_partitions",
        "bellows_device_busy_seconds_total",
        "bellows_phase_seconds_bucket",
        "bellows_memory_bytes",
        "bellows_partitions_total",
        "bellows_jobs_total",
    ] {
        assert!(body.contains(name), "{name} missing from:\n{body}");
    }
}

#[test]
fn a_job_survives_sigkill_mid_job_and_a_restart_finishes_it() {
    let d = dir("serve", "sigkill");
    let (params, vk) = setup(&d, 12);
    let state = d.join("state");
    let slow = ["--synthesis-workers", "1", "--no-pce"];
    let mut daemon = Daemon::start(&state, &slow);
    let (pp, pi) = (d.join("k.proof"), d.join("k.json"));
    let args = [
        "submit",
        "--daemon",
        &daemon.addr,
        "--params",
        s(&params),
        "--circuit",
        "synthetic",
        "--log-size",
        "12",
        "--count",
        "8",
        "--out",
        s(&pp),
        "--inputs-out",
        s(&pi),
    ];
    let (out, _) = run(&args, 0);
    let id: u64 = out.lines().last().unwrap().trim().parse().unwrap();

    // Follow the job's progress and kill the daemon with SIGKILL once one partition is done.
    let addr = daemon.addr.clone();
    rt().block_on(async {
        let mut c = bellows_serve::client::connect(&addr, None).await.unwrap();
        let mut st = c
            .r#await(proto::AwaitRequest {
                job_id: id,
                final_only: false,
            })
            .await
            .unwrap()
            .into_inner();
        while let Some(ev) = st.message().await.unwrap() {
            if ev.partitions_done >= 1 {
                return;
            }
        }
        panic!("the stream ended before a partition was done");
    });
    daemon.kill9();

    // It really died mid-job: the journal has the job unfinished, with some partitions.
    let db = rusqlite::Connection::open(state.join("jobs.sqlite")).unwrap();
    let (job_state, stored): (String, i64) = db
        .query_row(
            "SELECT state, (SELECT COUNT(*) FROM partitions WHERE job = ?1) FROM jobs WHERE id = ?1",
            [id as i64],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    drop(db);
    assert_eq!(job_state, "running");
    assert!((1..8).contains(&stored), "{stored} partitions stored");

    // Restart on the same state directory; await gets every proof, and they verify.
    let daemon = Daemon::start(&state, &slow);
    run(&["await", &id.to_string(), "--daemon", &daemon.addr], 0);
    verify(&vk, &pp, &pi);
    assert_eq!(std::fs::read(&pp).unwrap().len(), 8 * 192);
    let log = daemon.log();
    assert!(log.contains("resumed"), "{log}");
}

#[test]
fn a_failing_plugin_device_hands_its_partitions_to_the_cpu_fallback() {
    let d = dir("serve", "fault");
    let (params, vk) = setup(&d, 10);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let plugin = bellows_conformance::plugin_build::build_cdylib(
        &root.join("Cargo.toml"),
        "bellows-backend-faulty",
        "bellows_backend_faulty",
    )
    .unwrap();
    let config = d.join("bellows.toml");
    std::fs::write(
        &config,
        format!(
            "[[device]]\nbackend = {:?}\nworkers = 1\noptions = {{ fault = \"device\" }}\n",
            s(&plugin)
        ),
    )
    .unwrap();
    let daemon = Daemon::start(&d.join("state"), &["--config", s(&config)]);
    let (pp, pi) = (d.join("f.proof"), d.join("f.json"));
    run(
        &[
            "prove",
            "--daemon",
            &daemon.addr,
            "--params",
            s(&params),
            "--circuit",
            "synthetic",
            "-k",
            "10",
            "--count",
            "2",
            "--out",
            s(&pp),
            "--inputs-out",
            s(&pi),
        ],
        0,
    );
    verify(&vk, &pp, &pi);
    let st = status_json(&daemon.addr);
    assert!(st["retries"].as_u64().unwrap() >= 2, "{st}");
    let devs = st["devices"].as_array().unwrap();
    assert_eq!(devs[0]["backend"], "faulty");
    assert!(devs[0]["errors"].as_u64().unwrap() >= 2, "{st}");
    assert_eq!(devs[1]["name"], "cpu-fallback");
    assert_eq!(devs[1]["partitions"], 2);
    let log = daemon.log();
    assert!(log.contains("retrying on another device"), "{log}");
}

#[test]
fn remote_addresses_need_a_token_and_tokens_are_checked() {
    let d = dir("serve", "security");
    // A non-loopback address: refused without --allow-remote, and without a token.
    let st = d.join("state");
    let (_, err) = run(
        &["serve", "--listen", "0.0.0.0:0", "--state-dir", s(&st)],
        1,
    );
    assert!(err.contains("--allow-remote"), "{err}");
    let (_, err) = run(
        &[
            "serve",
            "--listen",
            "0.0.0.0:0",
            "--allow-remote",
            "--state-dir",
            s(&st),
        ],
        1,
    );
    assert!(err.contains("token"), "{err}");

    // A token on loopback: required and compared.
    let tok = d.join("token");
    std::fs::write(&tok, "0123456789abcdef-secret\n").unwrap();
    let daemon = Daemon::start(&st, &["--token-file", s(&tok)]);
    let (_, err) = run(&["status", "--daemon", &daemon.addr], 1);
    assert!(err.contains("requires a token"), "{err}");
    let bad = d.join("bad-token");
    std::fs::write(&bad, "not-the-right-token").unwrap();
    let (_, err) = run(
        &["status", "--daemon", &daemon.addr, "--token-file", s(&bad)],
        1,
    );
    assert!(err.contains("wrong token"), "{err}");
    run(
        &["status", "--daemon", &daemon.addr, "--token-file", s(&tok)],
        0,
    );
    let o = cmd(&["status", "--daemon", &daemon.addr])
        .env("BELLOWS_TOKEN", "0123456789abcdef-secret")
        .output()
        .unwrap();
    check(&o, &["status"], 0);
}

#[test]
fn garbage_oversized_and_wrong_requests_get_errors_and_the_daemon_keeps_serving() {
    let d = dir("serve", "bad-input");
    let (params, vk) = setup(&d, 10);
    let daemon = Daemon::start(&d.join("state"), &[]);
    let addr = daemon.addr.clone();

    // Garbage bytes on the socket: the connection is dropped, nothing else happens.
    {
        let mut c = TcpStream::connect(&addr).unwrap();
        let _ = c.write_all(&[0xde; 4096]);
        let mut sink = Vec::new();
        let _ = c.read_to_end(&mut sink);
    }
    // Half an HTTP/2 preface, then a close.
    {
        let mut c = TcpStream::connect(&addr).unwrap();
        let _ = c.write_all(b"PRI * HTTP/2.0\r\n");
    }

    let good = |partitions: u32| proto::SubmitRequest {
        kind: Some(proto::submit_request::Kind::Builtin(
            proto::BuiltinCircuit {
                name: "synthetic".into(),
                log_size: Some(10),
                ..Default::default()
            },
        )),
        params_path: s(&params).into(),
        partitions,
        witness_seed: 3,
        ..Default::default()
    };
    rt().block_on(async {
        let mut c = bellows_serve::client::connect(&addr, None).await.unwrap();
        let code = |r: Result<tonic::Response<proto::SubmitReply>, tonic::Status>| match r {
            Ok(_) => panic!("accepted a bad request"),
            Err(s) => (s.code(), s.message().to_string()),
        };
        // Oversized: a 5 MiB message against the 4 MiB default limit.
        let mut big = good(1);
        big.params_path = "x".repeat(5 << 20);
        let (c1, m1) = code(c.submit(big).await);
        assert!(
            matches!(
                c1,
                tonic::Code::OutOfRange | tonic::Code::ResourceExhausted | tonic::Code::Internal
            ),
            "{c1:?} {m1}"
        );
        // Unknown circuit.
        let mut r = good(1);
        r.kind = Some(proto::submit_request::Kind::Builtin(
            proto::BuiltinCircuit {
                name: "nope".into(),
                ..Default::default()
            },
        ));
        let (c2, m2) = code(c.submit(r).await);
        assert_eq!(c2, tonic::Code::InvalidArgument, "{m2}");
        assert!(m2.contains("unknown circuit"), "{m2}");
        // Wrong input count: sha256 has two public inputs, these parameters serve one.
        let mut r = good(1);
        r.kind = Some(proto::submit_request::Kind::Builtin(
            proto::BuiltinCircuit {
                name: "sha256".into(),
                bytes: Some(3),
                ..Default::default()
            },
        ));
        let (c3, m3) = code(c.submit(r).await);
        assert_eq!(c3, tonic::Code::InvalidArgument, "{m3}");
        assert!(m3.contains("do not fit"), "{m3}");
        // No circuit at all, zero partitions, a missing file, parameters that are garbage.
        let mut r = good(1);
        r.kind = None;
        assert_eq!(code(c.submit(r).await).0, tonic::Code::InvalidArgument);
        assert_eq!(
            code(c.submit(good(0)).await).0,
            tonic::Code::InvalidArgument
        );
        let mut r = good(1);
        r.params_path = "/nonexistent/p.params".into();
        assert_eq!(code(c.submit(r).await).0, tonic::Code::NotFound);
        let junk = d.join("junk.params");
        std::fs::write(&junk, b"not a parameters file at all").unwrap();
        let mut r = good(1);
        r.params_path = s(&junk).into();
        assert_eq!(code(c.submit(r).await).0, tonic::Code::InvalidArgument);
        // Await of a job that does not exist.
        let e = c
            .r#await(proto::AwaitRequest {
                job_id: 12345,
                final_only: true,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::NotFound);

        // Backends, PreloadParams, EvictParams.
        let b = c
            .backends(proto::BackendsRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(b.devices[0].backend, "cpu");
        assert_eq!(b.capabilities.len(), b.devices.len());
        let p = c
            .preload_params(proto::PreloadParamsRequest {
                path: s(&params).into(),
                skip_subgroup_checks: false,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(p.params.len(), 1);
        assert!(p.params[0].bytes > 0);
        assert_eq!(p.params[0].devices, vec![0]);
        let p = c
            .evict_params(proto::EvictParamsRequest {
                digest: p.params[0].digest.clone(),
                path: String::new(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(p.params[0].bytes, 0);
        assert!(p.params[0].devices.is_empty());
        let e = c
            .evict_params(proto::EvictParamsRequest {
                digest: vec![1, 2, 3],
                path: String::new(),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        let e = c
            .preload_params(proto::PreloadParamsRequest {
                path: "/nonexistent/p.params".into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::NotFound);
    });

    // Still serving: a good job proves and verifies.
    let (pp, pi) = (d.join("g.proof"), d.join("g.json"));
    run(
        &[
            "prove",
            "--daemon",
            &addr,
            "--params",
            s(&params),
            "--circuit",
            "synthetic",
            "-k",
            "10",
            "--out",
            s(&pp),
            "--inputs-out",
            s(&pi),
        ],
        0,
    );
    verify(&vk, &pp, &pi);
}

#[test]
fn mutual_tls_on_a_remote_address_through_every_client_command() {
    let d = dir("serve", "mtls");
    let (params, vk) = setup(&d, 10);
    let ca = pki::Ca::new("bellows test CA");
    let ca_pem = ca.write(&d, "ca");
    let server = ca.leaf(&d, "server", false);
    let client = ca.leaf(&d, "client", true);
    let stranger = pki::Ca::new("another CA").leaf(&d, "stranger", true);

    // Mutual TLS is enough for a non-loopback address (no token).
    let st = d.join("state");
    let tls_serve = [
        "--tls-cert",
        s(&server.cert),
        "--tls-key",
        s(&server.key),
        "--tls-client-ca",
        s(&ca_pem),
    ];
    // Bad files fail the start with the file's name.
    let (_, err) = run(
        &[
            "serve",
            "--state-dir",
            s(&st),
            "--tls-cert",
            s(&d.join("nope.pem")),
            "--tls-key",
            s(&server.key),
        ],
        1,
    );
    assert!(err.contains("nope.pem"), "{err}");
    let (_, err) = run(
        &[
            "serve",
            "--state-dir",
            s(&st),
            "--tls-cert",
            s(&server.key),
            "--tls-key",
            s(&server.key),
        ],
        1,
    );
    assert!(err.contains("no certificate"), "{err}");

    let mut extra = vec!["--allow-remote"];
    extra.extend(tls_serve);
    let mut daemon = Daemon::start_on(&st, "0.0.0.0:0", &extra);
    // The certificate names 127.0.0.1 (the daemon listens on every address).
    daemon.addr = daemon.addr.replace("0.0.0.0", "127.0.0.1");
    let addr = daemon.addr.clone();
    let tls = [
        "--tls-ca",
        s(&ca_pem),
        "--tls-cert",
        s(&client.cert),
        "--tls-key",
        s(&client.key),
    ];
    let with = |args: &[&str]| {
        let mut v: Vec<&str> = args.to_vec();
        v.extend(["--daemon", addr.as_str()]);
        v.extend(tls);
        v.iter().map(|x| x.to_string()).collect::<Vec<String>>()
    };
    let go = |args: Vec<String>, code: i32| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&a, code)
    };
    let circuit = ["--circuit", "synthetic", "-k", "10", "--params", s(&params)];

    // prove, submit + await, status, cancel and bench, each over mutual TLS.
    let (pp, pi) = (d.join("t.proof"), d.join("t.json"));
    let mut args = vec!["prove"];
    args.extend(circuit);
    args.extend(["--count", "2", "--out", s(&pp), "--inputs-out", s(&pi)]);
    go(with(&args), 0);
    verify(&vk, &pp, &pi);
    let (sp, si) = (d.join("u.proof"), d.join("u.json"));
    let mut args = vec!["submit"];
    args.extend(circuit);
    args.extend(["--out", s(&sp), "--inputs-out", s(&si)]);
    let (out, _) = go(with(&args), 0);
    let id = out.lines().last().unwrap().trim().to_string();
    go(with(&["await", &id]), 0);
    verify(&vk, &sp, &si);
    let (out, _) = go(with(&["cancel", &id]), 0);
    assert_eq!(out.trim(), format!("job {id}: done"));
    let (out, _) = go(with(&["status", "--json"]), 0);
    let st: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(st["devices"][0]["partitions"], 3);
    let mut args = vec!["bench"];
    args.extend(circuit);
    args.extend(["--count", "1", "--json"]);
    let (out, _) = go(with(&args), 0);
    let b: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(b["mode"], "daemon");
    // The same settings from the environment.
    let o = cmd(&["status", "--daemon", &addr])
        .env("BELLOWS_TLS_CA", &ca_pem)
        .env("BELLOWS_TLS_CERT", &client.cert)
        .env("BELLOWS_TLS_KEY", &client.key)
        .output()
        .unwrap();
    check(&o, &["status"], 0);

    // Refused: no client certificate, another CA's certificate, plain text.
    let (_, err) = run(&["status", "--daemon", &addr, "--tls-ca", s(&ca_pem)], 1);
    assert!(err.contains("requires a client certificate"), "{err}");
    let (_, err) = run(
        &[
            "status",
            "--daemon",
            &addr,
            "--tls-ca",
            s(&ca_pem),
            "--tls-cert",
            s(&stranger.cert),
            "--tls-key",
            s(&stranger.key),
        ],
        1,
    );
    assert!(err.contains("refused this client's certificate"), "{err}");
    let (_, err) = run(&["status", "--daemon", &addr], 1);
    assert!(err.contains("--tls-ca"), "{err}");
    // A certificate without its key is a usage error before any connection.
    let (_, err) = run(
        &[
            "status",
            "--daemon",
            &addr,
            "--tls-ca",
            s(&ca_pem),
            "--tls-cert",
            s(&client.cert),
        ],
        1,
    );
    assert!(err.contains("--tls-key"), "{err}");
}

#[test]
fn device_memory_budgets_are_set_shown_and_refuse_what_cannot_fit() {
    let d = dir("serve", "device-budget");
    let (params, _) = setup(&d, 10);
    let st = d.join("state");
    // A malformed budget is a usage error; a device that does not exist, an error naming those
    // that do.
    let (_, err) = run(
        &[
            "serve",
            "--state-dir",
            s(&st),
            "--device-memory-budget",
            "0=lots",
        ],
        2,
    );
    assert!(err.contains("invalid value '0=lots'"), "{err}");
    let (_, err) = run(
        &[
            "serve",
            "--state-dir",
            s(&st),
            "--device-memory-budget",
            "3=1GiB",
        ],
        1,
    );
    assert!(err.contains("no device \"3\" (devices: cpu)"), "{err}");

    let daemon = Daemon::start(&st, &["--device-memory-budget", "cpu=64KiB"]);
    let sj = status_json(&daemon.addr);
    assert_eq!(sj["devices"][0]["memory_budget_bytes"], 64 << 10);
    assert_eq!(sj["devices"][0]["memory_reserved_bytes"], 0);
    // A 2^10 partition and its parameters' points need more than 64 KiB: refused at once.
    let (_, err) = run(
        &[
            "prove",
            "--daemon",
            &daemon.addr,
            "--params",
            s(&params),
            "--circuit",
            "synthetic",
            "-k",
            "10",
            "--out",
            s(&d.join("x.proof")),
        ],
        1,
    );
    assert!(
        err.contains("does not fit any device's memory budget") && err.contains("cpu 64.0 KiB"),
        "{err}"
    );
    let (text, _) = run(&["status", "--daemon", &daemon.addr], 0);
    assert!(text.contains("memory 0 B of 64.0 KiB"), "{text}");
}
