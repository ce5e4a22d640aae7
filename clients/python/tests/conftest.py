"""Fixtures: a real `mnemo serve` (the binary named by $MNEMO_BIN, its own
data directory, SQLite store, tantivy and qdrant-edge indexes, the ONNX
embedder from $MNEMO_ASSETS_DIR) and, for turns, a local OpenAI-compatible
chat endpoint that answers by rule (`FakeModel`), the same approach as the
Rust tests' fake upstream in `tests/integration/llm.rs`: Mnemo's own code
(prompt assembly, the model client, extraction, storage) is real; only the
language model is played by a script. Nothing skips: a missing binary or
asset is an error.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List

import httpx
import pytest

REPO = Path(__file__).resolve().parents[3]
EXTRACTION_PROMPT = "You extract long-term memories"
#: What the fake model answers to a turn; tests look for it.
TURN_REPLY = "Fake model reply: Sawaya is the cheapest ryokan."
#: A message the fake extractor turns into a low-confidence candidate.
HEDGED = "maybe"
HEDGED_MEMORY = "The user might like oolong tea"


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"${name} must be set (scripts/test-python-client.sh sets it)")
    return value


class FakeModel(ThreadingHTTPServer):
    """`POST /v1/chat/completions` answered by rule; records every body."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _FakeModelHandler)
        self.bodies: List[Dict[str, Any]] = []
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def turn_bodies(self) -> List[Dict[str, Any]]:
        with self.lock:
            return [b for b in self.bodies if not _is_extraction(b)]

    def answer(self, body: Dict[str, Any]) -> str:
        with self.lock:
            self.bodies.append(body)
        if _is_extraction(body):
            user = body["messages"][-1]["content"]
            found = []
            if HEDGED in user.lower():
                found.append(
                    {"text": HEDGED_MEMORY, "kind": "preference", "confidence": 0.4, "correction": False}
                )
            return json.dumps({"memories": found})
        return TURN_REPLY


def _is_extraction(body: Dict[str, Any]) -> bool:
    first = body.get("messages", [{}])[0]
    return first.get("role") == "system" and first.get("content", "").startswith(EXTRACTION_PROMPT)


class _FakeModelHandler(BaseHTTPRequestHandler):
    server: FakeModel

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        content = self.server.answer(body)
        send_completion(self, {"role": "assistant", "content": content}, model=body.get("model", "fake"))

    def log_message(self, *args: Any) -> None:
        pass


def send_completion(
    handler: BaseHTTPRequestHandler, message: Dict[str, Any], *, model: str, finish: str = "stop"
) -> None:
    """Answers a Chat Completions request with one choice holding ``message``."""
    reply = json.dumps(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    ).encode()
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(reply)))
    handler.end_headers()
    handler.wfile.write(reply)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A running `mnemo serve` and the keys made for it."""

    def __init__(self, base_url: str, admin: str, agent: str, user_key: str, log: Path) -> None:
        self.base_url = base_url
        self.admin = admin
        self.agent = agent
        #: A user key bound to the user `carol`.
        self.user_key = user_key
        self.log = log


def _create_key(bin_: str, data_dir: Path, role: str, user: str = "") -> str:
    args = [bin_, "--data-dir", str(data_dir), "keys", "create", "--tenant", "default", "--role", role]
    if user:
        args += ["--user", user]
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=120)
    return out.stdout.strip()


@pytest.fixture(scope="session")
def fake_model():
    model = FakeModel()
    thread = threading.Thread(target=model.serve_forever, daemon=True)
    thread.start()
    yield model
    model.shutdown()
    model.server_close()


@contextlib.contextmanager
def serve(fake_model: FakeModel, **extra_env: str):
    """A `mnemo serve` on its own data directory, with its keys."""
    with tempfile.TemporaryDirectory(prefix="mnemo-pyclient-") as tmp:
        data = Path(tmp) / "data"
        keys = make_keys(data)
        with serve_on(data, keys, fake_model, **extra_env) as s:
            yield s


def make_keys(data: Path) -> Dict[str, str]:
    """An admin key, an agent key and a user key bound to `carol`, made in
    the data directory `data` (before the server starts)."""
    bin_ = env("MNEMO_BIN")
    return {
        "admin": _create_key(bin_, data, "admin"),
        "agent": _create_key(bin_, data, "agent"),
        "user": _create_key(bin_, data, "user", "carol"),
    }


@contextlib.contextmanager
def serve_on(data: Path, keys: Dict[str, str], fake_model: FakeModel, **extra_env: str):
    """`mnemo serve` on the data directory `data` until the block ends (a
    second call on the same directory is a restart)."""
    bin_ = env("MNEMO_BIN")
    env("MNEMO_ASSETS_DIR")
    port = free_port()
    log = data.parent / f"serve-{port}.log"
    child_env = {
        **os.environ,
        "MNEMO_DATA_DIR": str(data),
        "MNEMO_POLICY": str(REPO / "memory_policies.toml"),
        "MNEMO_LISTEN": f"127.0.0.1:{port}",
        "MNEMO_LLM_BASE_URL": fake_model.base_url,
        "MNEMO_LLM_MODEL": "fake-model",
        "MNEMO_LLM_CONTEXT_TOKENS": "8192",
        "MNEMO_LLM_TIMEOUT_SECS": "10",
        "MNEMO_LLM_MAX_RETRIES": "0",
        **extra_env,
    }
    with open(log, "wb") as out:
        proc = subprocess.Popen([bin_, "serve"], env=child_env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"mnemo serve exited {proc.returncode}:\n{log.read_text()}")
            try:
                if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"mnemo serve not ready after 180 s:\n{log.read_text()}")
            time.sleep(0.25)
        yield Server(base, keys["admin"], keys["agent"], keys["user"], log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


#: How long the shared server's `DELETE /v1/users/{id}` waits for the
#: erasure before answering 202. The tests on `server` read the receipt
#: (200), which a loaded machine did not always give within the default 1 s
#: (the SQLite purge rewrites the database); the 202 path is tested on
#: `limited_server`, which never waits.
ERASURE_WAIT_SECS = "20"


@pytest.fixture(scope="session")
def server(fake_model: FakeModel):
    with serve(fake_model, MNEMO_ERASURE_WAIT_SECS=ERASURE_WAIT_SECS) as s:
        yield s


#: The limits of `limited_server`.
THREADS_PER_USER = 2
REQUESTS_PER_SECOND = 5
BURST = 20


@pytest.fixture(scope="module")
def limited_server(fake_model: FakeModel, tmp_path_factory):
    """A server with tight limits: `DELETE /v1/users/{id}` never waits (an
    erasure not done at once answers 202 with its status URL), two threads
    per user, and a per-key rate of 5 requests per second (burst 20)."""
    policy = (REPO / "memory_policies.toml").read_text()
    for name, value in (
        ("max_threads_per_user", THREADS_PER_USER),
        ("requests_per_second_per_key", float(REQUESTS_PER_SECOND)),
        ("burst_per_key", BURST),
    ):
        policy, n = re.subn(rf"(?m)^{name} = .*$", f"{name} = {value}", policy)
        assert n == 1, name
    path = tmp_path_factory.mktemp("policy") / "policy.toml"
    path.write_text(policy)
    with serve(fake_model, MNEMO_ERASURE_WAIT_SECS="0", MNEMO_POLICY=str(path)) as s:
        yield s


@pytest.fixture()
def client(server: Server):
    import mnemo

    with mnemo.Client(server.base_url, api_key=server.agent, timeout=30) as c:
        yield c


@pytest.fixture()
def admin(server: Server):
    import mnemo

    with mnemo.Client(server.base_url, api_key=server.admin, timeout=30) as c:
        yield c


@pytest.fixture(scope="session")
def openapi(server: Server) -> Dict[str, Any]:
    response = httpx.get(f"{server.base_url}/openapi.json", timeout=30)
    response.raise_for_status()
    return response.json()


def wait_until(predicate, timeout: float = 30.0, what: str = "condition"):
    """Polls ``predicate`` (background work: extraction) until it is truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
