"""LangGraph long-term memory backed by Mnemo: :class:`MnemoStore`, a
``langgraph.store.base.BaseStore`` (``pip install "mnemo-client[langgraph]"``).

Use it wherever LangGraph takes a store (``graph.compile(store=...)``,
``create_react_agent(..., store=...)``); ``put``, ``get``, ``search``,
``delete``, ``list_namespaces`` and their ``a``-prefixed twins are the base
class's, so LangGraph's documentation applies unchanged.

How items map onto Mnemo memories (long-term tier, one memory per item):

- **User.** Every namespace belongs to one Mnemo user. With
  ``MnemoStore(client, user_id="alice")`` that user owns every namespace.
  Without it the namespace names the user: ``("users", <user_id>, *rest)``;
  any other namespace is refused (:class:`MissingUserError`), never guessed.
- **Namespace and key** are kept in the memory's metadata
  (``langgraph_namespace``: the labels joined by ``.``, which LangGraph
  forbids inside a label; ``langgraph_ns_<i>``: each label, for prefix
  filters; ``langgraph_key``) and in the memory's ``thread_id``
  (``langgraph:<sha256 of namespace and key>``), which ``GET /v1/memories``
  filters on exactly: ``get`` by key is one indexed read.
- **Value.** Stored whole in ``metadata.langgraph_value``; its top-level
  fields are also copied to the metadata's top level, so a search ``filter``
  is Mnemo's metadata equality filter. Keys starting with ``langgraph_`` are
  reserved. Mnemo's metadata limit (64 KiB as JSON by default) holds both.
- **Text.** The memory's text (embedded, and indexed for BM25) is the value's
  ``index`` fields (``put(..., index=[...])``, else the store's
  ``index={"fields": [...]}``, else ``["$"]``: the whole value as JSON),
  joined by newlines. ``index=False`` stores the item unsearchable by query
  (``langgraph_indexed: false``; ``search`` with a query skips it).
  Mnemo embeds with its own model: an ``index`` config naming ``embed`` or
  ``dims`` is refused (:class:`UnsupportedIndexConfig`).
- **Search** with ``query`` is Mnemo's hybrid search (BM25 + vectors, decay,
  importance) in the user's scope, ``score`` its final score; without a
  query the user's items are listed (oldest first) and filtered. Filters
  are equality only (a value or ``{"$eq": value}``); other operators are
  refused (:class:`UnsupportedFilter`).
- **Delete** soft-deletes the memory (restorable, audited);
  :meth:`MnemoStore.forget_user` erases everything of a user.
- Mnemo's lifecycle applies: a put whose text states the same fact as
  another item of the same user is not stored twice (Mnemo reinforces the
  first): :class:`DuplicateFactError` names the item that holds it.
- TTLs are not supported (``supports_ttl = False``: LangGraph refuses
  ``ttl=``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from .. import models as m
from ..client import AsyncClient, Client

__all__ = [
    "DuplicateFactError",
    "MissingUserError",
    "MnemoStore",
    "UnsupportedFilter",
    "UnsupportedIndexConfig",
]

RESERVED = "langgraph_"
NAMESPACE = "langgraph_namespace"
KEY = "langgraph_key"
VALUE = "langgraph_value"
INDEXED = "langgraph_indexed"
LEVEL = "langgraph_ns_"
#: Items listed per request when a search has no query or namespaces are listed.
PAGE = 500
Namespace = Tuple[str, ...]


class MissingUserError(ValueError):
    """The namespace does not say which Mnemo user it belongs to."""


class UnsupportedIndexConfig(ValueError):
    """An ``index`` setting Mnemo cannot honour (it embeds with its own model)."""


class UnsupportedFilter(ValueError):
    """A filter operator other than equality."""


class DuplicateFactError(ValueError):
    """Mnemo already holds the same fact for this user under another item:
    it reinforced that memory instead of storing a copy."""

    def __init__(self, namespace: Optional[Namespace], key: Optional[str], memory_id: str) -> None:
        self.namespace = namespace
        self.key = key
        self.memory_id = memory_id
        where = f"namespace {namespace!r}, key {key!r}" if key is not None else f"memory {memory_id}"
        super().__init__(
            f"Mnemo already holds the same fact for this user ({where}); it was reinforced, "
            "not stored again under the new key"
        )


def _tag(namespace: Namespace, key: str) -> str:
    digest = hashlib.sha256(json.dumps([list(namespace), key]).encode()).hexdigest()
    return f"langgraph:{digest[:40]}"


class MnemoStore(BaseStore):
    """A LangGraph ``BaseStore`` over Mnemo (see the module documentation for
    the mapping).

    ``client`` serves :meth:`batch`; :meth:`abatch` uses ``async_client``
    when given, else runs ``batch`` in a worker thread. ``user_id`` makes
    every namespace that user's; without it namespaces start with
    ``("users", <user_id>)``. ``index`` is LangGraph's ``IndexConfig``,
    of which only ``fields`` applies.
    """

    supports_ttl = False

    def __init__(
        self,
        client: Client,
        *,
        async_client: Optional[AsyncClient] = None,
        user_id: Optional[str] = None,
        index: Optional[IndexConfig] = None,
        kind: m.Kind = "fact",
    ) -> None:
        self.client = client
        self.async_client = async_client
        self.user_id = user_id
        self.kind = kind
        self.fields: List[str] = ["$"]
        if index is not None:
            refused = sorted(set(index) - {"fields"})
            if refused:
                raise UnsupportedIndexConfig(
                    f"Mnemo embeds every memory with its own model; index settings {refused} "
                    "cannot apply (only `fields`, the parts of the value that are embedded)"
                )
            self.fields = list(index.get("fields") or ["$"])
        for f in self.fields:
            if f != "$":
                tokenize_path(f)  # a malformed path fails here, not at the first put
        self.index_config = index

    # ----- the user of a namespace -------------------------------------------

    def user_of(self, namespace: Namespace) -> str:
        """The Mnemo user a namespace (or namespace prefix) belongs to."""
        if self.user_id is not None:
            return self.user_id
        if len(namespace) >= 2 and namespace[0] == "users":
            return namespace[1]
        raise MissingUserError(
            f"namespace {namespace!r} names no user: use ('users', <user_id>, ...) "
            "or MnemoStore(..., user_id=...)"
        )

    def forget_user(self, user_id: str) -> Any:
        """Mnemo's forget-all: erases every memory, thread and vector of the
        user (irreversible), waiting for the erasure to finish."""
        return self.client.forget_user(user_id)

    async def aforget_user(self, user_id: str) -> Any:
        if self.async_client is not None:
            return await self.async_client.forget_user(user_id)
        return await asyncio.to_thread(self.forget_user, user_id)

    # ----- batches ------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> List[Result]:
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> List[Result]:
        ops = list(ops)
        if self.async_client is None:
            return await asyncio.to_thread(self.batch, ops)
        return [await self._arun(op) for op in ops]

    def _run(self, op: Op) -> Result:
        c = self.client
        if isinstance(op, GetOp):
            found = self._find(c.list(**self._by_key(op.namespace, op.key)).memories, op)
            return _item(found) if found else None
        if isinstance(op, PutOp):
            found = self._find(c.list(**self._by_key(op.namespace, op.key)).memories, op)
            if op.value is None:
                if found:
                    c.delete(found.id)
                return None
            body = self._memory(op)
            if found:
                c.update(found.id, text=body["text"], metadata=body["metadata"], refresh=True)
                return None
            added = c.add(refresh=True, **body)
            self._check_created(c.get(added.ids[0]), op)
            return None
        if isinstance(op, SearchOp):
            if op.query:
                return self._hits(c.search(**self._search(op)), op)
            user = self.user_of(op.namespace_prefix)
            return self._page(self._matching(c.iter_memories(**self._listing(user)), op), op)
        if isinstance(op, ListNamespacesOp):
            user = self._namespaces_user(op)
            return _namespaces(c.iter_memories(**self._listing(user)), op)
        raise TypeError(f"unknown LangGraph store operation: {type(op).__name__}")

    async def _arun(self, op: Op) -> Result:
        c = self.async_client
        assert c is not None
        if isinstance(op, GetOp):
            page = await c.list(**self._by_key(op.namespace, op.key))
            found = self._find(page.memories, op)
            return _item(found) if found else None
        if isinstance(op, PutOp):
            page = await c.list(**self._by_key(op.namespace, op.key))
            found = self._find(page.memories, op)
            if op.value is None:
                if found:
                    await c.delete(found.id)
                return None
            body = self._memory(op)
            if found:
                await c.update(found.id, text=body["text"], metadata=body["metadata"], refresh=True)
                return None
            added = await c.add(refresh=True, **body)
            self._check_created(await c.get(added.ids[0]), op)
            return None
        if isinstance(op, SearchOp):
            if op.query:
                return self._hits(await c.search(**self._search(op)), op)
            user = self.user_of(op.namespace_prefix)
            listed = [x async for x in c.iter_memories(**self._listing(user))]
            return self._page(self._matching(listed, op), op)
        if isinstance(op, ListNamespacesOp):
            user = self._namespaces_user(op)
            listed = [x async for x in c.iter_memories(**self._listing(user))]
            return _namespaces(listed, op)
        raise TypeError(f"unknown LangGraph store operation: {type(op).__name__}")

    # ----- requests -----------------------------------------------------------

    def _by_key(self, namespace: Namespace, key: str) -> Dict[str, Any]:
        return {
            "user_id": self.user_of(namespace),
            "thread_id": _tag(namespace, key),
            "tier": "long_term",
            "status": "active",
            "limit": 10,
        }

    @staticmethod
    def _find(memories: Sequence[m.Memory], op: Union[GetOp, PutOp]) -> Optional[m.Memory]:
        ns = ".".join(op.namespace)
        for memory in memories:
            if memory.metadata.get(NAMESPACE) == ns and memory.metadata.get(KEY) == op.key:
                return memory
        return None

    def _memory(self, op: PutOp) -> Dict[str, Any]:
        value = op.value
        assert value is not None
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise TypeError("a LangGraph item's value is a mapping with string keys")
        reserved = sorted(k for k in value if k.startswith(RESERVED))
        if reserved:
            raise ValueError(f"value keys starting with {RESERVED!r} are reserved: {reserved}")
        value = dict(value)
        indexed = op.index is not False
        fields = self.fields if op.index is None or op.index is False else list(op.index)
        texts: List[str] = []
        for f in fields:
            texts.extend(t for t in get_text_at_path(value, f) if t.strip())
        if not texts:
            # Nothing to embed under those fields: the whole value stands in
            # (Mnemo needs a text), but the item is not found by query.
            texts = get_text_at_path(value, "$")
            indexed = False
        metadata: Dict[str, Any] = dict(value)
        metadata.update(
            {
                NAMESPACE: ".".join(op.namespace),
                KEY: op.key,
                VALUE: value,
                INDEXED: indexed,
            }
        )
        metadata.update({f"{LEVEL}{i}": label for i, label in enumerate(op.namespace)})
        return {
            "text": "\n".join(texts),
            "user_id": self.user_of(op.namespace),
            "thread_id": _tag(op.namespace, op.key),
            "kind": self.kind,
            "confidence": 1.0,
            "metadata": metadata,
        }

    @staticmethod
    def _check_created(memory: m.Memory, op: PutOp) -> None:
        if memory.metadata.get(KEY) == op.key and memory.metadata.get(NAMESPACE) == ".".join(
            op.namespace
        ):
            return
        ns = memory.metadata.get(NAMESPACE)
        raise DuplicateFactError(
            tuple(ns.split(".")) if isinstance(ns, str) else None,
            memory.metadata.get(KEY),
            str(memory.id),
        )

    def _search(self, op: SearchOp) -> Dict[str, Any]:
        metadata = _equality(op.filter)
        metadata.update({f"{LEVEL}{i}": label for i, label in enumerate(op.namespace_prefix)})
        metadata[INDEXED] = True
        return {
            "query": op.query,
            "user_id": self.user_of(op.namespace_prefix),
            "tiers": ["long_term"],
            "top_k": op.offset + op.limit,
            "metadata": metadata,
        }

    @staticmethod
    def _hits(result: m.SearchResponse, op: SearchOp) -> List[SearchItem]:
        hits = [h for h in result.hits if KEY in h.memory.metadata]
        return [_item(h.memory, score=h.score) for h in hits[op.offset : op.offset + op.limit]]

    @staticmethod
    def _listing(user: str) -> Dict[str, Any]:
        return {"user_id": user, "tier": "long_term", "status": "active", "page_size": PAGE}

    @staticmethod
    def _matching(memories: Iterable[m.Memory], op: SearchOp) -> List[m.Memory]:
        wanted = _equality(op.filter)
        prefix = op.namespace_prefix
        out = []
        for memory in memories:
            ns = _namespace(memory)
            if ns is None or ns[: len(prefix)] != prefix:
                continue
            if all(memory.metadata.get(k) == v for k, v in wanted.items()):
                out.append(memory)
        return out

    @staticmethod
    def _page(memories: List[m.Memory], op: SearchOp) -> List[SearchItem]:
        return [_item(x) for x in memories[op.offset : op.offset + op.limit]]

    def _namespaces_user(self, op: ListNamespacesOp) -> str:
        if self.user_id is not None:
            return self.user_id
        for cond in op.match_conditions or ():
            if cond.match_type == "prefix" and "*" not in cond.path[:2]:
                return self.user_of(tuple(cond.path))
        raise MissingUserError(
            "list_namespaces needs prefix=('users', <user_id>, ...) (or MnemoStore(..., user_id=...)): "
            "Mnemo lists one user's memories at a time"
        )


def _equality(filter: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """LangGraph's filter as Mnemo's metadata equality filter."""
    out: Dict[str, Any] = {}
    for key, want in (filter or {}).items():
        if key.startswith(RESERVED):
            raise UnsupportedFilter(f"filter keys starting with {RESERVED!r} are reserved: {key!r}")
        if isinstance(want, dict) and any(k.startswith("$") for k in want):
            if set(want) != {"$eq"}:
                raise UnsupportedFilter(
                    f"filter on {key!r}: Mnemo filters metadata by equality only "
                    f"(a value or {{'$eq': value}}), not {sorted(want)}"
                )
            want = want["$eq"]
        out[key] = want
    return out


def _namespace(memory: m.Memory) -> Optional[Namespace]:
    ns = memory.metadata.get(NAMESPACE)
    if not isinstance(ns, str) or KEY not in memory.metadata:
        return None
    return tuple(ns.split("."))


def _item(memory: m.Memory, score: Optional[float] = None) -> SearchItem:
    ns = _namespace(memory)
    assert ns is not None
    value = memory.metadata.get(VALUE)
    return SearchItem(
        namespace=ns,
        key=str(memory.metadata[KEY]),
        value=dict(value) if isinstance(value, dict) else {},
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        score=score,
    )


def _namespaces(memories: Iterable[m.Memory], op: ListNamespacesOp) -> List[Namespace]:
    found = set()
    for memory in memories:
        ns = _namespace(memory)
        if ns is None:
            continue
        if not all(_matches(ns, c.match_type, tuple(c.path)) for c in op.match_conditions or ()):
            continue
        found.add(ns[: op.max_depth] if op.max_depth is not None else ns)
    return sorted(found)[op.offset : op.offset + op.limit]


def _matches(ns: Namespace, how: str, path: Namespace) -> bool:
    if len(path) > len(ns):
        return False
    part = ns[: len(path)] if how == "prefix" else ns[len(ns) - len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part))
