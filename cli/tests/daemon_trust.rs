//! The daemon as an attacker or a careless operator meets it (#43), through the built binary:
//! a job's outputs that are its parameters (item 1), `await` by another user or with the
//! submitter's `force` (item 3), two daemons on one state directory and a daemon that cannot
//! bind (item 5), results marked fetched only once written (item 15), byte sizes read exactly
//! (item 14), metrics from the start and health checks (item 16), messages (item 11).
//! Synthetic 2^8 on the CPU backend: a few seconds in all.

mod common;

use std::path::Path;

use bellows_serve::{client, proto};
use common::daemon::{rt, synthetic_request, Daemon};
use common::{argv, dir, params, refused, run, s};

/// `bellows serve` with its state in `d/state`, reading parameters from `d`.
fn start(d: &Path, extra: &[&str]) -> Daemon {
    Daemon::start("127.0.0.1:0", &d.join("state"), d, extra)
}

/// A job submitted over raw gRPC with `outputs`, by the holder of `token`; its id.
fn raw_submit(
    addr: &str,
    token: Option<&str>,
    params: &Path,
    outputs: proto::ClientOutputs,
) -> u64 {
    rt().block_on(async {
        let mut c = client::connect(addr, token.map(str::to_string))
            .await
            .unwrap();
        let r = proto::SubmitRequest {
            seed: Some(1),
            outputs: Some(outputs),
            ..synthetic_request(params, 8, 1, 1)
        };
        c.submit(r).await.unwrap().into_inner().job_id
    })
}

#[test]
fn outputs_that_are_the_jobs_parameters_are_refused_before_anything_is_sent() {
    // Item 1: before, `prove --daemon --out PARAMS --force` replaced the parameters with a
    // 192-byte proof (the daemon path checked its outputs against no input).
    let d = dir("daemon-trust", "same-file");
    let params = params(&d, 8);
    let before = std::fs::read(&params).unwrap();
    let daemon = start(&d, &[]);
    for command in ["prove", "submit"] {
        let line = format!("{command} --daemon {{}} --params {{}} --log-size 8 --out {{}} --force");
        refused(
            &line,
            &[&daemon.addr, s(&params), s(&params)],
            2,
            "same file as --params",
        );
    }
    // A job whose submitter named its parameters as the output: `await` refuses to write there.
    let job = raw_submit(
        &daemon.addr,
        None,
        &params,
        proto::ClientOutputs {
            proof_out: s(&params).into(),
            inputs_out: String::new(),
            force: true,
        },
    );
    let line = "await {} --daemon {} --force";
    refused(
        line,
        &[&job.to_string(), &daemon.addr],
        2,
        "same file as --params",
    );
    assert_eq!(
        std::fs::read(&params).unwrap(),
        before,
        "the parameters are intact"
    );
}

#[test]
fn await_writes_with_its_own_force_and_only_the_owner_reaches_a_job() {
    // Item 3: before, `await` used the submitter's `force` and any client could await or
    // cancel any job.
    let d = dir("daemon-trust", "owners");
    let params = params(&d, 8);
    let tokens = d.join("tokens");
    std::fs::write(
        &tokens,
        "alice alice-token-0123456789\nbob bob-token-0123456789xyz\n",
    )
    .unwrap();
    let (alice, bob) = (d.join("alice.tok"), d.join("bob.tok"));
    std::fs::write(&alice, "alice-token-0123456789\n").unwrap();
    std::fs::write(&bob, "bob-token-0123456789xyz\n").unwrap();
    let daemon = start(&d, &["--token-file", s(&tokens)]);
    let victim = d.join("important.conf");
    std::fs::write(&victim, b"keep me").unwrap();
    let job = raw_submit(
        &daemon.addr,
        Some("alice-token-0123456789"),
        &params,
        proto::ClientOutputs {
            proof_out: s(&victim).into(),
            inputs_out: String::new(),
            force: true,
        },
    );
    let id = job.to_string();
    let as_ = |tok: &Path, args: &[&str], code: i32| {
        let mut a = args.to_vec();
        a.extend(["--daemon", &daemon.addr, "--token-file", s(tok)]);
        run(&a, code)
    };
    // Another identity: no such job, for every call.
    for c in ["await", "cancel"] {
        let (_, err) = as_(&bob, &[c, &id], 1);
        assert!(err.contains(&format!("no job {id}")), "{c}: {err}");
    }
    let (out, _) = as_(&bob, &["status", "--json"], 0);
    let st: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(st["jobs"].as_array().unwrap().is_empty(), "{st}");
    // The owner, without --force: the existing file is kept, whatever the submission said.
    let (_, err) = as_(&alice, &["await", &id], 1);
    assert!(err.contains("give --force"), "{err}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    // With its own --force, the owner's await writes.
    let (_, err) = as_(&alice, &["await", &id, "--force"], 0);
    assert!(err.contains("wrote"), "{err}");
    assert_eq!(std::fs::read(&victim).unwrap().len(), 192);
}

#[test]
fn one_daemon_per_state_directory_and_nothing_recovered_before_the_port_is_bound() {
    // Item 5: before, a second daemon on the same state directory resumed the first one's
    // running jobs, and one that could not bind its port had already failed live jobs.
    let d = dir("daemon-trust", "one-daemon");
    let params = params(&d, 8);
    let mut first = start(&d, &["--synthesis-workers", "1", "--no-pce"]);
    let state = d.join("state");
    let serve = "serve --listen 127.0.0.1:0 --state-dir {}";
    let (_, err) = run(&argv(serve, &[s(&state)]), 1);
    assert!(
        err.contains("holds the state directory") && err.contains("one daemon per state"),
        "{err}"
    );
    // A job left running in the journal (the daemon killed mid-job).
    let proof = d.join("j.proof");
    let submit = "submit --daemon {} --params {} --log-size 8 --count 64 --out {}";
    let (out, _) = run(&argv(submit, &[&first.addr, s(&params), s(&proof)]), 0);
    let job: i64 = out.trim().lines().last().unwrap().parse().unwrap();
    first.kill9();
    let journal = state.join("jobs.sqlite");
    let read = || {
        let c = rusqlite::Connection::open(&journal).unwrap();
        let state: String = c
            .query_row("SELECT state FROM jobs WHERE id = ?1", [job], |r| r.get(0))
            .unwrap();
        let done: i64 = c
            .query_row(
                "SELECT COUNT(*) FROM partitions WHERE job = ?1",
                [job],
                |r| r.get(0),
            )
            .unwrap();
        (state, done)
    };
    let was = read();
    assert!(was.0 == "queued" || was.0 == "running", "{was:?}");
    // Its port taken by another process: this daemon stops before touching the journal.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().to_string();
    let serve = "serve --listen {} --state-dir {} --params-dir {}";
    refused(serve, &[&port, s(&state), s(&d)], 1, "listening on");
    assert_eq!(read(), was, "the journal was not touched");
    // A daemon that can serve resumes the job.
    let again = start(&d, &[]);
    let line = "await {} --daemon {} --out {}";
    run(&argv(line, &[&job.to_string(), &again.addr, s(&proof)]), 0);
}

#[test]
fn results_are_marked_fetched_only_once_written() {
    // Item 15: before, the one-hour expiry of fetched results started even when `await` could
    // not write them.
    let d = dir("daemon-trust", "fetched");
    let params = params(&d, 8);
    let daemon = start(&d, &[]);
    let proof = d.join("a.proof");
    let submit = "submit --daemon {} --params {} --log-size 8 --out {} --seed 2";
    let (out, _) = run(&argv(submit, &[&daemon.addr, s(&params), s(&proof)]), 0);
    let job: i64 = out.trim().lines().last().unwrap().parse().unwrap();
    let fetched = || -> Option<i64> {
        rusqlite::Connection::open(d.join("state").join("jobs.sqlite"))
            .unwrap()
            .query_row("SELECT fetched_at FROM jobs WHERE id = ?1", [job], |r| {
                r.get(0)
            })
            .unwrap()
    };
    // The proof file's folder is replaced by a file: the results cannot be written.
    let blocked = d.join("blocked");
    std::fs::write(&blocked, b"").unwrap();
    let bad = blocked.join("x.proof");
    let id = job.to_string();
    run(
        &argv(
            "await {} --daemon {} --out {}",
            &[&id, &daemon.addr, s(&bad)],
        ),
        1,
    );
    assert_eq!(fetched(), None);
    run(&argv("await {} --daemon {}", &[&id, &daemon.addr]), 0);
    assert!(fetched().is_some());
}

#[test]
fn sizes_are_exact_metrics_start_at_zero_and_health_is_served() {
    // Item 14: a byte size with many decimals is read exactly (before: wrapped or 0).
    // Item 16: every counter exists at 0 from the start, with the active-jobs and pending
    // gauges; /healthz and /readyz answer; a token file others can read is warned about.
    let d = dir("daemon-trust", "metrics");
    let token = d.join("token");
    std::fs::write(&token, "0123456789abcdef-secret\n").unwrap();
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let budget = "0.99999999999999999999999999999999999999GiB";
    let extra = "--metrics-listen 127.0.0.1:0 --memory-budget {} --token-file {}";
    let daemon = start(&d, &argv(extra, &[budget, s(&token)]));
    assert!(
        daemon.log().contains("can be read by other users"),
        "{}",
        daemon.log()
    );
    let status = "status --daemon {} --json --token-file {}";
    let (out, _) = run(&argv(status, &[&daemon.addr, s(&token)]), 0);
    let st: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(st["memory"]["budget_bytes"], (1u64 << 30) - 1);
    for series in [
        "bellows_errors_total{kind=\"store\"}",
        "bellows_errors_total{kind=\"device\"}",
        "bellows_jobs_total{outcome=\"failed\"}",
        "bellows_active_jobs",
        "bellows_pending_partitions",
        "bellows_partitions_total{device=\"cpu\"}",
        "bellows_phase_seconds_count{phase=\"total\"}",
    ] {
        assert_eq!(daemon.metric(series), Some(0.0), "{series}");
    }
    let (status, body) = daemon.http("/healthz");
    assert!(status.contains("200"), "{status} {body}");
    let (status, body) = daemon.http("/readyz");
    assert!(
        status.contains("200") && body.contains("ready"),
        "{status} {body}"
    );
}

#[test]
fn client_commands_list_only_the_options_they_use() {
    // Item 11: `status`, `await` and `cancel` listed --priority and --threads.
    for c in ["status", "await", "cancel"] {
        let (out, _) = run(&[c, "--help"], 0);
        assert!(
            !out.contains("--priority") && !out.contains("--threads"),
            "{c}: {out}"
        );
    }
    let (out, _) = run(&["submit", "--help"], 0);
    assert!(out.contains("--priority"), "{out}");
    let (out, _) = run(&["bench", "--help"], 0);
    assert!(out.contains("--threads"), "{out}");
}

#[test]
fn a_unix_socket_serves_and_names_its_peer_by_uid() {
    // Item 9: the identity of a unix socket's peer is its uid, from the kernel.
    use std::os::unix::fs::MetadataExt;
    let d = dir("daemon-trust", "unix");
    let params = params(&d, 8);
    let sock = d.join("bellows.sock");
    let listen = format!("unix:{}", sock.display());
    let uid = std::fs::metadata(&params).unwrap().uid();
    let state = d.join("state");
    let preload = |daemon: &Daemon| {
        rt().block_on(async {
            let mut c = client::connect(&daemon.addr, None).await.unwrap();
            c.preload_params(proto::PreloadParamsRequest {
                path: s(&params).into(),
                skip_subgroup_checks: true,
            })
            .await
            .map(|_| ())
            .map_err(|e| e.code())
        })
    };
    for (admin, allowed) in [("local".to_string(), false), (format!("uid:{uid}"), true)] {
        let daemon = Daemon::start(&listen, &state, &d, &["--admin", admin.as_str()]);
        assert_eq!(daemon.addr, listen);
        let got = preload(&daemon);
        assert_eq!(got.is_ok(), allowed, "{admin}: {got:?}");
        if !allowed {
            assert_eq!(got, Err(bellows_serve::tonic::Code::PermissionDenied));
        }
        drop(daemon);
    }
    // prove --daemon over the socket writes what a local prove writes.
    let daemon = Daemon::start(&listen, &state, &d, &[]);
    let proof = d.join("u.proof");
    let prove = "prove --daemon {} --params {} --log-size 8 --out {} --seed 3";
    run(&argv(prove, &[&daemon.addr, s(&params), s(&proof)]), 0);
}
