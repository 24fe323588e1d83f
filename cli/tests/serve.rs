//! `bellows serve` end to end, through the built binary: prove/submit/await/status/cancel, proofs
//! equal to a local `prove --pipeline`, a SIGKILL mid-job and a restart on the same state
//! directory, a fault-injecting plugin device with the CPU fallback, metrics, tokens, mutual
//! TLS on a non-loopback address, and bad input. Small circuits only (2^10..2^12), so it stays within CI's budget.

mod common;
#[path = "../../serve/tests/common/pki.rs"]
mod pki;

use std::{
    io::{Read, Write},
    net::TcpStream,
    path::Path,
};

use bellows_serve::{proto, tonic};
use common::daemon::{events, rt, synthetic_request, Daemon};
use common::{argv, check, cmd, dir, params_and_key, refused, run, s};

/// `bellows serve` on `listen` with its state in `state`, reading parameters from the state's
/// folder (where the tests put them).
fn start_on(state: &Path, listen: &str, extra: &[&str]) -> Daemon {
    Daemon::start(listen, state, state.parent().unwrap(), extra)
}

fn start(state: &Path, extra: &[&str]) -> Daemon {
    start_on(state, "127.0.0.1:0", extra)
}

fn verify(vk: &Path, proof: &Path, inputs: &Path) {
    let (out, _) = run(&common::verify_args(vk, proof, inputs), 0);
    assert!(out.contains("valid"), "{out}");
}

/// `prove --daemon ADDR --params PARAMS` of synthetic 2^10, then `rest` (`common::argv`'s form);
/// asserts exit code `code`, returns (stdout, stderr).
fn prove_k10(
    addr: &str,
    params: &Path,
    rest: &str,
    values: &[&str],
    code: i32,
) -> (String, String) {
    let line = format!("prove --daemon {{}} --params {{}} --circuit synthetic -k 10 {rest}");
    run(&argv(&line, &[&[addr, s(params)], values].concat()), code)
}

fn status_json(addr: &str) -> serde_json::Value {
    let (out, _) = run(&["status", "--daemon", addr, "--json"], 0);
    serde_json::from_str(&out).unwrap()
}

#[test]
fn prove_submit_await_status_and_cancel_through_a_daemon() {
    let d = dir("serve", "roundtrip");
    let (params, vk) = params_and_key(&d, 10);
    let daemon = start(&d.join("state"), &["--metrics-listen", "127.0.0.1:0"]);
    let addr = daemon.addr.as_str();
    // `COMMAND --params P` of synthetic 2^10 with the daemon or the pipeline, then `rest`.
    let prove = |command: &str, rest: &str, values: &[&str]| {
        let line = format!("{command} --params {{}} --circuit synthetic --log-size 10 {rest}");
        run(&argv(&line, &[&[s(&params)], values].concat()), 0).0
    };
    let on_daemon = |command: &str| format!("{command} --daemon {addr}");
    let files = "--out {} --inputs-out {}";

    // prove --daemon writes what a local prove --pipeline writes, byte for byte (same seed).
    let (dp, di) = (d.join("d.proof"), d.join("d.json"));
    let rest = format!("--count 3 --seed 5 {files}");
    prove(&on_daemon("prove"), &rest, &[s(&dp), s(&di)]);
    verify(&vk, &dp, &di);
    let (lp, li) = (d.join("l.proof"), d.join("l.json"));
    prove("prove --pipeline", &rest, &[s(&lp), s(&li)]);
    assert_eq!(std::fs::read(&dp).unwrap(), std::fs::read(&lp).unwrap());
    assert_eq!(std::fs::read(&di).unwrap(), std::fs::read(&li).unwrap());

    // submit prints the id alone on its last line; await writes the files submit named.
    let (sp, si) = (d.join("s.proof"), d.join("s.json"));
    let out = prove(
        &on_daemon("submit"),
        &format!("--count 2 {files}"),
        &[s(&sp), s(&si)],
    );
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
    let out = prove(&on_daemon("prove"), "--seed 2 --out {}", &[s(&op)]);
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
    let (_, body) = daemon.http("/metrics");
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
    let (params, vk) = params_and_key(&d, 12);
    let state = d.join("state");
    let slow = ["--synthesis-workers", "1", "--no-pce"];
    let mut daemon = start(&state, &slow);
    let (pp, pi) = (d.join("k.proof"), d.join("k.json"));
    let line = "submit --daemon {} --params {} --circuit synthetic --log-size 12 --count 8 \
                --out {} --inputs-out {}";
    let args = argv(line, &[&daemon.addr, s(&params), s(&pp), s(&pi)]);
    let (out, _) = run(&args, 0);
    let id: u64 = out.lines().last().unwrap().trim().parse().unwrap();

    // Follow the job's progress and kill the daemon with SIGKILL once one partition is done.
    let addr = daemon.addr.clone();
    rt().block_on(async {
        let mut c = bellows_serve::client::connect(&addr, None).await.unwrap();
        let mut st = events(&mut c, id, false).await.unwrap();
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
    let daemon = start(&state, &slow);
    run(&["await", &id.to_string(), "--daemon", &daemon.addr], 0);
    verify(&vk, &pp, &pi);
    assert_eq!(std::fs::read(&pp).unwrap().len(), 8 * 192);
    let log = daemon.log();
    assert!(log.contains("resumed"), "{log}");
}

#[test]
fn a_failing_plugin_device_hands_its_partitions_to_the_cpu_fallback() {
    let d = dir("serve", "fault");
    let (params, vk) = params_and_key(&d, 10);
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
    let daemon = start(&d.join("state"), &["--config", s(&config)]);
    let (pp, pi) = (d.join("f.proof"), d.join("f.json"));
    prove_k10(
        &daemon.addr,
        &params,
        "--count 2 --out {} --inputs-out {}",
        &[s(&pp), s(&pi)],
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
    let serve = "serve --listen 0.0.0.0:0 --state-dir {}";
    refused(serve, &[s(&st)], 1, "--allow-remote");
    refused(&format!("{serve} --allow-remote"), &[s(&st)], 1, "token");

    // A token on loopback: required and compared.
    let tok = d.join("token");
    std::fs::write(&tok, "0123456789abcdef-secret\n").unwrap();
    let daemon = start(&st, &["--token-file", s(&tok)]);
    refused("status --daemon {}", &[&daemon.addr], 1, "requires a token");
    let bad = d.join("bad-token");
    std::fs::write(&bad, "not-the-right-token").unwrap();
    let status = "status --daemon {} --token-file {}";
    refused(status, &[&daemon.addr, s(&bad)], 1, "wrong token");
    run(&argv(status, &[&daemon.addr, s(&tok)]), 0);
    let o = cmd(&["status", "--daemon", &daemon.addr])
        .env("BELLOWS_TOKEN", "0123456789abcdef-secret")
        .output()
        .unwrap();
    check(&o, &["status"], 0);
}

#[test]
fn garbage_oversized_and_wrong_requests_get_errors_and_the_daemon_keeps_serving() {
    let d = dir("serve", "bad-input");
    let (params, vk) = params_and_key(&d, 10);
    let daemon = start(&d.join("state"), &[]);
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

    let good = |partitions: u32| synthetic_request(&params, 10, partitions, 3);
    rt().block_on(async {
        let mut c = bellows_serve::client::connect(&addr, None).await.unwrap();
        let code = |r: Result<tonic::Response<proto::SubmitReply>, tonic::Status>| match r {
            Ok(_) => panic!("accepted a bad request"),
            Err(s) => (s.code(), s.message().to_string()),
        };
        // A 5 MiB message passes the default limit (a 32 GiB sector's C1 output is about
        // 50 MB), and the service refuses the 5 MiB path by its own rule.
        let mut big = good(1);
        big.params_path = "x".repeat(5 << 20);
        let (c1, m1) = code(c.submit(big).await);
        assert_eq!(c1, tonic::Code::InvalidArgument, "{m1}");
        assert!(m1.contains("params_path is 5242880 bytes long"), "{m1}");
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
        r.params_path = s(&d.join("missing.params")).into();
        assert_eq!(code(c.submit(r).await).0, tonic::Code::NotFound);
        // Outside the daemon's --params-dir: one answer whether the file exists or not, and
        // nothing of it read (#43 item 9).
        let mut outside = Vec::new();
        for p in ["/nonexistent/p.params", "/etc/passwd", "/dev/zero"] {
            let mut r = good(1);
            r.params_path = p.into();
            let (c0, m0) = code(c.submit(r).await);
            assert_eq!(c0, tonic::Code::InvalidArgument, "{m0}");
            assert!(m0.contains("not inside"), "{m0}");
            outside.push(m0.replace(p, "PATH"));
        }
        assert!(outside.windows(2).all(|w| w[0] == w[1]), "{outside:?}");
        let junk = d.join("junk.params");
        std::fs::write(&junk, b"not a parameters file at all").unwrap();
        let mut r = good(1);
        r.params_path = s(&junk).into();
        assert_eq!(code(c.submit(r).await).0, tonic::Code::InvalidArgument);
        // Await of a job that does not exist.
        let e = events(&mut c, 12345, true).await.unwrap_err();
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
                path: s(&d.join("missing.params")).into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::NotFound);
        let e = c
            .preload_params(proto::PreloadParamsRequest {
                path: "/etc/passwd".into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{}", e.message());
    });

    // Still serving: a good job proves and verifies.
    let (pp, pi) = (d.join("g.proof"), d.join("g.json"));
    prove_k10(
        &addr,
        &params,
        "--out {} --inputs-out {}",
        &[s(&pp), s(&pi)],
        0,
    );
    verify(&vk, &pp, &pi);
    drop(daemon);

    // A smaller limit from the configuration: the transport refuses the same message.
    let cfg = d.join("small-limit.toml");
    std::fs::write(&cfg, "max_request_bytes = \"4MiB\"\n").unwrap();
    let small = start(&d.join("state-small"), &["--config", s(&cfg)]);
    rt().block_on(async {
        let mut c = bellows_serve::client::connect(&small.addr, None)
            .await
            .unwrap();
        let mut big = good(1);
        big.params_path = "x".repeat(5 << 20);
        let e = c.submit(big).await.unwrap_err();
        assert!(
            matches!(
                e.code(),
                tonic::Code::OutOfRange | tonic::Code::ResourceExhausted | tonic::Code::Internal
            ),
            "{:?} {}",
            e.code(),
            e.message()
        );
        assert!(c.submit(good(1)).await.is_ok());
    });
}

#[test]
fn mutual_tls_on_a_remote_address_through_every_client_command() {
    let d = dir("serve", "mtls");
    let (params, vk) = params_and_key(&d, 10);
    let ca = pki::Ca::new("bellows test CA");
    let ca_pem = ca.write(&d, "ca");
    let server = ca.leaf(&d, "server", false);
    let client = ca.leaf(&d, "client", true);
    let stranger = pki::Ca::new("another CA").leaf(&d, "stranger", true);

    // Mutual TLS is enough for a non-loopback address (no token).
    let st = d.join("state");
    // Bad files fail the start with the file's name.
    let serve = "serve --state-dir {} --tls-cert {} --tls-key {}";
    let nope = d.join("nope.pem");
    refused(serve, &[s(&st), s(&nope), s(&server.key)], 1, "nope.pem");
    refused(
        serve,
        &[s(&st), s(&server.key), s(&server.key)],
        1,
        "no certificate",
    );

    let tls_serve = "--allow-remote --tls-cert {} --tls-key {} --tls-client-ca {}";
    let extra = argv(tls_serve, &[s(&server.cert), s(&server.key), s(&ca_pem)]);
    let mut daemon = start_on(&st, "0.0.0.0:0", &extra);
    // The certificate names 127.0.0.1 (the daemon listens on every address).
    daemon.addr = daemon.addr.replace("0.0.0.0", "127.0.0.1");
    let addr = daemon.addr.clone();
    // `line` with the daemon's address and the client's certificate; stdout.
    let client_tls = [addr.as_str(), s(&ca_pem), s(&client.cert), s(&client.key)];
    let over_tls = |line: &str, values: &[&str]| {
        let line = format!("{line} --daemon {{}} --tls-ca {{}} --tls-cert {{}} --tls-key {{}}");
        run(&argv(&line, &[values, &client_tls].concat()), 0).0
    };

    // prove, submit + await, status, cancel and bench, each over mutual TLS.
    let (pp, pi) = (d.join("t.proof"), d.join("t.json"));
    let prove = "prove --circuit synthetic -k 10 --params {} --count 2 --out {} --inputs-out {}";
    over_tls(prove, &[s(&params), s(&pp), s(&pi)]);
    verify(&vk, &pp, &pi);
    let (sp, si) = (d.join("u.proof"), d.join("u.json"));
    let submit = "submit --circuit synthetic -k 10 --params {} --out {} --inputs-out {}";
    let out = over_tls(submit, &[s(&params), s(&sp), s(&si)]);
    let id = out.lines().last().unwrap().trim().to_string();
    over_tls("await {}", &[&id]);
    verify(&vk, &sp, &si);
    let out = over_tls("cancel {}", &[&id]);
    assert_eq!(out.trim(), format!("job {id}: done"));
    let out = over_tls("status --json", &[]);
    let st: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(st["devices"][0]["partitions"], 3);
    let bench = "bench --circuit synthetic -k 10 --params {} --count 1 --json";
    let out = over_tls(bench, &[s(&params)]);
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
    let status = "status --daemon {} --tls-ca {}";
    refused(
        status,
        &[&addr, s(&ca_pem)],
        1,
        "requires a client certificate",
    );
    let stranger_tls = [&addr, s(&ca_pem), s(&stranger.cert), s(&stranger.key)];
    let with_cert = "status --daemon {} --tls-ca {} --tls-cert {} --tls-key {}";
    refused(
        with_cert,
        &stranger_tls,
        1,
        "refused this client's certificate",
    );
    refused("status --daemon {}", &[&addr], 1, "--tls-ca");
    // A certificate without its key is a usage error before any connection.
    let status = "status --daemon {} --tls-ca {} --tls-cert {}";
    refused(
        status,
        &[&addr, s(&ca_pem), s(&client.cert)],
        1,
        "--tls-key",
    );
}

#[test]
fn device_memory_budgets_are_set_shown_and_refuse_what_cannot_fit() {
    let d = dir("serve", "device-budget");
    let (params, _) = params_and_key(&d, 10);
    let st = d.join("state");
    // A malformed budget is a usage error; a device that does not exist, an error naming those
    // that do.
    let serve = "serve --state-dir {} --device-memory-budget {}";
    refused(serve, &[s(&st), "0=lots"], 2, "invalid value '0=lots'");
    refused(
        serve,
        &[s(&st), "3=1GiB"],
        1,
        "no device \"3\" (devices: cpu)",
    );

    let daemon = start(&st, &["--device-memory-budget", "cpu=64KiB"]);
    let sj = status_json(&daemon.addr);
    assert_eq!(sj["devices"][0]["memory_budget_bytes"], 64 << 10);
    assert_eq!(sj["devices"][0]["memory_reserved_bytes"], 0);
    // A 2^10 partition and its parameters' points need more than 64 KiB: refused at once.
    let x = d.join("x.proof");
    let (_, err) = prove_k10(&daemon.addr, &params, "--out {}", &[s(&x)], 1);
    assert!(
        err.contains("does not fit any device's memory budget") && err.contains("cpu 64.0 KiB"),
        "{err}"
    );
    let (text, _) = run(&["status", "--daemon", &daemon.addr], 0);
    assert!(text.contains("memory 0 B of 64.0 KiB"), "{text}");
}
