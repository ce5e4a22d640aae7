"""Retries, backoff, timeouts and the error mapping, on controlled transports:
these decide what the client does with a given answer, which the real server
cannot be made to send on demand (it is overloaded only under load)."""

from __future__ import annotations

import re
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

import mnemo
from mnemo import _core
from mnemo.errors import ERROR_CODES, error_class

REPO = Path(__file__).resolve().parents[3]
OK_HEALTH = {"status": "ok"}


def error(status: int, code: str, headers=None) -> httpx.Response:
    return httpx.Response(
        status, json={"error": {"code": code, "message": "busy"}}, headers=headers or {}
    )


class Script:
    """A transport that answers from a list, recording each request."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def client_for(script: Script, **kw) -> tuple:
    c = mnemo.Client(
        "http://mnemo.test",
        api_key="k",
        transport=httpx.MockTransport(script),
        retry=mnemo.Retry(jitter=False, **kw),
    )
    slept = []
    c._sleep = slept.append
    return c, slept


def test_overloaded_503_waits_retry_after_then_succeeds():
    script = Script(error(503, "overloaded", {"retry-after": "2"}), httpx.Response(200, json=OK_HEALTH))
    c, slept = client_for(script)
    assert c.health().status == "ok"
    assert slept == [2.0] and len(script.requests) == 2


def test_post_is_retried_on_overloaded_because_the_server_did_no_work():
    ok = {"ids": [], "memories": []}
    script = Script(error(503, "overloaded", {"retry-after": "1"}), httpx.Response(201, json=ok))
    c, slept = client_for(script)
    assert c.add("x", user_id="u").ids == []
    assert slept == [1.0]
    assert script.requests[0].headers["authorization"] == "Bearer k"


def test_429_backs_off_exponentially_and_gives_up_after_max_retries():
    script = Script(*[error(429, "rate_limited")] * 4)
    c, slept = client_for(script, max_retries=3, backoff_base=0.5)
    with pytest.raises(mnemo.RateLimitedError) as e:
        c.search("q", user_id="u")
    assert slept == [0.5, 1.0, 2.0] and len(script.requests) == 4
    assert e.value.status == 429


def test_backoff_is_capped_and_jittered():
    r = mnemo.Retry(backoff_base=1.0, backoff_max=4.0)
    waits = [r.delay(a, "GET", status=429) for a in range(3)]
    assert 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0 and 2.0 <= waits[2] <= 4.0
    assert mnemo.Retry(jitter=False, backoff_max=4.0, max_retries=9).delay(8, "GET", status=429) == 4.0


def test_503_without_retry_after_is_retried_only_when_idempotent():
    c, slept = client_for(Script(error(503, "unavailable"), httpx.Response(200, json=OK_HEALTH)))
    assert c.health().status == "ok" and slept == [0.5]
    script = Script(error(503, "unavailable"))
    c, slept = client_for(script)
    with pytest.raises(mnemo.ServiceUnavailableError) as e:
        c.thread("t").turn("hello")
    assert slept == [] and len(script.requests) == 1
    assert not isinstance(e.value, mnemo.OverloadedError)


def test_a_retry_after_beyond_the_cap_is_raised_at_once():
    script = Script(error(503, "overloaded", {"retry-after": "120"}))
    c, slept = client_for(script, max_retry_after=30)
    with pytest.raises(mnemo.OverloadedError) as e:
        c.health()
    assert e.value.retry_after == 120.0 and slept == []


def test_client_errors_are_not_retried():
    script = Script(error(409, "conflict"))
    c, slept = client_for(script)
    with pytest.raises(mnemo.ConflictError):
        c.confirm("00000000-0000-0000-0000-000000000000")
    assert slept == [] and len(script.requests) == 1


def test_connect_errors_are_retried_then_raised():
    refused = httpx.ConnectError("refused")
    c, slept = client_for(Script(refused, refused, httpx.Response(200, json=OK_HEALTH)))
    assert c.health().status == "ok" and slept == [0.5, 1.0]
    c, _ = client_for(Script(refused, refused), max_retries=1)
    with pytest.raises(mnemo.APIConnectionError):
        c.add("x", user_id="u")


def test_retry_after_accepts_an_http_date():
    now = time.time()
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now + 10))
    assert _core.retry_after_secs(date, now=now) == pytest.approx(10, abs=1.01)
    assert _core.retry_after_secs("7") == 7.0 and _core.retry_after_secs("soon") is None


def test_a_non_json_error_falls_back_to_its_status():
    c, _ = client_for(Script(httpx.Response(502, text="<html>bad gateway</html>")), max_retries=0)
    with pytest.raises(mnemo.BadGatewayError) as e:
        c.health()
    assert e.value.code == "bad_gateway" and "bad gateway" in e.value.message


def test_every_server_error_code_has_its_own_class():
    """The closed `ErrorCode` enum of src/error.rs, read from the source."""
    source = (REPO / "src" / "error.rs").read_text()
    body = re.search(r"pub enum ErrorCode \{(.*?)\n\}", source, re.S).group(1)
    variants = re.findall(r"^\s*([A-Z][A-Za-z]+),", body, re.M)
    codes = {re.sub(r"(?<!^)([A-Z])", r"_\1", v).lower() for v in variants}
    assert codes == set(ERROR_CODES)
    classes = {error_class(0, code) for code in codes}
    assert len(classes) == len(codes), "one class per code"
    statuses = {
        variant: status
        for arm, status in re.findall(r"((?:ErrorCode::\w+\s*\|\s*)*ErrorCode::\w+) => (\d{3})", source)
        for variant in re.findall(r"ErrorCode::(\w+)", arm)
    }
    assert set(statuses) == set(variants), "every code has its status"
    assert error_class(429, None) is mnemo.RateLimitedError
    assert statuses["RateLimited"] == "429" and statuses["Conflict"] == "409"
    assert statuses["QuotaExceeded"] == "409" and statuses["PayloadTooLarge"] == "413"


class Silent:
    """A socket server that accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.accepted = 0
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.conns.append(conn)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self):
        for conn in self.conns:
            conn.close()
        self.sock.close()


def test_timeouts_raise_and_are_not_retried_for_writes():
    silent = Silent()
    try:
        with mnemo.Client(silent.url, api_key="k", timeout=0.5, max_retries=2) as c:
            started = time.monotonic()
            with pytest.raises(mnemo.APITimeoutError):
                c.add("x", user_id="u")
            assert time.monotonic() - started < 5
            assert silent.accepted == 1, "a write that may have arrived is not sent again"
            c._sleep = lambda s: None
            with pytest.raises(mnemo.APITimeoutError):
                c.get("00000000-0000-0000-0000-000000000000")
            assert silent.accepted == 1 + 3, "a read is retried"
    finally:
        silent.close()


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_the_async_client_retries_the_same_way():
    script = Script(error(429, "rate_limited", {"retry-after": "1"}), httpx.Response(200, json=OK_HEALTH))
    slept = []

    async def sleep(s):
        slept.append(s)

    async with mnemo.AsyncClient(
        "http://mnemo.test", transport=httpx.MockTransport(script), retry=mnemo.Retry(jitter=False)
    ) as c:
        c._sleep = sleep
        assert (await c.health()).status == "ok"
    assert slept == [1.0]


RECEIPT = {
    "user_id": "u",
    "erased": dict.fromkeys(
        ["memories", "candidates", "threads", "messages", "audit_events", "lexical_docs", "vectors", "cached_embeddings"], 1
    ),
    "completed_at": "2026-01-01T00:00:00Z",
}
ACCEPTED = {"user_id": "a b", "status": "in_progress", "status_url": "/v1/users/a%20b/erasure"}


def verification(status: str) -> dict:
    counts = 0 if status == "erased" else 1
    return {
        "user_id": "a b", "status": status, "memories": counts, "audit_events": counts, "threads": 0,
        "messages": 0, "lexical_docs": counts, "vectors": counts, "pending_erasure": status == "in_progress",
        "live_nodes": 0, "nodes_behind": [], "erased": status == "erased", "last_erasure_at": None,
    }


def test_forget_user_returns_a_200_receipt_without_polling():
    script = Script(httpx.Response(200, json=RECEIPT))
    c, slept = client_for(script)
    receipt = c.forget_user("u")
    assert isinstance(receipt, mnemo.models.ErasureReceipt) and receipt.erased.vectors == 1
    assert len(script.requests) == 1 and not slept


def test_forget_user_follows_the_202_status_url_until_erased():
    script = Script(
        httpx.Response(202, json=ACCEPTED, headers={"location": ACCEPTED["status_url"]}),
        httpx.Response(200, json=verification("in_progress")),
        httpx.Response(200, json=verification("in_progress")),
        httpx.Response(200, json=verification("erased")),
    )
    c, slept = client_for(script)
    done = c.forget_user("a b", poll_interval=0.25)
    assert isinstance(done, mnemo.models.ErasureVerification) and done.status == "erased"
    assert [r.method for r in script.requests] == ["DELETE", "GET", "GET", "GET"]
    assert script.requests[0].url.raw_path == b"/v1/users/a%20b"
    assert {r.url.raw_path for r in script.requests[1:]} == {b"/v1/users/a%20b/erasure"}
    assert slept == [0.25, 0.25]


def test_forget_user_without_wait_returns_the_in_progress_status():
    script = Script(httpx.Response(202, json=ACCEPTED))
    c, _ = client_for(script)
    accepted = c.forget_user("a b", wait=False)
    assert isinstance(accepted, mnemo.models.ErasureAccepted) and accepted.status == "in_progress"
    assert len(script.requests) == 1


def test_forget_user_gives_up_waiting_after_its_timeout():
    script = Script(httpx.Response(202, json=ACCEPTED), httpx.Response(200, json=verification("in_progress")))
    c, _ = client_for(script)
    with pytest.raises(mnemo.APITimeoutError, match="still in progress"):
        c.forget_user("a b", timeout=0)


def test_quota_and_oversized_requests_have_their_classes():
    assert error_class(409, "quota_exceeded") is mnemo.QuotaExceededError
    assert issubclass(mnemo.QuotaExceededError, mnemo.ConflictError)
    for status in (413, 414, 431):
        assert error_class(status, None) is mnemo.PayloadTooLargeError
    c, _ = client_for(Script(error(409, "quota_exceeded")), max_retries=3)
    with pytest.raises(mnemo.QuotaExceededError):
        c.create_thread(user_id="u")
