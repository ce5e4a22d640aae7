"""CrewAI memory backed by Mnemo (``pip install "mnemo-client[crewai]"``):
:class:`MnemoStorage`, a ``crewai.memory.storage.backend.StorageBackend``
for CrewAI's unified ``Memory``::

    storage = MnemoStorage(mnemo.Client(...), user_id="alice")
    memory = Memory(storage=storage, embedder=storage.embedder)
    crew = Crew(agents=[...], tasks=[...], memory=memory)

How it maps:

- **User.** One storage serves one Mnemo user, named when it is built
  (``user_id``); it never reads or writes another's memories.
- **Records** are long-term memories: ``content`` is the text (Mnemo embeds
  and indexes it), ``importance`` the importance, and the record's id,
  scope, categories, source, privacy and metadata are kept in the memory's
  metadata (``crewai_record``); the scope's path components are also
  ``crewai_scope_<i>`` and the record's own metadata is copied to the
  metadata's top level, so scope prefixes and ``metadata_filter`` are Mnemo's
  metadata equality filter. The record's id is also the memory's
  ``thread_id`` (``crewai:<id>``), which ``GET /v1/memories`` filters on
  exactly: ``get_record``, ``update`` and ``delete(record_ids=...)`` are
  indexed reads.
- **Search.** CrewAI's backend interface searches by an embedding; Mnemo
  embeds server-side and searches by text (hybrid: BM25 + vectors). Build
  ``Memory(embedder=storage.embedder)``: that embedder gives each text a
  stable 64-number key instead of calling a model, and ``search`` turns the
  key back into the text and runs Mnemo's search; the score is Mnemo's.
  Another embedder's vectors are refused (:class:`UnknownQueryVector`).
- **Deletes** are Mnemo's soft delete (restorable, audited);
  :meth:`MnemoStorage.forget_user` is Mnemo's forget-all for the user.
- Mnemo's lifecycle applies: a record stating the same fact as a stored
  one of the user reinforces that memory instead of adding a copy.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from crewai.memory.types import MemoryRecord, ScopeInfo

from .. import models as m
from ..client import Client

__all__ = ["MnemoEmbedder", "MnemoStorage", "UnknownQueryVector"]

RECORD = "crewai_record"
LEVEL = "crewai_scope_"
RESERVED = "crewai_"
#: Texts whose key the embedder remembers for the storage (the oldest go first).
REMEMBERED_TEXTS = 10_000
PAGE = 500


class UnknownQueryVector(ValueError):
    """A query vector that :class:`MnemoEmbedder` did not make."""


class MnemoEmbedder:
    """CrewAI's embedder callable (``list[str] -> list[list[float]]``) for
    :class:`MnemoStorage`: each text gets a stable key vector derived from
    its SHA-512 (no model is called; Mnemo embeds the text itself), and the
    text is remembered so that the storage can search Mnemo by it."""

    def __init__(self, capacity: int = REMEMBERED_TEXTS) -> None:
        self.capacity = capacity
        self._texts: "OrderedDict[Tuple[float, ...], str]" = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, input: List[str]) -> List[List[float]]:
        out = []
        for text in input:
            digest = hashlib.sha512(text.encode()).digest()
            vector = [((b - 127.5) / 127.5) for b in digest]
            key = tuple(vector)
            with self._lock:
                self._texts[key] = text
                self._texts.move_to_end(key)
                while len(self._texts) > self.capacity:
                    self._texts.popitem(last=False)
            out.append(vector)
        return out

    def text_of(self, vector: List[float]) -> str:
        with self._lock:
            text = self._texts.get(tuple(float(x) for x in vector))
        if text is None:
            raise UnknownQueryVector(
                "MnemoStorage searches Mnemo by text: build Memory(storage=storage, "
                "embedder=storage.embedder) so that the query's text can be found"
            )
        return text


def _levels(scope: Optional[str]) -> List[str]:
    return [p for p in (scope or "/").split("/") if p]


def _path(levels: Iterable[str]) -> str:
    return "/" + "/".join(levels)


class MnemoStorage:
    """CrewAI's ``StorageBackend`` over one Mnemo user's long-term memory."""

    def __init__(self, client: Client, *, user_id: str, kind: m.Kind = "fact") -> None:
        if not user_id:
            raise ValueError("MnemoStorage needs the Mnemo user it stores for (user_id)")
        self.client = client
        self.user_id = user_id
        self.kind = kind
        self.embedder = MnemoEmbedder()

    # ----- writes -------------------------------------------------------------

    def save(self, records: List[MemoryRecord]) -> None:
        for start in range(0, len(records), 50):
            chunk = records[start : start + 50]
            self.client.add_many([self._memory(r) for r in chunk], refresh=True)

    def update(self, record: MemoryRecord) -> None:
        found = self._by_id(record.id)
        if found is None:
            self.save([record])
            return
        body = self._memory(record)
        self.client.update(
            found.id,
            text=body["text"],
            importance=body["importance"],
            metadata=body["metadata"],
            refresh=True,
        )

    def delete(
        self,
        scope_prefix: Optional[str] = None,
        categories: Optional[List[str]] = None,
        record_ids: Optional[List[str]] = None,
        older_than: Optional[datetime] = None,
        metadata_filter: Optional[Dict[str, Any]] = None,
    ) -> int:
        if record_ids is not None:
            found = [f for f in (self._by_id(i) for i in record_ids) if f is not None]
            found = [
                f for f in found if self._matches(f, scope_prefix, categories, metadata_filter, older_than)
            ]
        else:
            found = self._scan(scope_prefix, categories, metadata_filter, older_than)
        for memory in found:
            self.client.delete(memory.id)
        return len(found)

    def reset(self, scope_prefix: Optional[str] = None) -> None:
        self.delete(scope_prefix=scope_prefix)

    def forget_user(self) -> Any:
        """Mnemo's forget-all for this storage's user: every memory, thread
        and vector erased (irreversible), not only CrewAI's records."""
        return self.client.forget_user(self.user_id)

    # ----- reads --------------------------------------------------------------

    def search(
        self,
        query_embedding: List[float],
        scope_prefix: Optional[str] = None,
        categories: Optional[List[str]] = None,
        metadata_filter: Optional[Dict[str, Any]] = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> List[Tuple[MemoryRecord, float]]:
        query = self.embedder.text_of(query_embedding)
        metadata: Dict[str, Any] = dict(metadata_filter or {})
        metadata.update({f"{LEVEL}{i}": p for i, p in enumerate(_levels(scope_prefix))})
        # Categories are matched here (any of them), so ask for more.
        top_k = min(100, limit * 3 if categories else limit)
        hits = self.client.search(
            query, user_id=self.user_id, tiers=["long_term"], top_k=top_k, metadata=metadata
        ).hits
        out = []
        for hit in hits:
            if RECORD not in hit.memory.metadata or hit.score < min_score:
                continue
            if categories and not set(categories) & set(self._record(hit.memory).categories):
                continue
            out.append((self._record(hit.memory), float(hit.score)))
        return out[:limit]

    def get_record(self, record_id: str) -> Optional[MemoryRecord]:
        found = self._by_id(record_id)
        return self._record(found) if found is not None else None

    def list_records(
        self, scope_prefix: Optional[str] = None, limit: int = 200, offset: int = 0
    ) -> List[MemoryRecord]:
        found = self._scan(scope_prefix)
        found.sort(key=lambda x: x.created_at, reverse=True)
        return [self._record(x) for x in found[offset : offset + limit]]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        levels = _levels(scope)
        records = [self._record(x) for x in self._scan(_path(levels))]
        children = set()
        cats: Set[str] = set()
        for r in records:
            rl = _levels(r.scope)
            if len(rl) > len(levels):
                children.add(_path(rl[: len(levels) + 1]))
            cats.update(r.categories)
        times = [r.created_at for r in records]
        return ScopeInfo(
            path=_path(levels),
            record_count=len(records),
            categories=sorted(cats),
            oldest_record=min(times) if times else None,
            newest_record=max(times) if times else None,
            child_scopes=sorted(children),
        )

    def list_scopes(self, parent: str = "/") -> List[str]:
        return self.get_scope_info(parent).child_scopes

    def list_categories(self, scope_prefix: Optional[str] = None) -> Dict[str, int]:
        counts: Dict[str, int] = {}
        for x in self._scan(scope_prefix):
            for c in self._record(x).categories:
                counts[c] = counts.get(c, 0) + 1
        return counts

    def count(self, scope_prefix: Optional[str] = None) -> int:
        return len(self._scan(scope_prefix))

    # ----- async twins (CrewAI's async paths) ---------------------------------

    async def asave(self, records: List[MemoryRecord]) -> None:
        await asyncio.to_thread(self.save, records)

    async def asearch(
        self,
        query_embedding: List[float],
        scope_prefix: Optional[str] = None,
        categories: Optional[List[str]] = None,
        metadata_filter: Optional[Dict[str, Any]] = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> List[Tuple[MemoryRecord, float]]:
        return await asyncio.to_thread(
            self.search, query_embedding, scope_prefix, categories, metadata_filter, limit, min_score
        )

    async def adelete(
        self,
        scope_prefix: Optional[str] = None,
        categories: Optional[List[str]] = None,
        record_ids: Optional[List[str]] = None,
        older_than: Optional[datetime] = None,
        metadata_filter: Optional[Dict[str, Any]] = None,
    ) -> int:
        return await asyncio.to_thread(
            self.delete, scope_prefix, categories, record_ids, older_than, metadata_filter
        )

    # ----- the mapping --------------------------------------------------------

    def _memory(self, r: MemoryRecord) -> Dict[str, Any]:
        reserved = sorted(k for k in r.metadata if k.startswith(RESERVED))
        if reserved:
            raise ValueError(f"metadata keys starting with {RESERVED!r} are reserved: {reserved}")
        metadata: Dict[str, Any] = dict(r.metadata)
        metadata[RECORD] = {
            "id": r.id,
            "scope": r.scope,
            "categories": list(r.categories),
            "metadata": dict(r.metadata),
            "source": r.source,
            "private": r.private,
            "created_at": _utc(r.created_at).isoformat(),
        }
        metadata.update({f"{LEVEL}{i}": p for i, p in enumerate(_levels(r.scope))})
        return {
            "text": r.content,
            "user_id": self.user_id,
            "thread_id": f"crewai:{r.id}",
            "kind": self.kind,
            "importance": r.importance,
            "confidence": 1.0,
            "metadata": metadata,
        }

    @staticmethod
    def _record(x: m.Memory) -> MemoryRecord:
        rec = x.metadata[RECORD]
        created = rec.get("created_at")
        return MemoryRecord(
            id=rec["id"],
            content=x.text,
            scope=rec.get("scope") or "/",
            categories=list(rec.get("categories") or []),
            metadata=dict(rec.get("metadata") or {}),
            importance=x.importance,
            created_at=_naive(datetime.fromisoformat(created) if created else x.created_at),
            last_accessed=_naive(x.last_accessed_at or x.updated_at),
            source=rec.get("source"),
            private=bool(rec.get("private")),
        )

    def _by_id(self, record_id: str) -> Optional[m.Memory]:
        page = self.client.list(
            user_id=self.user_id, thread_id=f"crewai:{record_id}", tier="long_term", status="active"
        )
        for x in page.memories:
            if x.metadata.get(RECORD, {}).get("id") == record_id:
                return x
        return None

    def _scan(
        self,
        scope_prefix: Optional[str] = None,
        categories: Optional[List[str]] = None,
        metadata_filter: Optional[Dict[str, Any]] = None,
        older_than: Optional[datetime] = None,
    ) -> List[m.Memory]:
        memories = self.client.iter_memories(
            user_id=self.user_id, tier="long_term", status="active", page_size=PAGE
        )
        return [
            x
            for x in memories
            if RECORD in x.metadata
            and self._matches(x, scope_prefix, categories, metadata_filter, older_than)
        ]

    def _matches(
        self,
        x: m.Memory,
        scope_prefix: Optional[str],
        categories: Optional[List[str]],
        metadata_filter: Optional[Dict[str, Any]],
        older_than: Optional[datetime],
    ) -> bool:
        r = self._record(x)
        want = _levels(scope_prefix)
        if _levels(r.scope)[: len(want)] != want:
            return False
        if categories and not set(categories) & set(r.categories):
            return False
        if metadata_filter and any(r.metadata.get(k) != v for k, v in metadata_filter.items()):
            return False
        if older_than is not None and _utc(r.created_at) >= _utc(older_than):
            return False
        return True


def _utc(t: datetime) -> datetime:
    """CrewAI's naive datetimes are UTC (``datetime.utcnow``)."""
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t


def _naive(t: datetime) -> datetime:
    """A datetime as CrewAI keeps them: naive UTC."""
    return _utc(t).astimezone(timezone.utc).replace(tzinfo=None)
