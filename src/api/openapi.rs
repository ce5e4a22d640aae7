//! The document `/openapi.json` serves: utoipa's, generated from the
//! handlers' annotations ([`ApiDoc`]), with every field constraint the server
//! enforces stated on it — lengths, counts, ranges, patterns, enums — taken
//! from the constants and the running policy the validators themselves read
//! (`domain/validate.rs`, the policy's `limits` and `retrieval`), so the
//! document and the server cannot drift apart.
//!
//! The constraints are applied to the generated JSON by name (schema and
//! property, or operation and parameter) from the tables in [`body_rules`]
//! and [`parameter_rules`]; a name that is not in the document is an error
//! (the test `openapi_states_every_validator_constraint` builds the document
//! and walks it), so renaming a field cannot silently drop its constraint.
//!
//! Lengths: the validators count bytes of UTF-8, JSON Schema counts
//! characters. `maxLength` is the byte limit, an upper bound that ASCII
//! reaches; the description says bytes. Limits JSON Schema cannot state
//! (metadata's size as compact JSON and its nesting depth) are given as the
//! extension keywords `x-max-bytes` and `x-max-depth`.

use serde_json::{json, Map, Value};
use utoipa::OpenApi;

use crate::agent::threads::{MAX_KEY_FIELDS, VIEW_MESSAGES};
use crate::api::routes::memories::MAX_PAGE;
use crate::api::ApiDoc;
use crate::domain::validate::{
    id_pattern, EXISTING_ID_PATTERN, MAX_CONTEXT_TOKENS, MAX_ID_BYTES, MAX_TEMPERATURE,
    MIN_CONTEXT_TOKENS, TEXT_PATTERN,
};
use crate::error::{Error, Result};
use crate::jobs::JobName;
use crate::policy::Policy;
use crate::store::Role;

/// One constraint the server enforces on a value.
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    /// `validate_id`: 1 to [`MAX_ID_BYTES`] bytes, the id character set.
    Id,
    /// `validate_existing_id` (erasure and its verification): 1 to
    /// [`MAX_ID_BYTES`] bytes, no control characters.
    ExistingId,
    /// `validate_text`: not only whitespace, no NUL, at most this many bytes
    /// (`None`: no length limit of its own).
    Text(Option<usize>),
    /// At most this many bytes (any text).
    MaxBytes(usize),
    /// A number within `minimum..=maximum`.
    Range(f64, f64),
    /// A number within `exclusiveMinimum..=maximum`.
    AboveUpTo(f64, f64),
    /// An array of `minItems..=maxItems`.
    Items(Option<usize>, Option<usize>),
    /// An object with at most this many properties.
    MaxProperties(usize),
    /// An object within `limits.max_metadata_bytes` and `…_depth`.
    Metadata { bytes: usize, depth: usize },
    /// One of these strings.
    OneOf(Vec<&'static str>),
    /// An HTTP header value of 1 to this many visible ASCII characters.
    AsciiHeader(usize),
    /// A UUID (the list cursors).
    Uuid,
}

impl Rule {
    /// The JSON Schema keywords that state the rule.
    pub fn keywords(&self) -> Map<String, Value> {
        let v = match self {
            Rule::Id => json!({
                "minLength": 1, "maxLength": MAX_ID_BYTES, "pattern": id_pattern(),
            }),
            Rule::ExistingId => json!({
                "minLength": 1, "maxLength": MAX_ID_BYTES, "pattern": EXISTING_ID_PATTERN,
            }),
            Rule::Text(Some(max)) => json!({
                "minLength": 1, "maxLength": max, "pattern": TEXT_PATTERN,
            }),
            Rule::Text(None) => json!({"minLength": 1, "pattern": TEXT_PATTERN}),
            Rule::MaxBytes(max) => json!({"maxLength": max}),
            Rule::Range(lo, hi) => json!({"minimum": lo, "maximum": hi}),
            Rule::AboveUpTo(lo, hi) => json!({"exclusiveMinimum": lo, "maximum": hi}),
            Rule::Items(lo, hi) => {
                let mut m = Map::new();
                if let Some(lo) = lo {
                    m.insert("minItems".into(), json!(lo));
                }
                if let Some(hi) = hi {
                    m.insert("maxItems".into(), json!(hi));
                }
                Value::Object(m)
            }
            Rule::MaxProperties(n) => json!({"maxProperties": n}),
            Rule::Metadata { bytes, depth } => json!({"x-max-bytes": bytes, "x-max-depth": depth}),
            Rule::OneOf(values) => json!({"enum": values}),
            Rule::AsciiHeader(max) => json!({
                "minLength": 1, "maxLength": max, "pattern": "^[\\x21-\\x7E]([\\x20-\\x7E]*[\\x21-\\x7E])?$",
            }),
            Rule::Uuid => json!({"format": "uuid"}),
        };
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    /// A sentence for the description, where the keywords say less than the
    /// validator (bytes, not characters; characters a pattern cannot name).
    fn note(&self) -> Option<String> {
        match self {
            Rule::Id => Some(format!(
                "1 to {MAX_ID_BYTES} bytes of UTF-8, any script; no control, format (zero-width, \
                 bidi control, tag), separator or noncharacter code points (`pattern` lists those \
                 of the Basic Multilingual Plane)."
            )),
            Rule::ExistingId => Some(format!(
                "1 to {MAX_ID_BYTES} bytes of UTF-8 without control characters (the rule from \
                 before ids were restricted, so that any stored user can be erased)."
            )),
            Rule::Text(Some(max)) | Rule::MaxBytes(max) => {
                Some(format!("At most {max} bytes of UTF-8."))
            }
            Rule::Metadata { bytes, depth } => Some(format!(
                "At most {bytes} bytes as compact JSON and {depth} levels deep (the object is level 1)."
            )),
            _ => None,
        }
    }

    /// Merges the rule into a schema object: the keywords, and its note
    /// appended to the description once.
    fn apply(&self, schema: &mut Map<String, Value>) {
        for (k, v) in self.keywords() {
            schema.insert(k, v);
        }
        if let Some(note) = self.note() {
            let text = match schema.get("description").and_then(Value::as_str) {
                Some(d) if d.contains(&note) => d.to_string(),
                Some(d) => format!("{d}\n{note}"),
                None => note,
            };
            schema.insert("description".into(), Value::String(text));
        }
    }
}

/// (schema, property, rule): the request bodies' fields.
pub fn body_rules(policy: &Policy) -> Vec<(&'static str, &'static str, Rule)> {
    let text = Rule::Text(Some(policy.limits.max_text_bytes));
    let limits = policy.limits();
    let metadata = Rule::Metadata {
        bytes: limits.max_metadata_bytes,
        depth: limits.max_metadata_depth,
    };
    let unit = Rule::Range(0.0, 1.0);
    let window = Rule::Range(MIN_CONTEXT_TOKENS as f64, MAX_CONTEXT_TOKENS as f64);
    let mut rules = Vec::new();
    for schema in ["MemoryInput", "AddRequest"] {
        rules.extend([
            (schema, "text", text.clone()),
            (schema, "user_id", Rule::Id),
            (schema, "thread_id", Rule::Id),
            (schema, "importance", unit.clone()),
            (schema, "confidence", unit.clone()),
            (schema, "metadata", metadata.clone()),
        ]);
    }
    rules.extend([
        (
            "AddRequest",
            "memories",
            Rule::Items(Some(1), Some(policy.limits.max_batch)),
        ),
        ("PatchRequest", "text", text.clone()),
        ("PatchRequest", "importance", unit.clone()),
        ("PatchRequest", "metadata", metadata.clone()),
        ("SupersedeRequest", "text", text.clone()),
        ("SearchBody", "query", text.clone()),
        ("SearchBody", "user_id", Rule::Id),
        ("SearchBody", "thread_id", Rule::Id),
        (
            "SearchBody",
            "top_k",
            Rule::Range(1.0, policy.retrieval.max_top_k as f64),
        ),
        ("SearchBody", "tiers", Rule::Items(Some(1), None)),
        ("ContextRequest", "model_context_tokens", window.clone()),
        (
            "ContextRequest",
            "budget_fraction",
            Rule::AboveUpTo(0.0, 1.0),
        ),
        ("ContextRequest", "user_id", Rule::Id),
        ("ContextRequest", "thread_id", Rule::Id),
        ("ContextRequest", "query", text.clone()),
        ("CreateThread", "user_id", Rule::Id),
        ("CreateThread", "goal", text.clone()),
        (
            "AppendMessage",
            "content",
            Rule::MaxBytes(policy.limits.max_text_bytes),
        ),
        ("ToolResult", "name", Rule::Id),
        ("ToolResult", "status", Rule::Id),
        (
            "ToolResult",
            "key_fields",
            Rule::MaxProperties(MAX_KEY_FIELDS),
        ),
        ("PromptRequest", "message", text.clone()),
        ("PromptRequest", "model_context_tokens", window),
        ("TurnRequest", "message", text),
        (
            "TurnRequest",
            "temperature",
            Rule::Range(0.0, MAX_TEMPERATURE as f64),
        ),
        ("DocumentBody", "document_id", Rule::Id),
        ("DocumentBody", "text", Rule::Text(None)),
        ("DocumentBody", "importance", unit),
        ("DocumentBody", "metadata", metadata),
        (
            "CreateKey",
            "role",
            Rule::OneOf(
                [Role::Admin, Role::Agent, Role::User]
                    .map(Role::as_str)
                    .to_vec(),
            ),
        ),
        ("CreateKey", "user_id", Rule::Id),
    ]);
    rules
}

/// (schema, keywords): rules on a whole request body, where the server
/// needs one of several fields.
pub fn schema_rules() -> Vec<(&'static str, Value)> {
    let any_of = |fields: &[&str]| json!({"anyOf": fields.iter().map(|f| json!({"required": [f]})).collect::<Vec<_>>()});
    vec![
        // `nothing to change` otherwise.
        (
            "PatchRequest",
            any_of(&["text", "importance", "metadata", "expires_at"]),
        ),
        // `give a query or messages` otherwise.
        ("ContextRequest", any_of(&["query", "messages"])),
    ]
}

/// (path, method, parameter, rule): path, query and header parameters.
pub fn parameter_rules() -> Vec<(&'static str, &'static str, &'static str, Rule)> {
    let page = Rule::Range(1.0, MAX_PAGE as f64);
    vec![
        ("/v1/memories", "get", "user_id", Rule::Id),
        ("/v1/memories", "get", "thread_id", Rule::Id),
        ("/v1/memories", "get", "limit", page),
        ("/v1/memories", "get", "cursor", Rule::Uuid),
        ("/v1/users", "get", "cursor", Rule::Uuid),
        (
            "/v1/threads/{id}",
            "get",
            "limit",
            Rule::Range(1.0, VIEW_MESSAGES as f64),
        ),
        ("/v1/users/{user_id}", "delete", "user_id", Rule::ExistingId),
        (
            "/v1/users/{user_id}/erasure",
            "get",
            "user_id",
            Rule::ExistingId,
        ),
        ("/v1/users/{user_id}/export", "get", "user_id", Rule::Id),
        ("/v1/users/{user_id}/import", "post", "user_id", Rule::Id),
        ("/v1/reference/documents/{id}", "delete", "id", Rule::Id),
        (
            "/v1/jobs/{name}/dry-run",
            "post",
            "name",
            Rule::OneOf(JobName::ALL.map(JobName::as_str).to_vec()),
        ),
        (
            "/v1/chat/completions",
            "post",
            "X-Mnemo-Thread",
            Rule::AsciiHeader(crate::api::routes::chat::MAX_THREAD_ID_BYTES),
        ),
    ]
}

/// The document, with every rule applied.
pub fn document(policy: &Policy) -> Result<Value> {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).map_err(Error::internal)?;
    for (schema, property, rule) in body_rules(policy) {
        let target = doc
            .pointer_mut(&format!(
                "/components/schemas/{schema}/properties/{property}"
            ))
            .and_then(Value::as_object_mut)
            .ok_or_else(|| Error::internal(format!("OpenAPI: no field {schema}.{property}")))?;
        rule.apply(target);
    }
    for (schema, keywords) in schema_rules() {
        let target = doc
            .pointer_mut(&format!("/components/schemas/{schema}"))
            .and_then(Value::as_object_mut)
            .ok_or_else(|| Error::internal(format!("OpenAPI: no schema {schema}")))?;
        if let Value::Object(k) = keywords {
            target.extend(k);
        }
    }
    document_too_large(&mut doc);
    for (path, method, name, rule) in parameter_rules() {
        let params = doc
            .pointer_mut(&format!(
                "/paths/{}/{method}/parameters",
                path.replace('~', "~0").replace('/', "~1")
            ))
            .and_then(Value::as_array_mut)
            .ok_or_else(|| Error::internal(format!("OpenAPI: no parameters of {method} {path}")))?;
        let schema = params
            .iter_mut()
            .find(|p| p["name"] == name)
            .and_then(|p| p.get_mut("schema"))
            .and_then(Value::as_object_mut)
            .ok_or_else(|| {
                Error::internal(format!("OpenAPI: no parameter {name} of {method} {path}"))
            })?;
        rule.apply(schema);
    }
    Ok(doc)
}

/// Every operation that takes a body may answer 413 `payload_too_large`:
/// the body over the request limit, or a text over
/// `limits.max_text_bytes` bytes (the schema's `maxLength` counts
/// characters, so a text within it can still be over in bytes).
fn document_too_large(doc: &mut Value) {
    let too_large = json!({
        "description": "Too large: the body is over the request body limit, or a text over \
                        `limits.max_text_bytes` bytes (`payload_too_large`)",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    });
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for item in paths.values_mut() {
        let Some(ops) = item.as_object_mut() else {
            continue;
        };
        for op in ops.values_mut() {
            if op.get("requestBody").is_none() {
                continue;
            }
            if let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) {
                responses.entry("413").or_insert_with(|| too_large.clone());
            }
        }
    }
}
