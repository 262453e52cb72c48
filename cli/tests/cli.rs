//! The binary runs and names itself. Also makes `cargo test --workspace` build
//! `target/<profile>/leasefence`, which the library's process tests (crate/tests/) drive.

use std::process::Command;

#[test]
fn prints_its_version() {
    let out = Command::new(env!("CARGO_BIN_EXE_leasefence"))
        .arg("--version")
        .output()
        .expect("run leasefence --version");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.trim(),
        format!("leasefence {}", env!("CARGO_PKG_VERSION"))
    );
}

fn leasefence(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_leasefence"));
    command.args(args).env_remove("LEASEFENCE_DB");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("run leasefence")
}

fn all_output(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A URL in LEASEFENCE_DB holds a password: no --help prints it.
#[test]
fn help_never_prints_the_database_url_from_the_environment() {
    let url = "postgres://app:s3cret@127.0.0.1:1/q";
    for args in [
        &["--help"][..],
        &["ui", "--help"],
        &["state", "--help"],
        &["work", "--help"],
    ] {
        let out = leasefence(args, &[("LEASEFENCE_DB", url)]);
        assert!(out.status.success(), "{args:?}: {out:?}");
        let text = all_output(&out);
        assert!(text.contains("--db"), "{args:?}: {text}");
        assert!(
            !text.contains("s3cret"),
            "{args:?} printed the password: {text}"
        );
    }
}

/// A dashboard that cannot reach its server names it without the password, even one with a `/`
/// in it (which the PostgreSQL client reads as part of the password).
#[test]
fn a_dashboard_that_cannot_connect_never_prints_the_password() {
    for url in [
        "postgres://app:s3cret@127.0.0.1:1/q",
        "postgres://app:se/cret@127.0.0.1:1/q",
    ] {
        let out = leasefence(
            &[
                "--db",
                url,
                "--busy-timeout",
                "0.5",
                "ui",
                "--listen",
                "127.0.0.1:0",
            ],
            &[],
        );
        assert!(!out.status.success(), "{out:?}");
        let text = all_output(&out);
        assert!(text.contains("127.0.0.1"), "{text}");
        assert!(
            !text.contains("cret"),
            "the password reached the terminal: {text}"
        );
    }
}

/// A command that only reads finds a database or fails: a mistyped --db makes no new file.
#[test]
fn read_only_commands_never_create_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("mistyped.db");
    let db_arg = db.to_str().unwrap();
    for args in [
        &["state", "job"][..],
        &["stats"],
        &["jobs"],
        &["jobs", "--json", "--state", "dead"],
        &["inspect", "job"],
        &["workers"],
        &["schedules"],
        &["queue-stats"],
        &["oldest-waiting"],
        &["ui", "--read-only", "--listen", "127.0.0.1:0"],
    ] {
        let mut full = vec!["--db", db_arg];
        full.extend_from_slice(args);
        let out = leasefence(&full, &[]);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {out:?}");
        let text = all_output(&out);
        assert!(text.contains("does not exist"), "{args:?}: {text}");
        assert!(
            text.contains(db_arg),
            "{args:?} did not name the path: {text}"
        );
        assert!(text.contains("init"), "{args:?}: {text}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{args:?} created {left:?}");
    }
    // A command that writes still makes the file, as before.
    let out = leasefence(&["--db", db_arg, "enqueue", "job"], &[]);
    assert!(out.status.success(), "{out:?}");
    assert!(db.exists());
}

/// `prune --older-than`: jobs that finished longer ago than the duration are deleted, newer and
/// open ones stay; `--keep-dead` keeps a dead job; a duration that does not parse changes nothing.
#[test]
fn prune_deletes_what_finished_longer_ago_than_the_duration() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let db = db.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["--db", db];
        all.extend_from_slice(args);
        let out = leasefence(&all, &[]);
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    for job in ["old", "new", "dead", "open"] {
        run(&["enqueue", job]);
    }
    run(&["claim", "old", "--owner", "w", "--ttl", "60", "--now", "0"]);
    run(&[
        "complete", "old", "--owner", "w", "--fence", "1", "--now", "10",
    ]);
    run(&["claim", "dead", "--owner", "w", "--ttl", "60", "--now", "0"]);
    run(&[
        "fail", "dead", "--owner", "w", "--fence", "1", "--dead", "--now", "20",
    ]);
    run(&[
        "claim", "new", "--owner", "w", "--ttl", "7200", "--now", "0",
    ]);
    run(&[
        "complete", "new", "--owner", "w", "--fence", "1", "--now", "5000",
    ]);
    let bad = leasefence(&["--db", db, "prune", "--older-than", "soon"], &[]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        all_output(&bad).contains("--older-than"),
        "{}",
        all_output(&bad)
    );
    // At 3630 with one hour kept: old (10) and dead (20) are older; --keep-dead keeps dead.
    let kept = [
        "prune",
        "--older-than",
        "1h",
        "--keep-dead",
        "--now",
        "3630",
    ];
    assert_eq!(run(&kept), r#"{"value":1}"#);
    assert_eq!(run(&["state", "old"]), r#"{"value":null}"#);
    assert_ne!(run(&["state", "dead"]), r#"{"value":null}"#);
    assert_eq!(
        run(&["prune", "--older-than", "1h", "--now", "3630"]),
        r#"{"value":1}"#
    );
    assert_eq!(run(&["state", "dead"]), r#"{"value":null}"#);
    assert_ne!(run(&["state", "new"]), r#"{"value":null}"#);
    assert_ne!(run(&["state", "open"]), r#"{"value":null}"#);
}

/// `jobs` is the one way to list jobs: a page as a table with the next page's cursor, filters,
/// the same page as JSON, and the cursor leading on to the rest.
#[test]
fn jobs_lists_a_page_at_a_time_as_a_table_or_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("jobs.db");
    let db = db.to_str().unwrap();
    let run = |args: &[&str]| {
        let out = leasefence(&[&["--db", db], args].concat(), &[]);
        assert!(out.status.success(), "{args:?}: {}", all_output(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for job in ["a", "b", "it's c"] {
        run(&["enqueue", job, "--queue", "mail"]);
    }
    run(&["claim", "a", "--owner", "w", "--ttl", "30", "--now", "10"]);

    let first = run(&["jobs", "--limit", "2", "--now", "11"]);
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines.len(), 4, "{first}");
    assert!(
        lines[0].starts_with("JOB") && lines[0].contains("LEASE"),
        "{first}"
    );
    assert!(
        lines[1].starts_with("it's c") && lines[2].starts_with("b "),
        "{first}"
    );
    let cursor = lines[3].strip_prefix("more: --after ").expect(&first);
    let rest = run(&["jobs", "--limit", "2", "--now", "11", "--after", cursor]);
    assert!(rest.lines().nth(1).unwrap().starts_with("a "), "{rest}");
    assert!(
        rest.contains("live, 29.0s left") && !rest.contains("more:"),
        "{rest}"
    );

    let leased: serde_json::Value = serde_json::from_str(&run(&[
        "jobs", "--json", "--state", "leased", "--now", "11",
    ]))
    .unwrap();
    assert_eq!(leased["value"]["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(leased["value"]["jobs"][0]["id"], "a");
    assert_eq!(leased["value"]["next"], serde_json::Value::Null);

    let out = leasefence(&["--db", db, "jobs", "--limit", "0"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", all_output(&out));
    assert!(all_output(&out).contains("limit"), "{}", all_output(&out));
}

/// `call` reaches every operation from its signature, the ones with no subcommand of their own
/// included (`fence-floor`), with the checks and exit statuses of the other subcommands.
#[test]
fn call_runs_any_operation_by_its_signature() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("call.db");
    let db = db.to_str().unwrap();
    let call = |args: &[&str]| {
        let out = leasefence(&[&["--db", db, "call"], args].concat(), &[]);
        let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        (out.status.code(), text)
    };
    assert_eq!(call(&["fence-floor"]), (Some(0), r#"{"value":0}"#.into()));
    assert_eq!(call(&["enqueue", "--job", "a"]).1, r#"{"value":true}"#);
    for (now, owner) in [("10", "w"), ("20", "v")] {
        call(&[
            "claim", "--job", "a", "--owner", owner, "--now", now, "--ttl", "5",
        ]);
    }
    let done = call(&[
        "complete", "--job", "a", "--owner", "v", "--fence", "2", "--now", "21", "--result", "r",
    ]);
    assert_eq!(done, (Some(0), r#"{"value":true}"#.into()));
    let stale = call(&[
        "complete", "--job", "a", "--owner", "w", "--fence", "1", "--now", "21",
    ]);
    assert_eq!(stale.0, Some(1), "{}", stale.1);
    assert!(stale.1.contains(r#"{"code":"done"}"#), "{}", stale.1);
    assert_eq!(call(&["prune", "--before", "100"]).1, r#"{"value":1}"#);
    assert_eq!(call(&["fence-floor"]).1, r#"{"value":2}"#);
    // A bad value is the protocol's error; a missing option clap's; neither runs anything.
    let bad = call(&["claim", "--job", "b", "--owner", "w", "--ttl", "0"]);
    assert_eq!(bad.0, Some(2), "{}", bad.1);
    assert!(bad.1.contains("invalid_argument"), "{}", bad.1);
    assert_eq!(call(&["claim", "--job", "b", "--ttl", "5"]).0, Some(2));
    let help = leasefence(&["call", "fence-floor", "--help"], &[]);
    assert!(
        help.status.success() && all_output(&help).contains("fence floor"),
        "{}",
        all_output(&help)
    );
}

/// `--no-write-gate` opens the store as `OpenOptions::write_gate(false)` does: its writes never
/// queue on `<db>-leasefence-gate`, which the default makes beside the file.
#[test]
fn no_write_gate_writes_without_the_gate_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let gate_of = |db: &std::path::Path| {
        let mut name = db.as_os_str().to_owned();
        name.push("-leasefence-gate");
        std::path::PathBuf::from(name)
    };
    let ungated = dir.path().join("ungated.db");
    let ungated_db = ungated.to_str().expect("utf-8 path");
    for args in [
        &["--db", ungated_db, "--no-write-gate", "enqueue", "a"][..],
        &[
            "--db",
            ungated_db,
            "--no-write-gate",
            "claim",
            "a",
            "--owner",
            "w",
            "--ttl",
            "30",
        ],
    ] {
        let out = leasefence(args, &[]);
        assert!(out.status.success(), "{args:?}: {}", all_output(&out));
    }
    assert!(
        !gate_of(&ungated).exists(),
        "--no-write-gate made the gate file"
    );
    let gated = dir.path().join("gated.db");
    let out = leasefence(
        &["--db", gated.to_str().expect("utf-8 path"), "enqueue", "a"],
        &[],
    );
    assert!(out.status.success(), "{}", all_output(&out));
    assert!(
        gate_of(&gated).exists(),
        "the default store wrote without the gate"
    );
}
