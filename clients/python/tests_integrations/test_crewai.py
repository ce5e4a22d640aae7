"""MnemoStorage driven through CrewAI's own unified Memory API (remember,
recall, forget, scopes) against a real `mnemo serve`. Every field CrewAI
would ask its model for (scope, categories, importance) is given, so no
model is called; the embedder is the storage's (no model either)."""

from __future__ import annotations

import os

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from typing import Any  # noqa: E402

import pytest  # noqa: E402
from crewai.memory.storage.backend import StorageBackend  # noqa: E402
from crewai.memory.unified_memory import Memory  # noqa: E402

import mnemo  # noqa: E402
from conftest import Restartable, unique  # noqa: E402
from mnemo.integrations.crewai import MnemoStorage, UnknownQueryVector  # noqa: E402


def memory_for(client: mnemo.Client, user: str) -> Memory:
    storage = MnemoStorage(client, user_id=user)
    assert isinstance(storage, StorageBackend)
    return Memory(storage=storage, embedder=storage.embedder)


def remember(memory: Memory, text: str, scope: str = "/prefs", **kw: Any) -> Any:
    return memory.remember(text, scope=scope, categories=kw.pop("categories", ["general"]),
                           importance=kw.pop("importance", 0.6), **kw)


def test_remember_recall_forget(client: mnemo.Client):
    user = unique("alice")
    memory = memory_for(client, user)
    tea = remember(memory, "Alice prefers green tea over coffee", categories=["drinks"])
    remember(memory, "Alice's flight lands at nine", scope="/travel", categories=["trips"])
    assert tea is not None

    found = memory.recall("what does alice like to drink?", depth="shallow")
    assert found and found[0].record.id == tea.id
    assert found[0].record.content == "Alice prefers green tea over coffee"
    assert found[0].record.scope == "/prefs" and found[0].record.categories == ["drinks"]
    only_travel = memory.recall("alice", scope="/travel", depth="shallow")
    assert [m.record.content for m in only_travel] == ["Alice's flight lands at nine"]
    drinks = memory.recall("alice", categories=["drinks"], depth="shallow")
    assert [m.record.id for m in drinks] == [tea.id]

    assert memory.list_scopes("/") == ["/prefs", "/travel"]
    assert memory.list_categories() == {"drinks": 1, "trips": 1}
    info = memory.info("/")
    assert info.record_count == 2 and info.child_scopes == ["/prefs", "/travel"]

    assert memory.forget(record_ids=[tea.id]) == 1
    assert all(m.record.id != tea.id for m in memory.recall("green tea", depth="shallow"))
    assert memory._storage.get_record(tea.id) is None
    memory.reset()
    assert memory.recall("flight", depth="shallow") == []


def test_a_second_user_never_sees_the_first(client: mnemo.Client):
    alice, bob = memory_for(client, unique("alice")), memory_for(client, unique("bob"))
    secret = remember(alice, "Alice's locker code is 4711")
    assert alice.recall("locker code", depth="shallow")
    assert bob.recall("locker code", depth="shallow") == []
    assert bob._storage.get_record(secret.id) is None
    assert bob.list_scopes("/") == []
    assert bob.forget(record_ids=[secret.id]) == 0
    assert alice.recall("locker code", depth="shallow"), "bob's forget did not reach alice"


def test_refusals(client: mnemo.Client):
    with pytest.raises(ValueError, match="user"):
        MnemoStorage(client, user_id="")
    storage = MnemoStorage(client, user_id=unique("dan"))
    with pytest.raises(UnknownQueryVector):
        storage.search([0.1] * 64)


def test_forget_user(client: mnemo.Client):
    user = unique("gus")
    memory = memory_for(client, user)
    remember(memory, "Gus lives in Oslo")
    memory._storage.forget_user()
    assert memory.recall("Oslo", depth="shallow") == []
    assert client.verify_erasure(user).memories == 0


def test_records_survive_a_restart(restartable: Restartable):
    user = unique("ida")
    with restartable.run() as first:
        with mnemo.Client(first.base_url, api_key=first.agent) as c:
            record = remember(memory_for(c, user), "Ida lives in Bergen", scope="/home")
    with restartable.run() as second:
        with mnemo.Client(second.base_url, api_key=second.agent) as c:
            memory = memory_for(c, user)
            again = memory._storage.get_record(record.id)
            assert again is not None and again.content == "Ida lives in Bergen"
            assert again.scope == "/home"
            found = memory.recall("where does Ida live?", depth="shallow")
            assert [m.record.id for m in found] == [record.id]
