//! Prompt-assembly latency of the agent loop, retrieval included: one user
//! with N long-term memories and a thread with a goal and H messages;
//! `POST /v1/threads/{id}/prompt`'s code path (`Agent::prompt`: hybrid search
//! with the real ONNX embedder, packing, token counting, assembly) timed
//! in-process over Q different messages. Prints p50/p95 and two example
//! token breakdowns.
//!
//! ```text
//! MNEMO_ASSETS_DIR=/path/to/assets cargo run --example prompt_bench -- --memories 3000 --queries 200
//! ```

use std::time::Instant;

use mnemo::agent::threads::{AppendMessage, CreateThread, PromptRequest};
use mnemo::agent::Agent;
use mnemo::domain::thread::MessageRole;
use mnemo::domain::Actor;
use mnemo::domain::{NewMemory, Tier};
use mnemo::embed::onnx::OnnxEmbedder;
use mnemo::policy::Policy;
use mnemo::Engine;

#[path = "common/args.rs"]
mod args;
use args::number;

const TOPICS: &[&str] = &[
    "green tea",
    "the Lisbon flight",
    "the quarterly report",
    "oat milk",
    "a new laptop",
    "piano lessons",
    "vegetarian dinners",
    "the dentist",
    "the gym",
    "the Kyoto trip",
    "car insurance",
    "running shoes",
    "the book club",
    "jazz concerts",
    "the garden",
    "the electricity bill",
    "Spanish classes",
    "the wedding",
    "a standing desk",
    "the dog",
];
const FRAMES: &[&str] = &[
    "The user prefers {t} on weekdays (note {n}).",
    "The user asked twice about {t} last month (note {n}).",
    "The user decided to postpone {t} until spring (note {n}).",
    "The user's sister also cares about {t} (note {n}).",
    "The user wants reminders about {t} every Friday (note {n}).",
];

fn at(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (n, queries, history) = (
        number("--memories", 3000),
        number("--queries", 200),
        number("--history", 12),
    );
    let assets = std::env::var_os("MNEMO_ASSETS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "assets".into());
    let embedder = OnnxEmbedder::for_policy(&assets, &Policy::default())?;
    let dir = tempfile::tempdir()?;
    let engine = Engine::builder(dir.path())
        .embedder(embedder)
        .build()
        .await?
        .engine;
    let admin = Actor::local("bench");
    let started = Instant::now();
    let texts: Vec<String> = (0..n)
        .map(|i| {
            FRAMES[i % FRAMES.len()]
                .replace("{t}", TOPICS[(i / FRAMES.len()) % TOPICS.len()])
                .replace("{n}", &i.to_string())
        })
        .collect();
    for chunk in texts.chunks(500) {
        let items = chunk
            .iter()
            .map(|t| NewMemory {
                tier: Some(Tier::LongTerm),
                user_id: Some("u".into()),
                text: t.clone(),
                ..Default::default()
            })
            .collect();
        engine.add(&admin, items, false).await?;
    }
    engine.commit().await?;
    eprintln!(
        "ingested {n} memories in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let agent = Agent::new(engine.clone(), None);
    let thread = agent
        .create_thread(
            &admin,
            CreateThread {
                user_id: Some("u".into()),
                goal: Some(
                    "Plan the user's spring: the Kyoto trip, the wedding and the garden".into(),
                ),
            },
        )
        .await?;
    for i in 0..history {
        let (role, content) = if i % 2 == 0 {
            (
                MessageRole::User,
                format!(
                    "Can you check {} for me? It matters this week.",
                    TOPICS[i % TOPICS.len()]
                ),
            )
        } else {
            (
                MessageRole::Assistant,
                format!(
                    "I will look into {} and come back with two options.",
                    TOPICS[i % TOPICS.len()]
                ),
            )
        };
        let m = AppendMessage {
            role,
            content,
            tool: None,
        };
        agent.append(&admin, thread.id, m).await?;
    }
    agent.wait_idle().await;

    let mut lat = Vec::with_capacity(queries);
    for q in 0..queries {
        let req = PromptRequest {
            message: format!("What did I say about {}?", TOPICS[q % TOPICS.len()]),
            model_context_tokens: 8192,
        };
        let t = Instant::now();
        agent.prompt(&admin, thread.id, req).await?;
        lat.push(t.elapsed().as_secs_f64() * 1e3);
    }
    lat.sort_by(f64::total_cmp);
    println!(
        "prompt assembly, retrieval included ({n} memories, {history} messages, {queries} prompts): \
         p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        at(&lat, 0.5),
        at(&lat, 0.95),
        at(&lat, 1.0)
    );
    for window in [1024usize, 8192] {
        let req = PromptRequest {
            message: "What should I remember to pack for the Kyoto trip?".into(),
            model_context_tokens: window,
        };
        let p = agent.prompt(&admin, thread.id, req).await?;
        println!(
            "window {window}: {} (memories: {})",
            serde_json::to_string(&p.tokens)?,
            p.memory_ids.len()
        );
    }
    engine.shutdown().await?;
    Ok(())
}
