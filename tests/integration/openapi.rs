//! `/openapi.json` states every field constraint the server enforces, with
//! the very values the validators use (issue 16): the test walks the served
//! document and checks each validator constant, and that a policy change
//! shows in it.

use axum::http::Method;
use mnemo::agent::threads::{MAX_KEY_FIELDS, VIEW_MESSAGES};
use mnemo::api::auth::AuthMode;
use mnemo::api::openapi::{body_rules, parameter_rules, schema_rules};
use mnemo::api::routes::chat::MAX_THREAD_ID_BYTES;
use mnemo::api::routes::memories::MAX_PAGE;
use mnemo::domain::validate::{
    id_pattern, validate_id, EXISTING_ID_PATTERN, MAX_CONTEXT_TOKENS, MAX_ID_BYTES,
    MAX_METADATA_BYTES, MAX_METADATA_DEPTH, MAX_TEMPERATURE, MIN_CONTEXT_TOKENS, TEXT_PATTERN,
};
use mnemo::policy::Policy;
use serde_json::{json, Value};

use crate::api::{api, api_with, call};

async fn served(policy: Option<Policy>) -> Value {
    let api = match policy {
        Some(p) => api_with(p, AuthMode::Keys, None).await,
        None => api().await,
    };
    let r = call(&api.app, Method::GET, "/openapi.json", None, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

fn prop<'a>(doc: &'a Value, schema: &str, field: &str) -> &'a Value {
    let p = &doc["components"]["schemas"][schema]["properties"][field];
    assert!(p.is_object(), "{schema}.{field} is not in the document");
    p
}

fn param<'a>(doc: &'a Value, path: &str, method: &str, name: &str) -> &'a Value {
    doc["paths"][path][method]["parameters"]
        .as_array()
        .unwrap_or_else(|| panic!("{method} {path} has no parameters"))
        .iter()
        .find(|p| p["name"] == name)
        .map(|p| &p["schema"])
        .unwrap_or_else(|| panic!("{method} {path} has no parameter {name}"))
}

#[tokio::test]
async fn openapi_states_every_validator_constraint() {
    let doc = served(None).await;
    let policy = Policy::default();
    let limits = &policy.limits;

    // Ids: the validator's byte limit and character set.
    for (schema, field) in [
        ("MemoryInput", "user_id"),
        ("MemoryInput", "thread_id"),
        ("AddRequest", "user_id"),
        ("SearchBody", "user_id"),
        ("SearchBody", "thread_id"),
        ("ContextRequest", "user_id"),
        ("CreateThread", "user_id"),
        ("CreateKey", "user_id"),
        ("DocumentBody", "document_id"),
        ("ToolResult", "name"),
    ] {
        let p = prop(&doc, schema, field);
        assert_eq!(p["maxLength"], MAX_ID_BYTES, "{schema}.{field}");
        assert_eq!(p["minLength"], 1, "{schema}.{field}");
        assert_eq!(p["pattern"], id_pattern(), "{schema}.{field}");
    }
    assert_eq!(
        param(&doc, "/v1/memories", "get", "user_id")["pattern"],
        id_pattern()
    );
    assert_eq!(
        param(&doc, "/v1/users/{user_id}/export", "get", "user_id")["maxLength"],
        MAX_ID_BYTES
    );
    // Erasure takes any id once accepted (no control characters).
    let erase = param(&doc, "/v1/users/{user_id}", "delete", "user_id");
    assert_eq!(erase["pattern"], EXISTING_ID_PATTERN);
    assert_eq!(erase["maxLength"], MAX_ID_BYTES);

    // Texts: the policy's byte limit, non-blank, no NUL.
    for (schema, field) in [
        ("MemoryInput", "text"),
        ("AddRequest", "text"),
        ("PatchRequest", "text"),
        ("SupersedeRequest", "text"),
        ("SearchBody", "query"),
        ("PromptRequest", "message"),
        ("TurnRequest", "message"),
        ("CreateThread", "goal"),
    ] {
        let p = prop(&doc, schema, field);
        assert_eq!(p["maxLength"], limits.max_text_bytes, "{schema}.{field}");
        assert_eq!(p["pattern"], TEXT_PATTERN, "{schema}.{field}");
    }
    assert_eq!(
        prop(&doc, "AppendMessage", "content")["maxLength"],
        limits.max_text_bytes
    );

    // Counts and ranges.
    let memories = prop(&doc, "AddRequest", "memories");
    assert_eq!(
        (&memories["minItems"], &memories["maxItems"]),
        (&json!(1), &json!(limits.max_batch))
    );
    let top_k = prop(&doc, "SearchBody", "top_k");
    assert_eq!(
        (&top_k["minimum"], &top_k["maximum"]),
        (&json!(1.0), &json!(policy.retrieval.max_top_k as f64))
    );
    assert_eq!(prop(&doc, "SearchBody", "tiers")["minItems"], 1);
    for schema in ["ContextRequest", "PromptRequest"] {
        let w = prop(&doc, schema, "model_context_tokens");
        assert_eq!(w["minimum"], json!(MIN_CONTEXT_TOKENS as f64), "{schema}");
        assert_eq!(w["maximum"], json!(MAX_CONTEXT_TOKENS as f64), "{schema}");
    }
    let fraction = prop(&doc, "ContextRequest", "budget_fraction");
    assert_eq!(
        (&fraction["exclusiveMinimum"], &fraction["maximum"]),
        (&json!(0.0), &json!(1.0))
    );
    for (schema, field) in [
        ("MemoryInput", "importance"),
        ("MemoryInput", "confidence"),
        ("PatchRequest", "importance"),
        ("DocumentBody", "importance"),
    ] {
        let p = prop(&doc, schema, field);
        assert_eq!((&p["minimum"], &p["maximum"]), (&json!(0.0), &json!(1.0)));
    }
    assert_eq!(
        prop(&doc, "TurnRequest", "temperature")["maximum"],
        json!(MAX_TEMPERATURE as f64)
    );
    assert_eq!(
        prop(&doc, "ToolResult", "key_fields")["maxProperties"],
        MAX_KEY_FIELDS
    );
    let metadata = prop(&doc, "MemoryInput", "metadata");
    assert_eq!(metadata["x-max-bytes"], MAX_METADATA_BYTES);
    assert_eq!(metadata["x-max-depth"], MAX_METADATA_DEPTH);
    assert_eq!(
        param(&doc, "/v1/memories", "get", "limit")["maximum"],
        json!(MAX_PAGE as f64)
    );
    assert_eq!(
        param(&doc, "/v1/threads/{id}", "get", "limit")["maximum"],
        json!(VIEW_MESSAGES as f64)
    );
    assert_eq!(
        param(&doc, "/v1/chat/completions", "post", "X-Mnemo-Thread")["maxLength"],
        MAX_THREAD_ID_BYTES
    );

    // Enums.
    assert_eq!(
        prop(&doc, "CreateKey", "role")["enum"],
        json!(["admin", "agent", "user"])
    );
    assert_eq!(
        param(&doc, "/v1/jobs/{name}/dry-run", "post", "name")["enum"],
        json!(["ttl-sweep", "weekly-cleanup"])
    );

    // Every rule of the tables is in the document as stated.
    for (schema, field, rule) in body_rules(&policy) {
        let p = prop(&doc, schema, field);
        for (k, v) in rule.keywords() {
            assert_eq!(p[&k], v, "{schema}.{field}.{k}");
        }
    }
    for (path, method, name, rule) in parameter_rules() {
        let p = param(&doc, path, method, name);
        for (k, v) in rule.keywords() {
            assert_eq!(p[&k], v, "{method} {path} {name}.{k}");
        }
    }

    // Whole-body rules, cursors, and 413 wherever a body is taken.
    assert_eq!(
        doc["components"]["schemas"]["ContextRequest"]["anyOf"],
        json!([{"required": ["query"]}, {"required": ["messages"]}])
    );
    for (schema, keywords) in schema_rules() {
        for (k, v) in keywords.as_object().unwrap() {
            assert_eq!(&doc["components"]["schemas"][schema][k], v, "{schema}.{k}");
        }
    }
    assert_eq!(param(&doc, "/v1/users", "get", "cursor")["format"], "uuid");
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            if op.get("requestBody").is_some() {
                assert!(op["responses"].get("413").is_some(), "{method} {path}: 413");
            }
        }
    }

    // Nothing is left out: every id-like field of a request body or
    // parameter carries the byte limit.
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut bodies: Vec<String> = Vec::new();
    for ops in doc["paths"].as_object().unwrap().values() {
        for op in ops.as_object().unwrap().values() {
            if let Some(r) = op.pointer("/requestBody/content/application~1json/schema/$ref") {
                bodies.push(r.as_str().unwrap().rsplit('/').next().unwrap().into());
            }
            for p in op["parameters"].as_array().into_iter().flatten() {
                let name = p["name"].as_str().unwrap();
                if name.ends_with("user_id") || name == "thread_id" {
                    assert_eq!(p["schema"]["maxLength"], MAX_ID_BYTES, "parameter {name}");
                }
            }
        }
    }
    bodies.extend(["MemoryInput", "ToolResult", "SearchFilters"].map(String::from));
    for body in bodies {
        for (field, p) in schemas[&body]["properties"]
            .as_object()
            .into_iter()
            .flatten()
        {
            if field.ends_with("_id") {
                assert_eq!(p["maxLength"], MAX_ID_BYTES, "{body}.{field}");
            }
        }
    }
}

/// The document reads the running policy: a lower text limit shows.
#[tokio::test]
async fn openapi_follows_the_policy_limits() {
    let mut policy = Policy::default();
    policy.limits.max_text_bytes = 1000;
    policy.limits.max_batch = 7;
    policy.retrieval.max_top_k = 9;
    let doc = served(Some(policy)).await;
    assert_eq!(prop(&doc, "MemoryInput", "text")["maxLength"], 1000);
    assert_eq!(prop(&doc, "AddRequest", "memories")["maxItems"], 7);
    assert_eq!(prop(&doc, "SearchBody", "top_k")["maximum"], json!(9.0));
}

/// The stated id pattern accepts and refuses what the validator does.
#[test]
fn the_stated_id_pattern_is_the_validators() {
    let pattern = regex::Regex::new(&id_pattern()).unwrap();
    for id in [
        "alice",
        "李雷",
        "ann@example.com",
        "a\u{200B}b",
        "ali\u{202E}ce",
        "a\u{0}b",
    ] {
        assert_eq!(
            pattern.is_match(id),
            validate_id("user_id", id).is_ok(),
            "{id:?}"
        );
    }
}
