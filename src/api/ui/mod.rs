//! The memory inspector: a static page at `/ui` for the people who run and
//! audit Mnemo. Three files, embedded in the binary (`include_str!`): plain
//! HTML, CSS and JavaScript with no build step, no CDN and no external font,
//! so it works offline.
//!
//! The page holds no privilege: it signs in with an API key kept in the
//! tab's `sessionStorage` (never in a URL, never in a cookie) and reads and
//! writes only through the `/v1` routes, with `Authorization: Bearer`, under
//! the same authorisation as any client. Every response here carries a
//! strict Content-Security-Policy: scripts only from this origin (no inline
//! script, no `eval`), no frames, no plugins, requests only to this origin.
//! The script writes memory texts with `textContent` only, so stored HTML
//! stays text.

use axum::http::{header, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

use super::AppState;

const INDEX_HTML: &str = include_str!("index.html");
const APP_JS: &str = include_str!("app.js");
const APP_CSS: &str = include_str!("app.css");
const ICON_SVG: &str = include_str!("icon.svg");

/// The page's Content-Security-Policy.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self'; connect-src 'self'; font-src 'none'; object-src 'none'; \
    base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// `/ui` and its assets; `/` redirects to `/ui`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(|| async { Redirect::to("/ui") }))
        .route("/ui", get(|| asset(INDEX_HTML, "text/html; charset=utf-8")))
        .route(
            "/ui/",
            get(|| asset(INDEX_HTML, "text/html; charset=utf-8")),
        )
        .route(
            "/ui/app.js",
            get(|| asset(APP_JS, "text/javascript; charset=utf-8")),
        )
        .route(
            "/ui/app.css",
            get(|| asset(APP_CSS, "text/css; charset=utf-8")),
        )
        .route("/ui/icon.svg", get(|| asset(ICON_SVG, "image/svg+xml")))
}

async fn asset(body: &'static str, content_type: &'static str) -> Response {
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        // Small and versioned with the binary: revalidate, never go stale.
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (
            HeaderName::from_static("cross-origin-opener-policy"),
            HeaderValue::from_static("same-origin"),
        ),
    ];
    (headers, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_its_script_and_style_from_files_only() {
        // No inline script or handler: the CSP would block them anyway.
        assert!(!INDEX_HTML.contains("<script>"));
        let handler = INDEX_HTML.split(" on").skip(1).any(|rest| {
            let name: String = rest.chars().take_while(char::is_ascii_lowercase).collect();
            !name.is_empty() && rest[name.len()..].starts_with('=')
        });
        assert!(!handler, "no inline event handlers");
        assert!(INDEX_HTML.contains(r#"<script src="/ui/app.js" defer></script>"#));
        assert!(!INDEX_HTML.contains("http://") && !INDEX_HTML.contains("https://"));
        assert!(!APP_CSS.contains("@import") && !APP_CSS.contains("url("));
        assert!(CSP.contains("script-src 'self'") && !CSP.contains("unsafe"));
    }

    #[test]
    fn the_script_never_writes_html_from_strings() {
        for banned in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
        ] {
            assert!(!APP_JS.contains(banned), "app.js uses {banned}");
        }
        // The key lives in the tab's session storage only.
        assert!(APP_JS.contains("sessionStorage"));
        assert!(!APP_JS.contains("localStorage") && !APP_JS.contains("document.cookie"));
    }
}
