//! The OpenAI-compatible chat client: `POST {base_url}/chat/completions` on
//! any endpoint that speaks the protocol (OpenAI, vLLM, Ollama, llama.cpp
//! servers, LiteLLM).
//!
//! - Every attempt has a timeout (until the response headers, and again for
//!   a non-streamed body; between two chunks of a stream).
//! - Connect errors, 429 and 5xx are retried a bounded number of times with
//!   exponential backoff and jitter (a `Retry-After` in seconds is honoured up
//!   to [`MAX_BACKOFF`]); other 4xx and timeouts are never retried.
//! - Prompts, replies and the API key are never logged; errors carry the
//!   endpoint's status and error message, not the request.
//!
//! HTTP: hyper-util's pooled client (already in the tree through tonic) with
//! hyper-rustls (ring, the webpki-roots CA bundle), so https endpoints work
//! without a second TLS stack. Threading: the client is `Send + Sync`, shared
//! behind an `Arc`; calls run on the tokio runtime.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, USER_AGENT};
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use rand::Rng;
use serde_json::{json, Value};

use super::{ChatModel, Completion, CompletionOptions, LlmError, RawResponse};
use crate::domain::chat::ChatMessage;

pub const DEFAULT_CONTEXT_TOKENS: usize = 8192;
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
pub const DEFAULT_MAX_RETRIES: u32 = 2;
/// The longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// Most of an upstream error body quoted in an error message.
const MAX_ERROR_CHARS: usize = 500;

/// Where and how to reach the model.
#[derive(Clone, PartialEq)]
pub struct OpenAiConfig {
    /// The API root, e.g. `http://127.0.0.1:11434/v1` (Ollama) or
    /// `https://api.openai.com/v1`; `/chat/completions` is appended.
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer …` when set.
    pub api_key: Option<String>,
    /// The model's context window in tokens.
    pub context_tokens: usize,
    /// Per attempt.
    pub timeout: Duration,
    /// Attempts after the first one, on connect errors, 429 and 5xx.
    pub max_retries: u32,
    /// The first backoff; doubled per retry, capped at [`MAX_BACKOFF`].
    pub retry_base_delay: Duration,
}

impl OpenAiConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            context_tokens: DEFAULT_CONTEXT_TOKENS,
            timeout: Duration::from_secs(DEFAULT_TIMEOUT_SECS),
            max_retries: DEFAULT_MAX_RETRIES,
            retry_base_delay: Duration::from_millis(250),
        }
    }

    /// The chat-completions endpoint, validated.
    pub fn endpoint(&self) -> Result<Uri, String> {
        let base = self.base_url.trim().trim_end_matches('/');
        let uri: Uri = format!("{base}/chat/completions")
            .parse()
            .map_err(|_| format!("`{}` is not a URL", self.base_url))?;
        match uri.scheme_str() {
            Some("http") | Some("https") if uri.authority().is_some() => Ok(uri),
            _ => Err(format!(
                "`{}` must be an http:// or https:// URL such as http://127.0.0.1:11434/v1",
                self.base_url
            )),
        }
    }
}

/// The key never appears in debug output (and so never in logs).
impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("context_tokens", &self.context_tokens)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .finish()
    }
}

type Http = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A [`ChatModel`] on an OpenAI-compatible endpoint.
pub struct OpenAiClient {
    config: OpenAiConfig,
    endpoint: Uri,
    http: Http,
}

impl fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("config", &self.config)
            .finish()
    }
}

/// The error and its causes on one line ("client error (Connect): tcp
/// connect error: Connection refused").
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// The upstream's error message: `error.message` or `error` of a JSON body,
/// otherwise the start of the body.
fn error_message(body: &[u8]) -> String {
    let from_json = serde_json::from_slice::<Value>(body).ok().and_then(|v| {
        let e = v.get("error")?;
        e.get("message")
            .and_then(Value::as_str)
            .or(e.as_str())
            .map(str::to_string)
    });
    let text = from_json.unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
    let mut text: String = text.chars().take(MAX_ERROR_CHARS).collect();
    if text.is_empty() {
        text = "(empty body)".into();
    }
    text
}

fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// The wait before retry number `retry` (0-based): `base × 2^retry` capped at
/// [`MAX_BACKOFF`], jittered to a uniform draw in its upper half; a longer
/// `Retry-After` wins, within the cap.
pub fn backoff(base: Duration, retry: u32, retry_after: Option<Duration>) -> Duration {
    let full = base
        .saturating_mul(1u32.checked_shl(retry.min(20)).unwrap_or(u32::MAX))
        .min(MAX_BACKOFF);
    let jittered = full.mul_f64(rand::rng().random_range(0.5..=1.0));
    match retry_after {
        Some(r) => r.min(MAX_BACKOFF).max(jittered),
        None => jittered,
    }
}

fn retry_after(response: &Response<Incoming>) -> Option<Duration> {
    let secs: u64 = response
        .headers()
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(secs))
}

impl OpenAiClient {
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        let endpoint = config.endpoint().map_err(LlmError::NotConfigured)?;
        if config.model.trim().is_empty() {
            return Err(LlmError::NotConfigured("the model name is empty".into()));
        }
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(config.timeout));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_webpki_roots()
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let http = Client::builder(TokioExecutor::new()).build(connector);
        Ok(OpenAiClient {
            config,
            endpoint,
            http,
        })
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn request(&self, body: &Bytes, stream: bool) -> Result<Request<Full<Bytes>>, LlmError> {
        let mut b = Request::builder()
            .method(Method::POST)
            .uri(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(USER_AGENT, concat!("mnemo/", env!("CARGO_PKG_VERSION")))
            .header(
                ACCEPT,
                if stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            );
        if let Some(key) = &self.config.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                LlmError::NotConfigured("the API key holds characters a header cannot".into())
            })?;
            value.set_sensitive(true);
            b = b.header(AUTHORIZATION, value);
        }
        b.body(Full::new(body.clone()))
            .map_err(|e| LlmError::BadResponse(format!("cannot build the request: {e}")))
    }

    /// Sends `body` with the bounded retries. The last response is returned
    /// whatever its status (a 5xx or 429 once the retries are spent); only a
    /// failure to get any response is an error.
    async fn send(&self, body: &Value, stream: bool) -> Result<Response<Incoming>, LlmError> {
        let bytes = Bytes::from(
            serde_json::to_vec(body).map_err(|e| LlmError::BadResponse(e.to_string()))?,
        );
        let timeout_ms = self.config.timeout.as_millis() as u64;
        let mut retry = 0;
        loop {
            let req = self.request(&bytes, stream)?;
            let wait = match tokio::time::timeout(self.config.timeout, self.http.request(req)).await
            {
                Err(_) => return Err(LlmError::Timeout(timeout_ms)),
                Ok(Ok(response)) => {
                    if !retryable(response.status()) || retry >= self.config.max_retries {
                        return Ok(response);
                    }
                    tracing::warn!(
                        status = response.status().as_u16(),
                        retry = retry + 1,
                        "model endpoint answered an error; retrying"
                    );
                    backoff(self.config.retry_base_delay, retry, retry_after(&response))
                }
                Ok(Err(e)) => {
                    let attempts = retry + 1;
                    if !e.is_connect() || retry >= self.config.max_retries {
                        return Err(LlmError::Unreachable(format!(
                            "{} after {attempts} attempt{}: {}",
                            self.endpoint,
                            if attempts == 1 { "" } else { "s" },
                            chain(&e)
                        )));
                    }
                    tracing::warn!(retry = retry + 1, "model endpoint unreachable; retrying");
                    backoff(self.config.retry_base_delay, retry, None)
                }
            };
            tokio::time::sleep(wait).await;
            retry += 1;
        }
    }

    async fn read_body(&self, response: Response<Incoming>) -> Result<Bytes, LlmError> {
        let collect = response.into_body().collect();
        match tokio::time::timeout(self.config.timeout, collect).await {
            Err(_) => Err(LlmError::Timeout(self.config.timeout.as_millis() as u64)),
            Ok(Err(e)) => Err(LlmError::Unreachable(format!(
                "the answer was cut off: {}",
                chain(&e)
            ))),
            Ok(Ok(body)) => Ok(body.to_bytes()),
        }
    }

    async fn status_error(&self, response: Response<Incoming>) -> LlmError {
        let status = response.status().as_u16();
        let message = match self.read_body(response).await {
            Ok(body) => error_message(&body),
            Err(e) => e.to_string(),
        };
        LlmError::Status { status, message }
    }

    fn body(&self, messages: &[ChatMessage], options: &CompletionOptions, stream: bool) -> Value {
        let mut body = json!({
            "model": self.config.model,
            "messages": messages,
            "stream": stream,
        });
        if let Some(n) = options.max_tokens {
            body["max_tokens"] = json!(n);
        }
        if let Some(t) = options.temperature {
            body["temperature"] = json!(t);
        }
        if options.json {
            body["response_format"] = json!({"type": "json_object"});
        }
        body
    }

    /// A streamed completion: the upstream's server-sent events, in order.
    pub async fn stream(
        &self,
        messages: &[ChatMessage],
        options: &CompletionOptions,
    ) -> Result<ChatStream, LlmError> {
        let response = self.send(&self.body(messages, options, true), true).await?;
        if !response.status().is_success() {
            return Err(self.status_error(response).await);
        }
        Ok(ChatStream {
            body: response.into_body(),
            buf: Vec::new(),
            idle: self.config.timeout,
            finished: false,
        })
    }
}

/// Server-sent events of a streamed completion, read one at a time.
pub struct ChatStream {
    body: Incoming,
    buf: Vec<u8>,
    idle: Duration,
    finished: bool,
}

impl ChatStream {
    /// The next event's `data` (a JSON chunk, or `[DONE]` at the end); `None`
    /// once the stream has ended. Waiting longer than the timeout between two
    /// chunks is an error.
    pub async fn next_data(&mut self) -> Option<Result<String, LlmError>> {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buf.drain(..end + 2).collect();
                match sse_data(&event) {
                    Ok(Some(data)) => return Some(Ok(data)),
                    Ok(None) => continue,
                    Err(e) => return Some(Err(e)),
                }
            }
            if self.finished {
                // A last event without its blank line still counts.
                let rest = std::mem::take(&mut self.buf);
                return sse_data(&rest).transpose();
            }
            match tokio::time::timeout(self.idle, self.body.frame()).await {
                Err(_) => {
                    self.finished = true;
                    self.buf.clear();
                    return Some(Err(LlmError::Timeout(self.idle.as_millis() as u64)));
                }
                Ok(None) => self.finished = true,
                Ok(Some(Err(e))) => {
                    self.finished = true;
                    self.buf.clear();
                    return Some(Err(LlmError::Unreachable(format!(
                        "the stream was cut off: {}",
                        chain(&e)
                    ))));
                }
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        // SSE allows CRLF line ends; a CR is never data.
                        self.buf.extend(data.iter().filter(|&&b| b != b'\r'));
                    }
                }
            }
        }
    }
}

/// The `data:` lines of one event, joined by newlines; `None` for an event
/// without data (a comment or keep-alive).
fn sse_data(event: &[u8]) -> Result<Option<String>, LlmError> {
    let text = std::str::from_utf8(event)
        .map_err(|_| LlmError::BadResponse("the stream is not UTF-8".into()))?;
    let lines: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    Ok((!lines.is_empty()).then(|| lines.join("\n")))
}

#[async_trait]
impl ChatModel for OpenAiClient {
    fn model(&self) -> &str {
        &self.config.model
    }

    fn context_tokens(&self) -> usize {
        self.config.context_tokens
    }

    async fn complete(
        &self,
        messages: &[ChatMessage],
        options: &CompletionOptions,
    ) -> Result<Completion, LlmError> {
        let response = self
            .send(&self.body(messages, options, false), false)
            .await?;
        if !response.status().is_success() {
            return Err(self.status_error(response).await);
        }
        let body = self.read_body(response).await?;
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| LlmError::BadResponse(format!("not JSON: {e}")))?;
        let content = v
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                LlmError::BadResponse("no `choices[0].message.content` string".into())
            })?;
        let tokens = |field: &str| {
            v.pointer(&format!("/usage/{field}"))
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
        };
        Ok(Completion {
            content: content.to_string(),
            prompt_tokens: tokens("prompt_tokens"),
            completion_tokens: tokens("completion_tokens"),
        })
    }

    async fn forward(&self, mut body: Value) -> Result<RawResponse, LlmError> {
        let obj = body
            .as_object_mut()
            .ok_or_else(|| LlmError::BadResponse("the request body is not an object".into()))?;
        obj.insert("model".into(), Value::String(self.config.model.clone()));
        let stream = obj.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let response = self.send(&body, stream).await?;
        if response.status().is_server_error() {
            return Err(self.status_error(response).await);
        }
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response
            .into_body()
            .map_err(|e| LlmError::Unreachable(format!("the answer was cut off: {}", chain(&e))))
            .boxed_unsync();
        Ok(RawResponse {
            status,
            content_type,
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_validated() {
        let c = |url: &str| OpenAiConfig::new(url, "m").endpoint();
        assert_eq!(
            c("http://127.0.0.1:11434/v1/").unwrap().to_string(),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        assert!(c("https://api.openai.com/v1").is_ok());
        assert!(c("ftp://x/v1").is_err());
        assert!(c("localhost:8080").is_err());
        assert!(c("not a url").is_err());
        assert!(OpenAiClient::new(OpenAiConfig::new("http://x/v1", " ")).is_err());
    }

    #[test]
    fn the_key_is_redacted_from_debug_output() {
        let mut c = OpenAiConfig::new("http://x/v1", "m");
        c.api_key = Some("sk-secret".into());
        assert!(!format!("{c:?}").contains("sk-secret"));
    }

    #[test]
    fn backoff_doubles_is_capped_and_jittered() {
        let base = Duration::from_millis(100);
        for retry in 0..6 {
            let full = (base * 2u32.pow(retry)).min(MAX_BACKOFF);
            let d = backoff(base, retry, None);
            assert!(d >= full / 2 && d <= full, "{retry}: {d:?}");
        }
        assert!(backoff(base, 40, None) <= MAX_BACKOFF);
        let d = backoff(base, 0, Some(Duration::from_secs(3)));
        assert_eq!(d, Duration::from_secs(3));
        let d = backoff(base, 0, Some(Duration::from_secs(3600)));
        assert_eq!(d, MAX_BACKOFF);
    }

    #[test]
    fn upstream_error_messages_are_extracted_and_bounded() {
        assert_eq!(
            error_message(br#"{"error":{"message":"model not found","type":"x"}}"#),
            "model not found"
        );
        assert_eq!(error_message(br#"{"error":"bad key"}"#), "bad key");
        assert_eq!(error_message(b"  Bad Gateway \n"), "Bad Gateway");
        assert_eq!(error_message(b""), "(empty body)");
        assert_eq!(
            error_message("é".repeat(2000).as_bytes()).chars().count(),
            500
        );
    }

    #[test]
    fn sse_events_yield_their_data() {
        assert_eq!(
            sse_data(b"data: {\"a\":1}\n\n").unwrap(),
            Some("{\"a\":1}".into())
        );
        assert_eq!(sse_data(b": keep-alive\n\n").unwrap(), None);
        assert_eq!(
            sse_data(b"event: x\ndata: a\ndata: b\n\n").unwrap(),
            Some("a\nb".into())
        );
        assert!(sse_data(&[0xff, 0xfe]).is_err());
    }
}
