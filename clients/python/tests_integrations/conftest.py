"""Fixtures for the framework adapters' tests: the client tests' real
`mnemo serve` and fake model (tests/conftest.py, loaded as a module), plus a
server that can be restarted on the same data directory.

The frameworks come from PyPI at the versions pinned in
requirements-adapters.txt (LangGraph, OpenAI Agents SDK) and
requirements-crewai.txt (CrewAI); scripts/test-python-adapters.sh installs
them. Nothing skips.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

_spec = importlib.util.spec_from_file_location(
    "mnemo_test_support", Path(__file__).resolve().parents[1] / "tests" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
support: Any = importlib.util.module_from_spec(_spec)
sys.modules["mnemo_test_support"] = support
_spec.loader.exec_module(support)

fake_model = support.fake_model
server = support.server
FakeModel = support.FakeModel
Server = support.Server
TURN_REPLY = support.TURN_REPLY
wait_until = support.wait_until


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


class Restartable:
    """A data directory and its keys; `run()` serves it until the block ends."""

    def __init__(self, data: Path, keys: Dict[str, str], model: Any) -> None:
        self.data = data
        self.keys = keys
        self.model = model

    @contextlib.contextmanager
    def run(self) -> Iterator[Any]:
        with support.serve_on(self.data, self.keys, self.model) as s:
            yield s


@pytest.fixture()
def restartable(fake_model: Any) -> Iterator[Restartable]:
    with tempfile.TemporaryDirectory(prefix="mnemo-adapters-") as tmp:
        data = Path(tmp) / "data"
        yield Restartable(data, support.make_keys(data), fake_model)


@pytest.fixture()
def client(server: Any) -> Iterator[Any]:
    import mnemo

    with mnemo.Client(server.base_url, api_key=server.agent, timeout=30) as c:
        yield c
