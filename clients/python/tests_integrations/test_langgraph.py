"""MnemoStore driven through LangGraph's own BaseStore API (and a compiled
graph) against a real `mnemo serve`."""

from __future__ import annotations

import asyncio
from typing import Any, Dict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, InvalidNamespaceError
from typing_extensions import TypedDict

import mnemo
from conftest import unique
from mnemo.integrations.langgraph import (
    DuplicateFactError,
    MissingUserError,
    MnemoStore,
    UnsupportedFilter,
    UnsupportedIndexConfig,
)


@pytest.fixture()
def store(client: mnemo.Client) -> MnemoStore:
    return MnemoStore(client)


def test_put_search_get_delete(store: MnemoStore, client: mnemo.Client):
    user = unique("alice")
    ns = ("users", user, "memories")
    store.put(ns, "tea", {"text": "Alice prefers green tea over coffee", "topic": "drinks"})
    store.put(ns, "flight", {"text": "Alice's flight lands at nine", "topic": "travel"})

    item = store.get(ns, "tea")
    assert item is not None and item.key == "tea" and item.namespace == ns
    assert item.value == {"text": "Alice prefers green tea over coffee", "topic": "drinks"}

    hits = store.search(("users", user), query="what does alice like to drink?")
    assert hits and hits[0].key == "tea" and hits[0].namespace == ns
    assert hits[0].score is not None and hits[0].score > 0
    only_travel = store.search(("users", user), query="alice", filter={"topic": "travel"})
    assert [h.key for h in only_travel] == ["flight"]
    same = store.search(("users", user), query="alice", filter={"topic": {"$eq": "travel"}})
    assert [h.key for h in same] == ["flight"]
    listed = store.search(ns)
    assert sorted(h.key for h in listed) == ["flight", "tea"]

    # A second put on the key replaces the value (one memory, changed in place).
    store.put(ns, "tea", {"text": "Alice now prefers oolong tea", "topic": "drinks"})
    item2 = store.get(ns, "tea")
    assert item2 is not None and item2.value["text"] == "Alice now prefers oolong tea"
    assert item2.created_at == item.created_at and item2.updated_at > item.updated_at
    assert len(store.search(ns, filter={"topic": "drinks"})) == 1

    store.delete(ns, "tea")
    assert store.get(ns, "tea") is None
    assert "tea" not in [h.key for h in store.search(("users", user), query="oolong tea")]
    assert [h.key for h in store.search(ns)] == ["flight"]


def test_a_second_user_never_sees_the_first(store: MnemoStore):
    alice, bob = unique("alice"), unique("bob")
    store.put(("users", alice, "memories"), "secret", {"text": "Alice's locker code is 4711"})
    assert store.get(("users", alice, "memories"), "secret") is not None
    assert store.get(("users", bob, "memories"), "secret") is None
    assert store.search(("users", bob), query="locker code") == []
    assert store.search(("users", bob)) == []
    assert store.list_namespaces(prefix=("users", bob)) == []
    assert store.list_namespaces(prefix=("users", alice)) == [("users", alice, "memories")]
    # A store bound to bob maps every namespace to bob, whatever it says.
    bobs = MnemoStore(store.client, user_id=bob)
    assert bobs.get(("users", alice, "memories"), "secret") is None
    assert bobs.search(("users", alice), query="locker code") == []


def test_index_fields_and_index_false(client: mnemo.Client):
    user = unique("cleo")
    store = MnemoStore(client, index={"fields": ["memory"]})
    ns = ("users", user, "notes")
    store.put(ns, "a", {"memory": "Cleo plays the cello", "source": "chat"})
    mem = client.list(user_id=user).memories[0]
    assert mem.text == "Cleo plays the cello", "only the indexed field is embedded"
    store.put(ns, "b", {"memory": "Cleo keeps a hidden diary about the cello"}, index=False)
    store.put(ns, "c", {"memory": "ignored", "title": "Cleo's violin"}, index=["title"])
    found = [h.key for h in store.search(ns, query="cello")]
    assert "a" in found and "b" not in found, "index=False is not found by query"
    assert [h.key for h in store.search(ns, query="violin")][:1] == ["c"]
    b = store.get(ns, "b")
    assert b is not None and b.value["memory"].startswith("Cleo keeps"), "but is stored"


def test_refusals_are_clear(store: MnemoStore, client: mnemo.Client):
    with pytest.raises(UnsupportedIndexConfig, match="embed"):
        MnemoStore(client, index={"dims": 3, "embed": lambda texts: [[0.0] * 3 for _ in texts]})
    with pytest.raises(MissingUserError, match="names no user"):
        store.put(("memories",), "k", {"text": "x"})
    with pytest.raises(MissingUserError):
        store.search(("users",), query="x")
    with pytest.raises(UnsupportedFilter, match="equality"):
        store.search(("users", unique("dan")), query="x", filter={"n": {"$gt": 1}})
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(("users", unique("dan")), "k", {"text": "x"}, ttl=5)
    with pytest.raises(ValueError, match="reserved"):
        store.put(("users", unique("dan")), "k", {"langgraph_key": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("users", "a.b"), "k", {"text": "x"})


def test_list_namespaces(store: MnemoStore):
    user = unique("eve")
    facts = {
        ("users", user, "a", "x"): "Eve keeps bees",
        ("users", user, "a", "y"): "Eve's train leaves at seven",
        ("users", user, "b"): "Eve speaks Portuguese",
    }
    for ns, text in facts.items():
        store.put(ns, "k", {"text": text})
    got = store.list_namespaces(prefix=("users", user))
    assert got == [("users", user, "a", "x"), ("users", user, "a", "y"), ("users", user, "b")]
    assert store.list_namespaces(prefix=("users", user), max_depth=3) == [
        ("users", user, "a"),
        ("users", user, "b"),
    ]
    assert store.list_namespaces(prefix=("users", user), suffix=("y",)) == [("users", user, "a", "y")]
    with pytest.raises(MissingUserError):
        store.list_namespaces()


def test_async_twins(server: Any):
    async def go() -> None:
        user = unique("finn")
        ns = ("users", user, "memories")
        async with mnemo.AsyncClient(server.base_url, api_key=server.agent, timeout=30) as ac:
            with mnemo.Client(server.base_url, api_key=server.agent, timeout=30) as c:
                store = MnemoStore(c, async_client=ac)
                await store.aput(ns, "k", {"text": "Finn is allergic to peanuts"})
                got = await store.aget(ns, "k")
                assert got is not None and got.value["text"] == "Finn is allergic to peanuts"
                hits = await store.asearch(("users", user), query="food allergy peanuts")
                assert [h.key for h in hits] == ["k"]
                assert await store.alist_namespaces(prefix=("users", user)) == [ns]
                await store.adelete(ns, "k")
                assert await store.aget(ns, "k") is None

    asyncio.run(go())


def test_the_same_fact_under_a_second_key_is_refused(store: MnemoStore):
    user = unique("ivo")
    ns = ("users", user, "memories")
    store.put(ns, "first", {"text": "Ivo prefers green tea"})
    with pytest.raises(DuplicateFactError) as e:
        store.put(ns, "second", {"text": "Ivo prefers green tea"})
    assert e.value.namespace == ns and e.value.key == "first"
    assert store.get(ns, "second") is None
    assert [h.key for h in store.search(ns)] == ["first"], "stored once"


def test_forget_user_erases_everything(store: MnemoStore):
    user = unique("gus")
    ns = ("users", user, "memories")
    store.put(ns, "k", {"text": "Gus lives in Oslo"})
    done = store.forget_user(user)
    assert done.user_id == user
    assert store.get(ns, "k") is None
    assert store.search(("users", user), query="Oslo") == []


class State(TypedDict):
    user: str
    said: str
    recalled: str


def remember_node(state: State, *, store: BaseStore) -> Dict[str, Any]:
    store.put(("users", state["user"], "memories"), "said", {"text": state["said"]})
    return {}


def recall_node(state: State, *, store: BaseStore) -> Dict[str, Any]:
    hits = store.search(("users", state["user"]), query="which city?")
    return {"recalled": hits[0].value["text"] if hits else ""}


def test_a_compiled_graph_uses_the_store(store: MnemoStore):
    builder = StateGraph(State)
    builder.add_node("remember", remember_node)
    builder.add_node("recall", recall_node)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(store=store)
    user = unique("hana")
    out = graph.invoke({"user": user, "said": "Hana moved to the city of Kyoto", "recalled": ""})
    assert out["recalled"] == "Hana moved to the city of Kyoto"
    assert store.get(("users", user, "memories"), "said") is not None
