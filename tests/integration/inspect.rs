//! The inspector's routes (`src/api/routes/inspect.rs`) and the page itself
//! (`/ui`): each route's answer for each key role, tenant isolation, and the
//! page's security headers. Through `app(state)` with `oneshot`, on real
//! backends with the hashing embedder.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::BodyExt;
use mnemo::store::Role;
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::api::{api, call, key};

async fn add(app: &axum::Router, k: &str, user: &str, text: &str) -> String {
    let r = call(
        app,
        Method::POST,
        "/v1/memories",
        Some(k),
        Some(json!({"user_id": user, "text": text, "refresh": true})),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body["ids"][0].as_str().unwrap().to_string()
}

fn user_ids(body: &Value) -> Vec<&str> {
    body["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["user_id"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn whoami_names_the_role_tenant_and_user_of_each_key() {
    let api = api().await;
    for (k, role, user) in [
        (&api.admin, "admin", Value::Null),
        (&api.agent, "agent", Value::Null),
        (&api.ann, "user", json!("ann")),
    ] {
        let r = call(&api.app, Method::GET, "/v1/whoami", Some(k), None).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.body["role"], role);
        assert_eq!(r.body["tenant_id"], "acme");
        assert_eq!(r.body["user_id"], user);
        assert_eq!(r.body["insecure_dev"], false);
    }
    let r = call(&api.app, Method::GET, "/v1/whoami", None, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn users_are_what_the_key_may_see() {
    let api = api().await;
    add(&api.app, &api.agent, "ann", "Ann likes tea").await;
    add(&api.app, &api.agent, "bob", "Bob likes coffee").await;
    add(&api.app, &api.agent, "bob", "Bob 住在上海").await;
    add(&api.app, &api.globex, "gus", "Gus is in another tenant").await;
    key(&api.engine, "acme", Some("cara"), Role::User).await;

    let r = call(&api.app, Method::GET, "/v1/users", Some(&api.agent), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(user_ids(&r.body), ["ann", "bob", "cara"]);
    let bob = &r.body["users"][1];
    assert_eq!(bob["memories_seen"], 2);
    assert_eq!(r.body["users"][2]["has_key"], true);
    assert!(r.body["next_cursor"].is_null());

    let r = call(&api.app, Method::GET, "/v1/users", Some(&api.ann), None).await;
    assert_eq!(user_ids(&r.body), ["ann"]);
    let r = call(&api.app, Method::GET, "/v1/users", Some(&api.globex), None).await;
    assert_eq!(user_ids(&r.body), ["gus"]);
    let r = call(
        &api.app,
        Method::GET,
        "/v1/users?cursor=nope",
        Some(&api.admin),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn lineage_follows_the_supersede_chain_within_the_key_scope() {
    let api = api().await;
    let first = add(&api.app, &api.agent, "ann", "Ann lives in Paris").await;
    let r = call(
        &api.app,
        Method::POST,
        &format!("/v1/memories/{first}/supersede"),
        Some(&api.agent),
        Some(json!({"text": "Ann lives in Lyon"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let second = r.body["memory"]["id"].as_str().unwrap().to_string();
    for (k, from) in [(&api.ann, &first), (&api.agent, &second)] {
        let r = call(
            &api.app,
            Method::GET,
            &format!("/v1/memories/{from}/lineage"),
            Some(k),
            None,
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let chain: Vec<&str> = r.body["memories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(chain, [first.as_str(), second.as_str()]);
        assert_eq!(r.body["memories"][0]["status"], "superseded");
    }
    let bob = key(&api.engine, "acme", Some("bob"), Role::User).await;
    for k in [&bob, &api.globex] {
        let r = call(
            &api.app,
            Method::GET,
            &format!("/v1/memories/{first}/lineage"),
            Some(k),
            None,
        )
        .await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn keys_are_managed_by_admins_within_their_tenant() {
    let api = api().await;
    for k in [&api.agent, &api.ann] {
        let r = call(&api.app, Method::GET, "/v1/keys", Some(k), None).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN);
        let r = call(
            &api.app,
            Method::POST,
            "/v1/keys",
            Some(k),
            Some(json!({"role": "admin"})),
        )
        .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN);
    }
    let r = call(&api.app, Method::GET, "/v1/keys", Some(&api.admin), None).await;
    assert_eq!(r.status, StatusCode::OK);
    let keys = r.body["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 3, "acme's three keys, not globex's: {}", r.body);
    assert!(keys.iter().all(|k| k["tenant_id"] == "acme"));
    assert!(!r.body.to_string().contains("secret"));

    let r = call(
        &api.app,
        Method::POST,
        "/v1/keys",
        Some(&api.admin),
        Some(json!({"role": "user", "user_id": "dan"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let secret = r.body["secret"].as_str().unwrap().to_string();
    let id = r.body["key"]["id"].as_str().unwrap().to_string();
    assert_eq!(r.body["key"]["tenant_id"], "acme");
    let r = call(&api.app, Method::GET, "/v1/whoami", Some(&secret), None).await;
    assert_eq!(r.body["user_id"], "dan");
    let r = call(
        &api.app,
        Method::POST,
        "/v1/keys",
        Some(&api.admin),
        Some(json!({"role": "user"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = call(
        &api.app,
        Method::POST,
        "/v1/keys",
        Some(&api.admin),
        Some(json!({"role": "root"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    let r = call(
        &api.app,
        Method::DELETE,
        &format!("/v1/keys/{id}"),
        Some(&api.admin),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body["revoked_at"].is_string());
    let r = call(&api.app, Method::GET, "/v1/whoami", Some(&secret), None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let r = call(
        &api.app,
        Method::DELETE,
        &format!("/v1/keys/{id}"),
        Some(&api.admin),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "already revoked");

    // Another tenant's key cannot be revoked (nor told apart from a missing one).
    let store = api.engine.store();
    let globex_id = store
        .list_api_keys()
        .await
        .unwrap()
        .into_iter()
        .find(|k| k.tenant_id == "globex")
        .unwrap()
        .id;
    let r = call(
        &api.app,
        Method::DELETE,
        &format!("/v1/keys/{globex_id}"),
        Some(&api.admin),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = call(&api.app, Method::GET, "/v1/whoami", Some(&api.globex), None).await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn jobs_index_and_evals_are_admin_only() {
    let api = api().await;
    add(&api.app, &api.agent, "ann", "Ann likes tea").await;
    for path in ["/v1/jobs", "/v1/index", "/v1/evals"] {
        for k in [&api.agent, &api.ann] {
            let r = call(&api.app, Method::GET, path, Some(k), None).await;
            assert_eq!(r.status, StatusCode::FORBIDDEN, "{path}");
        }
    }
    let r = call(
        &api.app,
        Method::POST,
        "/v1/jobs/ttl-sweep/dry-run",
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);

    let r = call(&api.app, Method::GET, "/v1/jobs", Some(&api.admin), None).await;
    assert_eq!(r.status, StatusCode::OK);
    let names: Vec<&str> = r.body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["job"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ttl-sweep", "weekly-cleanup"]);
    assert_eq!(r.body["jobs"][1]["interval_secs"], 7 * 86_400);

    let r = call(
        &api.app,
        Method::POST,
        "/v1/jobs/ttl-sweep/dry-run",
        Some(&api.admin),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["job"], "ttl-sweep");
    assert!(r.body["scanned"].is_u64());
    let r = call(
        &api.app,
        Method::POST,
        "/v1/jobs/vacuum/dry-run",
        Some(&api.admin),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    // A dry run takes no lease and records no run.
    let r = call(&api.app, Method::GET, "/v1/jobs", Some(&api.admin), None).await;
    assert!(r.body["jobs"][0]["last_completed_at"].is_null());
    // The timer's first check records when the cleanup's first run is due.
    assert!(r.body["jobs"][1]["first_due_at"].is_null());
    let now = chrono::Utc::now();
    assert!(!mnemo::jobs::cleanup_due(&api.engine, now).await.unwrap());
    let r = call(&api.app, Method::GET, "/v1/jobs", Some(&api.admin), None).await;
    let due: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(r.body["jobs"][1]["first_due_at"].clone()).unwrap();
    let week = chrono::Duration::days(7);
    assert!(
        (due - (now + week)).num_milliseconds().abs() <= 1,
        "{}",
        r.body
    );

    let r = call(&api.app, Method::GET, "/v1/index", Some(&api.admin), None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["store_indexed"], 1);
    assert_eq!(r.body["lexical_docs"], 1);
    assert_eq!(r.body["vector_points"], 1);
    assert_eq!(r.body["lexical_lag"], 0);
    assert_eq!(r.body["memories"]["long_term"]["active"], 1);

    let r = call(&api.app, Method::GET, "/v1/evals", Some(&api.admin), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body["reports"].is_array());
}

#[tokio::test]
async fn the_policy_in_force_is_readable_by_any_key() {
    let api = api().await;
    let r = call(&api.app, Method::GET, "/v1/policy", Some(&api.ann), None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body["toml"].as_str().unwrap().contains("budget_fraction"));
    assert_eq!(r.body["policy"]["context"]["budget_fraction"], 0.1);
    let r = call(&api.app, Method::GET, "/v1/policy", None, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

async fn get_raw(app: &axum::Router, uri: &str) -> (StatusCode, axum::http::HeaderMap, String) {
    let res = app
        .clone()
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn the_page_is_served_without_a_key_under_a_strict_csp() {
    let api = api().await;
    let (status, headers, body) = get_raw(&api.app, "/ui").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
    let csp = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self'"));
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"));
    assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
    assert!(headers.get(header::SET_COOKIE).is_none());
    assert!(body.contains("/ui/app.js"));
    for (path, kind) in [
        ("/ui/app.js", "text/javascript"),
        ("/ui/app.css", "text/css"),
        ("/ui/icon.svg", "image/svg+xml"),
    ] {
        let (status, headers, body) = get_raw(&api.app, path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with(kind));
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert!(!body.is_empty());
    }
    let (status, headers, _) = get_raw(&api.app, "/").await;
    assert!(status.is_redirection());
    assert_eq!(headers[header::LOCATION], "/ui");
    let (status, _, _) = get_raw(&api.app, "/ui/secrets.txt").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
