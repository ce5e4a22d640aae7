//! Long commands are not silent (issue 53): `mnemo eval` on a set of 40,000
//! documents, with stderr a pipe (as in a CI job or a container), logs its
//! progress within 5 s of its start and then at least every
//! `LOG_EVERY` (10 s), each line with its phase, count, rate and ETA; an
//! interrupted run says where it was. The real binary and the real
//! embedder (what `mnemo eval` runs); stopped after ~25 s, long before the
//! set is embedded.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const DOCS: usize = 40_000;

fn write_set(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let mut corpus = String::with_capacity(DOCS * 120);
    for i in 0..DOCS {
        corpus.push_str(
            &serde_json::json!({
                "id": format!("d{i}"),
                "text": format!("note {i}: the user {} likes item {}", i % 50, i % 997),
                "user_id": format!("u{}", i % 50),
                "created_at": "2025-01-01T00:00:00Z",
                "memory_type": "long_term",
            })
            .to_string(),
        );
        corpus.push('\n');
    }
    std::fs::write(dir.join("corpus.jsonl"), corpus).unwrap();
    let mut queries = String::new();
    let mut qrels = String::new();
    for q in 0..20 {
        queries.push_str(
            &serde_json::json!({"id": format!("q{q}"), "text": format!("item {q}"), "user_id": format!("u{q}")})
                .to_string(),
        );
        queries.push('\n');
        qrels.push_str(&format!("q{q}\td{q}\t1\n"));
    }
    std::fs::write(dir.join("queries.jsonl"), queries).unwrap();
    std::fs::write(dir.join("qrels.tsv"), qrels).unwrap();
}

#[test]
fn eval_on_40k_documents_logs_progress_within_5_s_and_every_10_s_when_not_on_a_terminal() {
    let assets = crate::real_embedder::ensure_assets();
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("big");
    write_set(&set);
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("eval")
        .arg("--set")
        .arg(&set)
        .args(["--preset", "bm25", "--out"])
        .arg(dir.path().join("out"))
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--assets-dir")
        .arg(&assets)
        .env("MNEMO_LOG", "info")
        .env_remove("MNEMO_DATABASE_URL")
        .env_remove("MNEMO_QDRANT_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mnemo runs");
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send((started.elapsed(), line)).is_err() {
                break;
            }
        }
    });

    // Every line until 25 s in (or the end of stderr).
    let mut lines: Vec<(Duration, String)> = Vec::new();
    while let Ok(l) = rx.recv_timeout(Duration::from_secs(25).saturating_sub(started.elapsed())) {
        lines.push(l);
        if started.elapsed() >= Duration::from_secs(25) {
            break;
        }
    }
    let all = || {
        lines
            .iter()
            .map(|(t, l)| format!("{:>6.2} s  {l}", t.as_secs_f64()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let progress: Vec<&(Duration, String)> = lines
        .iter()
        .filter(|(_, l)| l.contains("eval progress:"))
        .collect();
    let first = progress
        .first()
        .unwrap_or_else(|| panic!("no progress line:\n{}", all()));
    eprintln!("first progress line after {:.2} s", first.0.as_secs_f64());
    assert!(first.0 < Duration::from_secs(5), "{}", all());
    // Never 15 s without a line (LOG_EVERY is 10 s; a second of slack for
    // the ticker and the pipe).
    let mut last = first.0;
    for (t, _) in &progress[1..] {
        assert!(
            *t - last <= Duration::from_secs(12),
            "a gap before {t:?}:\n{}",
            all()
        );
        last = *t;
    }
    assert!(
        started.elapsed() - last <= Duration::from_secs(12),
        "{}",
        all()
    );
    // The documents' phases count to 40,000, with a rate and an ETA.
    assert!(
        progress
            .iter()
            .any(|(_, l)| l.contains(&format!("/{DOCS} (")) && l.contains("/s, eta ")),
        "{}",
        all()
    );

    // Ctrl-C: the run says where it stopped, and exits 130.
    let pid = child.id().to_string();
    let status = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(status.success());
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let rest: Vec<String> = rx.try_iter().map(|(_, l)| l).collect();
    assert_eq!(status.code(), Some(130), "{}\n{rest:?}", all());
    let said = rest
        .iter()
        .find(|l| l.starts_with("eval interrupted during "))
        .unwrap_or_else(|| panic!("{rest:?}"));
    assert!(
        said.contains(&format!("/{DOCS}")),
        "the phase and its count: {said}"
    );
}
