//! `/metrics` label cardinality through the whole router: invented HTTP
//! methods and paths (a scanner, a fuzzer, an attacker) must not add series.
//! Each request goes through `app(state)` like a real one, so what is checked
//! is the label the middleware and the fallback actually record.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};

use crate::api::{api, call, send};

/// Series of `mnemo_http_requests_total` in an exposition.
fn request_series(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with("mnemo_http_requests_total{"))
        .collect()
}

#[tokio::test]
async fn invented_methods_and_paths_keep_the_series_bounded() {
    let api = api().await;
    let scrape = |accept: Option<&'static str>| {
        let mut req =
            Request::get("/metrics").header(header::AUTHORIZATION, format!("Bearer {}", api.admin));
        if let Some(a) = accept {
            req = req.header(header::ACCEPT, a);
        }
        send(&api.app, req.body(Body::empty()).unwrap())
    };
    let baseline = scrape(None).await;
    let baseline = baseline.body.as_str().unwrap().len();

    for i in 0..2000 {
        let method = Method::from_bytes(format!("BREW{i}").as_bytes()).unwrap();
        let r = call(&api.app, method, "/v1/search", Some(&api.agent), None).await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
        let r = call(
            &api.app,
            Method::GET,
            &format!("/v1/nowhere/{i}/{}", "x".repeat(i % 50)),
            Some(&api.agent),
            None,
        )
        .await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
    }

    let r = scrape(None).await;
    assert_eq!(r.status, StatusCode::OK);
    let text = r.body.as_str().unwrap();
    let series = request_series(text);
    assert!(series.len() <= 4, "{series:#?}");
    assert!(
        text.contains(
            "mnemo_http_requests_total{method=\"other\",route=\"/v1/search\",status=\"405\"} 2000"
        ),
        "{series:#?}"
    );
    assert!(
        text.contains(
            "mnemo_http_requests_total{method=\"GET\",route=\"unmatched\",status=\"404\"} 2000"
        ),
        "{series:#?}"
    );
    assert!(!text.contains("BREW"), "no invented method is a label");
    assert!(!text.contains("/v1/nowhere"), "no raw path is a label");
    // 4,000 odd requests add a few histograms' worth of text, not 4,000 series.
    assert!(
        text.len() < baseline + 16 * 1024,
        "{} bytes after, {baseline} before",
        text.len()
    );

    let om = scrape(Some("application/openmetrics-text; version=1.0.0")).await;
    let om = om.body.as_str().unwrap();
    assert!(om.ends_with("# EOF\n"));
    assert_eq!(request_series(om).len(), series.len());
}
