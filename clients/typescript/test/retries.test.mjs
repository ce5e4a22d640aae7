// Retries, Retry-After and timeouts against a local HTTP server that answers
// by script (the server's own 429/503 are covered by the Python client's
// tests against a rate-limited `mnemo serve`; here the client's policy is
// the subject, with exact waits recorded).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import {
  APITimeoutError,
  MnemoClient,
  OverloadedError,
  RateLimitedError,
  ServiceUnavailableError,
  retryAfterMs,
} from "../dist/index.js";

let server;
let base;
/** The answers still to give, in order; then 200 {"status":"ok"}. */
let script = [];
let hits = 0;

before(async () => {
  server = createServer((req, res) => {
    hits++;
    req.resume();
    const next = script.shift() ?? { status: 200, body: { status: "ok" } };
    if (next.hang) return; // never answers
    res.writeHead(next.status, { "content-type": "application/json", ...(next.headers ?? {}) });
    res.end(JSON.stringify(next.body ?? { error: { code: next.code, message: "scripted" } }));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${server.address().port}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

function make(options = {}) {
  const c = new MnemoClient({ baseUrl: base, retry: { jitter: false }, ...options });
  const waits = [];
  c.sleep = async (ms) => void waits.push(ms);
  return { c, waits };
}

test("429 is retried after Retry-After, for any method", async () => {
  hits = 0;
  script = [
    { status: 429, code: "rate_limited", headers: { "retry-after": "2" } },
    { status: 429, code: "rate_limited", headers: { "retry-after": "1" } },
  ];
  const { c, waits } = make();
  const answer = await c.add({ text: "x", user_id: "u" });
  assert.deepEqual(answer, { status: "ok" });
  assert.deepEqual(waits, [2000, 1000]);
  assert.equal(hits, 3);
});

test("503 with Retry-After (overloaded) is retried; without it, only idempotent calls", async () => {
  script = [{ status: 503, code: "overloaded", headers: { "retry-after": "1" } }];
  const { c, waits } = make();
  await c.add({ text: "x", user_id: "u" });
  assert.deepEqual(waits, [1000]);

  script = [{ status: 503, code: "unavailable" }];
  const post = make();
  await assert.rejects(post.c.add({ text: "x", user_id: "u" }), ServiceUnavailableError);
  assert.deepEqual(post.waits, [], "a POST refused without Retry-After is not repeated");

  script = [{ status: 503, code: "unavailable" }, { status: 503, code: "unavailable" }];
  const get = make();
  await get.c.get("m1");
  assert.deepEqual(get.waits, [500, 1000], "exponential backoff for a GET");
});

test("retries give up after maxRetries, with the last error", async () => {
  script = Array.from({ length: 5 }, () => ({ status: 429, code: "rate_limited", headers: { "retry-after": "0" } }));
  const { c, waits } = make({ retry: { maxRetries: 2, jitter: false } });
  await assert.rejects(c.health(), (e) => e instanceof RateLimitedError && e.retryAfterMs === 0 && e.code === "rate_limited");
  assert.equal(waits.length, 2);
  script = [];
});

test("a Retry-After longer than maxRetryAfterMs is not waited for", async () => {
  script = [{ status: 503, code: "overloaded", headers: { "retry-after": "120" } }];
  const { c, waits } = make();
  await assert.rejects(c.health(), (e) => e instanceof OverloadedError && e.retryAfterMs === 120_000);
  assert.deepEqual(waits, []);
});

test("a non-JSON error body still maps by status", async () => {
  script = [{ status: 404, body: "not json" }];
  const { c } = make();
  await assert.rejects(c.get("x"), (e) => e.status === 404 && e.code === "not_found");
});

test("a timeout aborts the attempt (AbortController) and is typed", async () => {
  script = [{ hang: true }];
  const { c } = make({ timeoutMs: 200, retry: { maxRetries: 0 } });
  const t0 = Date.now();
  await assert.rejects(c.add({ text: "x", user_id: "u" }), APITimeoutError);
  assert.ok(Date.now() - t0 < 5000);
  script = [{ hang: true }];
  const retried = make({ timeoutMs: 200, retry: { maxRetries: 1, jitter: false } });
  assert.deepEqual(await retried.c.health(), { status: "ok" }, "an idempotent GET is tried again");
  assert.equal(retried.waits.length, 1);
});

test("Retry-After as an HTTP date", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(retryAfterMs("Thu, 01 Jan 2026 00:00:05 GMT", now), 5000);
  assert.equal(retryAfterMs("7", now), 7000);
  assert.equal(retryAfterMs("soon", now), undefined);
});
