"""What the sync and async clients share: each API call as a plain value
(method, path, body, how to read the answer), the retry policy, and the
mapping of error responses to exceptions. No I/O here, so the two clients
differ only in how they send a `Call`.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import (
    Any,
    Callable,
    Dict,
    FrozenSet,
    Generic,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    TypeVar,
    Union,
    cast,
)
from urllib.parse import quote
from uuid import UUID

import httpx
from pydantic import TypeAdapter

from . import errors, models as m

T = TypeVar("T")
Id = Union[str, UUID]

DEFAULT_BASE_URL = "http://127.0.0.1:8420"
#: Above the server's default request timeout (30 s): the server gives up first
#: and says so (503) rather than the client guessing.
DEFAULT_TIMEOUT_SECS = 60.0
#: Methods whose repetition cannot change the result.
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


class _Unset:
    """A keyword argument that was not given (``None`` means JSON ``null``)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass(frozen=True)
class Call(Generic[T]):
    """One API request and how to read its successful answer."""

    method: str
    path: str
    parse: Callable[[Any], T]
    json: Optional[Dict[str, Any]] = None
    params: Optional[Dict[str, Any]] = None
    #: Statuses whose body is a successful answer (besides 2xx).
    also_ok: FrozenSet[int] = frozenset()
    raw: bool = False
    #: A body that is not JSON (an export to import), with its content type.
    content: Optional[bytes] = None
    content_type: Optional[str] = None

    def headers(self) -> Optional[Dict[str, str]]:
        return {"content-type": self.content_type} if self.content_type else None


@dataclass(frozen=True)
class Retry:
    """When and how long to wait before trying again.

    Retried: 429 (rate limited) and 503 with ``Retry-After`` (overloaded: the
    server refused the work before doing any), waiting what the header says;
    connection failures before the request was sent; and, for idempotent
    methods only, other 503s, timeouts and broken connections. Without a
    ``Retry-After`` the wait is exponential (``backoff_base × 2^attempt``,
    capped at ``backoff_max``) with jitter. A ``Retry-After`` longer than
    ``max_retry_after`` is not waited for: the error is raised at once.
    """

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    max_retry_after: float = 30.0
    jitter: bool = True

    def delay(
        self,
        attempt: int,
        method: str,
        *,
        status: Optional[int] = None,
        retry_after: Optional[float] = None,
        exc: Optional[BaseException] = None,
    ) -> Optional[float]:
        """Seconds to wait before attempt ``attempt + 1``, or ``None`` to give up."""
        if attempt >= self.max_retries:
            return None
        idempotent = method.upper() in IDEMPOTENT
        if exc is not None:
            unsent = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
            if not (unsent or (idempotent and isinstance(exc, httpx.TransportError))):
                return None
        elif status == 429 or (status == 503 and retry_after is not None):
            pass
        elif not (status == 503 and idempotent):
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        wait = float(min(self.backoff_max, self.backoff_base * (2**attempt)))
        return wait * (0.5 + random.random() / 2) if self.jitter else wait


def retry_after_secs(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """``Retry-After`` as seconds: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def error_for(response: httpx.Response) -> errors.APIError:
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    return errors.from_response(
        response.status_code,
        body,
        retry_after=retry_after_secs(response.headers.get("retry-after")),
        request_id=response.headers.get("x-request-id"),
        text=response.text if body is None else "",
    )


def transport_error(exc: httpx.TransportError) -> errors.APIConnectionError:
    if isinstance(exc, httpx.TimeoutException):
        return errors.APITimeoutError(f"request timed out: {exc}")
    return errors.APIConnectionError(f"connection failed: {exc}")


def result(call: Call[T], response: httpx.Response) -> T:
    """The parsed answer, or the error the response stands for."""
    if response.is_success or response.status_code in call.also_ok:
        if call.raw:
            return call.parse(response.text)
        return call.parse(response.json())
    raise error_for(response)


# ----- the calls -------------------------------------------------------------


def _model(cls: Type[Any]) -> Callable[[Any], Any]:
    return cast(Callable[[Any], Any], cls.model_validate)


def _seg(value: Id) -> str:
    """One path segment, escaped (user ids may hold any character)."""
    return quote(str(value), safe="")


def _given(**kwargs: Any) -> Dict[str, Any]:
    return {k: v for k, v in kwargs.items() if v is not UNSET}


def _none_unset(**kwargs: Any) -> Dict[str, Any]:
    return {k: v for k, v in kwargs.items() if v is not None and v is not UNSET}


_any = TypeAdapter(Any)


def add(
    text: str,
    *,
    user_id: Optional[str] = None,
    tier: Optional[m.Tier] = None,
    thread_id: Optional[str] = None,
    kind: Optional[m.Kind] = None,
    importance: Optional[float] = None,
    confidence: Optional[float] = None,
    metadata: Optional[m.Metadata] = None,
    expires_at: Optional[datetime] = None,
    refresh: bool = False,
) -> Call[m.AddResponse]:
    """Adds one memory (``refresh=True``: searchable before the answer).
    Below the policy's confidence threshold it waits as ``pending``."""
    body = m.AddRequest(
        text=text,
        refresh=refresh,
        **_none_unset(
            user_id=user_id,
            tier=tier,
            thread_id=thread_id,
            kind=kind,
            importance=importance,
            confidence=confidence,
            metadata=metadata,
            expires_at=expires_at,
        ),
    )
    return Call("POST", "/v1/memories", _model(m.AddResponse), json=body.to_json())


def add_many(
    memories: Sequence[Union[m.MemoryInput, Mapping[str, Any]]], *, refresh: bool = False
) -> Call[m.AddResponse]:
    """Adds a batch; every memory is validated before any is written."""
    items = [x if isinstance(x, m.MemoryInput) else m.MemoryInput(**x) for x in memories]
    body = m.AddRequest(memories=items, refresh=refresh)
    return Call("POST", "/v1/memories", _model(m.AddResponse), json=body.to_json())


def get(memory_id: Id) -> Call[m.Memory]:
    """One memory (``NotFoundError`` when it is not visible to the key)."""
    return Call("GET", f"/v1/memories/{_seg(memory_id)}", _model(m.Memory))


def update(
    memory_id: Id,
    *,
    text: Any = UNSET,
    importance: Any = UNSET,
    metadata: Any = UNSET,
    expires_at: Any = UNSET,
    refresh: bool = False,
) -> Call[m.Memory]:
    """Changes text, importance, metadata or expiry; what is not given is
    left as it is, and ``expires_at=None`` clears the expiry."""
    body = m.PatchRequest(
        refresh=refresh,
        **_given(text=text, importance=importance, metadata=metadata, expires_at=expires_at),
    )
    return Call("PATCH", f"/v1/memories/{_seg(memory_id)}", _model(m.Memory), json=body.to_json())


def delete(memory_id: Id) -> Call[m.DeleteResponse]:
    """Soft-deletes a memory: gone from retrieval, restorable, history kept."""
    return Call("DELETE", f"/v1/memories/{_seg(memory_id)}", _model(m.DeleteResponse))


def history(memory_id: Id) -> Call[List[m.AuditEvent]]:
    """Every change to a memory, oldest first: what, by which key, when."""
    return Call(
        "GET",
        f"/v1/memories/{_seg(memory_id)}/history",
        lambda j: m.HistoryResponse.model_validate(j).events,
    )


#: The query parameters of ``GET /v1/memories`` (checked against the OpenAPI document).
LIST_PARAMS = ("user_id", "tier", "status", "thread_id", "kind", "cursor", "limit")


def list_page(
    *,
    user_id: Optional[str] = None,
    tier: Optional[m.Tier] = None,
    status: Optional[m.Status] = None,
    thread_id: Optional[str] = None,
    kind: Optional[m.Kind] = None,
    cursor: Optional[str] = None,
    limit: Optional[int] = None,
) -> Call[m.ListResponse]:
    """One page of memories, oldest first (``limit`` 1..=500, default 50);
    pass the page's ``next_cursor`` as ``cursor`` for the next one, or use
    ``iter_memories``."""
    params = _none_unset(
        user_id=user_id,
        tier=tier,
        status=status,
        thread_id=thread_id,
        kind=kind,
        cursor=cursor,
        limit=limit,
    )
    return Call("GET", "/v1/memories", _model(m.ListResponse), params=params)


def _review(memory_id: Id, action: str) -> Call[m.Memory]:
    return Call("POST", f"/v1/memories/{_seg(memory_id)}/{action}", _model(m.Memory))


def confirm(memory_id: Id) -> Call[m.Memory]:
    """Confirms a pending candidate: it becomes active."""
    return _review(memory_id, "confirm")


def reject(memory_id: Id) -> Call[m.Memory]:
    """Rejects a pending candidate: it is soft-deleted (restorable)."""
    return _review(memory_id, "reject")


def restore(memory_id: Id) -> Call[m.Memory]:
    """Restores a soft-deleted, archived or expired memory to active."""
    return _review(memory_id, "restore")


def supersede(memory_id: Id, text: str) -> Call[m.SupersedeResponse]:
    """Replaces a memory with a corrected text: the old one becomes
    ``superseded``, linked to its successor."""
    body = m.SupersedeRequest(text=text)
    return Call(
        "POST",
        f"/v1/memories/{_seg(memory_id)}/supersede",
        _model(m.SupersedeResponse),
        json=body.to_json(),
    )


def search(
    query: str,
    *,
    user_id: Optional[str] = None,
    thread_id: Optional[str] = None,
    top_k: Optional[int] = None,
    tiers: Optional[Sequence[m.Tier]] = None,
    kind: Optional[m.KindFilter] = None,
    metadata: Optional[m.Metadata] = None,
    created_after: Optional[datetime] = None,
    created_before: Optional[datetime] = None,
    include_pending: bool = False,
    explain: bool = False,
) -> Call[m.SearchResponse]:
    """Hybrid search in one user's scope; ``explain=True`` adds each hit's
    score breakdown (BM25, vector, fusion, decay, importance)."""
    filters = m.SearchFilters(
        **_none_unset(
            kind=kind,
            metadata=metadata,
            created_after=created_after,
            created_before=created_before,
        )
    )
    body = m.SearchBody(
        query=query,
        include_pending=include_pending,
        explain=explain,
        **_none_unset(
            user_id=user_id,
            thread_id=thread_id,
            top_k=top_k,
            tiers=list(tiers) if tiers is not None else None,
        ),
    )
    if filters.model_fields_set:
        body.filters = filters
    return Call("POST", "/v1/search", _model(m.SearchResponse), json=body.to_json())


def context(
    *,
    model_context_tokens: int,
    user_id: Optional[str] = None,
    query: Optional[str] = None,
    messages: Optional[Sequence[Union[m.ChatMessage, Mapping[str, str]]]] = None,
    thread_id: Optional[str] = None,
    budget_fraction: Optional[float] = None,
) -> Call[m.ContextBlock]:
    """A memory block for a prompt: relevant memories for ``query`` (or the
    last user message of ``messages``) within ``budget_fraction`` of
    ``model_context_tokens``."""
    msgs = (
        [x if isinstance(x, m.ChatMessage) else m.ChatMessage(**x) for x in messages]
        if messages is not None
        else None
    )
    body = m.ContextRequest(
        model_context_tokens=model_context_tokens,
        **_none_unset(
            user_id=user_id,
            query=query,
            messages=msgs,
            thread_id=thread_id,
            budget_fraction=budget_fraction,
        ),
    )
    return Call("POST", "/v1/context", _model(m.ContextBlock), json=body.to_json())


def create_thread(*, user_id: Optional[str] = None, goal: Optional[str] = None) -> Call[m.Thread]:
    """Starts a thread; ``goal`` is pinned (always in the prompt)."""
    body = m.CreateThread(**_none_unset(user_id=user_id, goal=goal))
    return Call("POST", "/v1/threads", _model(m.Thread), json=body.to_json())


#: The query parameters of ``GET /v1/threads/{id}`` and ``GET /v1/users``.
THREAD_PAGE_PARAMS = ("limit", "before", "include_compacted")
USERS_PARAMS = ("cursor",)


def get_thread(
    thread_id: Id,
    *,
    limit: Optional[int] = None,
    before: Optional[int] = None,
    include_compacted: bool = False,
) -> Call[m.ThreadView]:
    """The thread's working memory: goal, summary and one page of messages,
    the newest ``limit`` (1..=200, default 200) with a ``seq`` below
    ``before``; ``include_compacted=True`` pages through the whole history.
    The page's ``next_before`` is the ``before`` of the next, older page
    (or use ``history_pages``)."""
    params = _none_unset(limit=limit, before=before)
    if include_compacted:
        params["include_compacted"] = "true"
    return Call("GET", f"/v1/threads/{_seg(thread_id)}", _model(m.ThreadView), params=params)


def append(
    thread_id: Id,
    role: m.MessageRole,
    content: str = "",
    *,
    tool: Optional[Union[m.ToolResult, Mapping[str, Any]]] = None,
) -> Call[m.Message]:
    """Stores a message (agents running their own model). A ``tool`` result
    enters the history as one compact line; its payload is kept apart."""
    kw: Dict[str, Any] = {"role": role, "content": content}
    if tool is not None:
        kw["tool"] = tool if isinstance(tool, m.ToolResult) else m.ToolResult(**tool)
    body = m.AppendMessage(**kw)
    return Call(
        "POST", f"/v1/threads/{_seg(thread_id)}/messages", _model(m.Message), json=body.to_json()
    )


def payload(thread_id: Id, payload_id: Id) -> Call[Any]:
    """A tool result's full payload, as stored."""
    return Call(
        "GET",
        f"/v1/threads/{_seg(thread_id)}/payloads/{_seg(payload_id)}",
        _any.validate_python,
    )


def prompt(thread_id: Id, message: str, *, model_context_tokens: int) -> Call[m.PromptResponse]:
    """The prompt for ``message``, assembled for a model with that window:
    instructions, goal, summary, memories, recent turns. Nothing is stored
    and no model is called."""
    body = m.PromptRequest(message=message, model_context_tokens=model_context_tokens)
    return Call(
        "POST",
        f"/v1/threads/{_seg(thread_id)}/prompt",
        _model(m.PromptResponse),
        json=body.to_json(),
    )


def turn(
    thread_id: Id,
    message: str,
    *,
    max_tokens: Optional[int] = None,
    temperature: Optional[float] = None,
) -> Call[m.TurnReply]:
    """Runs a turn with the server's configured model: the message is stored
    first, then the reply (``ServiceUnavailableError`` without a model,
    ``ConflictError`` while another turn runs in the thread)."""
    body = m.TurnRequest(
        message=message, **_none_unset(max_tokens=max_tokens, temperature=temperature)
    )
    return Call(
        "POST", f"/v1/threads/{_seg(thread_id)}/turns", _model(m.TurnReply), json=body.to_json()
    )


def add_document(
    text: str,
    *,
    document_id: Optional[str] = None,
    title: Optional[str] = None,
    metadata: Optional[m.Metadata] = None,
    importance: Optional[float] = None,
    created_at: Optional[datetime] = None,
) -> Call[m.DocumentResponse]:
    """Ingests a reference document (admin key); the same id replaces it."""
    body = m.DocumentBody(
        text=text,
        **_none_unset(
            document_id=document_id,
            title=title,
            metadata=metadata,
            importance=importance,
            created_at=created_at,
        ),
    )
    return Call(
        "POST", "/v1/reference/documents", _model(m.DocumentResponse), json=body.to_json()
    )


def delete_document(document_id: str) -> Call[m.DocumentDeleted]:
    """Deletes a reference document and its chunks (admin key)."""
    return Call(
        "DELETE", f"/v1/reference/documents/{_seg(document_id)}", _model(m.DocumentDeleted)
    )


def _erasure_answer(body: Any) -> Union[m.ErasureReceipt, m.ErasureAccepted]:
    # 200 is the receipt, 202 the in-progress status: told apart by shape.
    if isinstance(body, dict) and "status_url" in body:
        return m.ErasureAccepted.model_validate(body)
    return m.ErasureReceipt.model_validate(body)


def start_erasure(user_id: str) -> Call[Union[m.ErasureReceipt, m.ErasureAccepted]]:
    """``DELETE /v1/users/{user_id}`` as sent once: the receipt when the
    erasure finished within the server's wait (200), else its in-progress
    status (202). ``forget_user`` builds on it."""
    return Call("DELETE", f"/v1/users/{_seg(user_id)}", _erasure_answer)


def verify_erasure(user_id: str) -> Call[m.ErasureVerification]:
    """What every store still holds of a user (all zero once erased) and
    where the erasure stands (``status``)."""
    return Call("GET", f"/v1/users/{_seg(user_id)}/erasure", _model(m.ErasureVerification))


def erasure_status(status_url: str) -> Call[m.ErasureVerification]:
    """The ``status_url`` of an :class:`~mnemo.models.ErasureAccepted`, read."""
    if not status_url.startswith("/v1/users/") or not status_url.endswith("/erasure"):
        raise ValueError(f"not an erasure status URL: {status_url!r}")
    return Call("GET", status_url, _model(m.ErasureVerification))


def export_user(user_id: str) -> Call[str]:
    """``GET /v1/users/{user_id}/export``: everything the service holds about
    the user, as JSON Lines (memories in every status with their history,
    threads, messages, tool payloads), the manifest last (counts, sha256,
    schema version). The user's own key or an admin key."""
    return Call("GET", f"/v1/users/{_seg(user_id)}/export", str, raw=True)


def import_user(
    user_id: str,
    export: Union[str, bytes],
    *,
    replace: bool = False,
    allow_erased: bool = False,
) -> Call[m.ImportReport]:
    """``POST /v1/users/{user_id}/import`` (admin): restores an export,
    verified first (a bad file writes nothing). ``replace`` erases what the
    user has first; otherwise a user with data is a conflict. A user who was
    erased (forget-all) is a conflict unless ``allow_erased``: their data
    comes back only when asked for."""
    body = export.encode() if isinstance(export, str) else export
    return Call(
        "POST",
        f"/v1/users/{_seg(user_id)}/import",
        _model(m.ImportReport),
        params={
            k: "true" for k, on in (("replace", replace), ("allow_erased", allow_erased)) if on
        }
        or None,
        content=body,
        content_type="application/x-ndjson",
    )


def parse_export(text: str) -> List[Dict[str, Any]]:
    """The records of an export, the manifest last (one JSON object a line)."""
    import json

    return [json.loads(line) for line in text.splitlines() if line.strip()]


def erasure_timeout(timeout: float) -> errors.APITimeoutError:
    return errors.APITimeoutError(
        f"erasure still in progress after {timeout:g} s (it goes on on the server)"
    )


def merge_users(into: Dict[str, m.UserEntry], page: Sequence[m.UserEntry]) -> None:
    """Folds one ``GET /v1/users`` page into ``into`` (by user id)."""
    for u in page:
        seen = into.get(u.user_id)
        if seen is None:
            into[u.user_id] = u.model_copy()
        else:
            seen.memories_seen += u.memories_seen
            seen.has_key = seen.has_key or u.has_key


def users(*, cursor: Optional[str] = None) -> Call[m.UsersResponse]:
    """The users the key may see (a user key: itself), from one bounded scan
    of the tenant's memories; ``next_cursor`` continues it (or use
    ``all_users``)."""
    return Call("GET", "/v1/users", _model(m.UsersResponse), params=_none_unset(cursor=cursor))


def whoami() -> Call[m.WhoAmI]:
    """The presented key: its id, tenant, role and bound user."""
    return Call("GET", "/v1/whoami", _model(m.WhoAmI))


def lineage(memory_id: Id) -> Call[List[m.Memory]]:
    """A memory's supersede chain, oldest first (what the key may read)."""
    return Call(
        "GET",
        f"/v1/memories/{_seg(memory_id)}/lineage",
        lambda j: m.LineageResponse.model_validate(j).memories,
    )


def policy() -> Call[m.PolicyResponse]:
    """The memory policy in force, as JSON and as TOML."""
    return Call("GET", "/v1/policy", _model(m.PolicyResponse))


def evals() -> Call[m.EvalsResponse]:
    """Past evaluation reports, newest first, and the runnable sets (admin key)."""
    return Call("GET", "/v1/evals", _model(m.EvalsResponse))


def keys() -> Call[List[m.KeyView]]:
    """The tenant's API keys, revoked ones included, oldest first (admin key)."""
    return Call("GET", "/v1/keys", lambda j: m.KeysResponse.model_validate(j).keys)


def create_key(role: str, *, user_id: Optional[str] = None) -> Call[m.CreatedKey]:
    """Creates a key in the admin's tenant: ``role`` ``admin``, ``agent`` or
    ``user`` (``user`` needs ``user_id``). The secret is in this answer only."""
    # Sent as given, not validated here: the server names a wrong role.
    body: Dict[str, Any] = {"role": role, **_none_unset(user_id=user_id)}
    return Call("POST", "/v1/keys", _model(m.CreatedKey), json=body)


def revoke_key(key_id: str) -> Call[m.KeyView]:
    """Revokes a key of the admin's tenant; it stops authenticating at once."""
    return Call("DELETE", f"/v1/keys/{_seg(key_id)}", _model(m.KeyView))


def jobs() -> Call[List[m.JobView]]:
    """The lifecycle jobs and their last runs (admin key)."""
    return Call("GET", "/v1/jobs", lambda j: m.JobsResponse.model_validate(j).jobs)


def dry_run(job: str) -> Call[m.DryRunResponse]:
    """What ``ttl-sweep`` or ``weekly-cleanup`` would do now; nothing is
    written (admin key)."""
    return Call("POST", f"/v1/jobs/{_seg(job)}/dry-run", _model(m.DryRunResponse))


def index() -> Call[m.IndexHealth]:
    """Index sizes and lag against the store (admin key)."""
    return Call("GET", "/v1/index", _model(m.IndexHealth))


def health() -> Call[m.Health]:
    """Liveness."""
    return Call("GET", "/healthz", _model(m.Health))


def ready() -> Call[m.Health]:
    """Readiness; ``status == "not_ready"`` (a 503, not an exception) names
    what is not ready in ``checks``."""
    return Call("GET", "/readyz", _model(m.Health), also_ok=frozenset({503}))


def openapi() -> Call[Dict[str, Any]]:
    """The server's OpenAPI 3.1 document."""
    return Call("GET", "/openapi.json", dict)


def metrics() -> Call[str]:
    """The Prometheus exposition (admin key)."""
    return Call("GET", "/metrics", str, raw=True)


#: Every route the clients call with its request and response models, by the
#: path template of the OpenAPI document (the schema test checks each); a
#: route with several success answers names each, in status order, and a
#: body that is not JSON is named by its content type.
ROUTES: List[Tuple[str, str, Any, Any]] = [
    ("POST", "/v1/memories", m.AddRequest, m.AddResponse),
    ("GET", "/v1/memories", None, m.ListResponse),
    ("GET", "/v1/memories/{id}", None, m.Memory),
    ("PATCH", "/v1/memories/{id}", m.PatchRequest, m.Memory),
    ("DELETE", "/v1/memories/{id}", None, m.DeleteResponse),
    ("GET", "/v1/memories/{id}/history", None, m.HistoryResponse),
    ("POST", "/v1/memories/{id}/confirm", None, m.Memory),
    ("POST", "/v1/memories/{id}/reject", None, m.Memory),
    ("POST", "/v1/memories/{id}/restore", None, m.Memory),
    ("POST", "/v1/memories/{id}/supersede", m.SupersedeRequest, m.SupersedeResponse),
    ("POST", "/v1/search", m.SearchBody, m.SearchResponse),
    ("POST", "/v1/context", m.ContextRequest, m.ContextBlock),
    ("POST", "/v1/threads", m.CreateThread, m.Thread),
    ("GET", "/v1/threads/{id}", None, m.ThreadView),
    ("POST", "/v1/threads/{id}/messages", m.AppendMessage, m.Message),
    ("GET", "/v1/threads/{id}/payloads/{payload_id}", None, None),
    ("POST", "/v1/threads/{id}/prompt", m.PromptRequest, m.PromptResponse),
    ("POST", "/v1/threads/{id}/turns", m.TurnRequest, m.TurnReply),
    ("POST", "/v1/reference/documents", m.DocumentBody, m.DocumentResponse),
    ("DELETE", "/v1/reference/documents/{id}", None, m.DocumentDeleted),
    ("DELETE", "/v1/users/{user_id}", None, (m.ErasureReceipt, m.ErasureAccepted)),
    ("GET", "/v1/users/{user_id}/erasure", None, m.ErasureVerification),
    ("GET", "/v1/users/{user_id}/export", None, None),
    ("POST", "/v1/users/{user_id}/import", "application/x-ndjson", m.ImportReport),
    ("GET", "/v1/users", None, m.UsersResponse),
    ("GET", "/v1/whoami", None, m.WhoAmI),
    ("GET", "/v1/memories/{id}/lineage", None, m.LineageResponse),
    ("GET", "/v1/policy", None, m.PolicyResponse),
    ("GET", "/v1/evals", None, m.EvalsResponse),
    ("GET", "/v1/keys", None, m.KeysResponse),
    ("POST", "/v1/keys", m.CreateKey, m.CreatedKey),
    ("DELETE", "/v1/keys/{id}", None, m.KeyView),
    ("GET", "/v1/jobs", None, m.JobsResponse),
    ("POST", "/v1/jobs/{name}/dry-run", None, m.DryRunResponse),
    ("GET", "/v1/index", None, m.IndexHealth),
    ("GET", "/healthz", None, m.Health),
    ("GET", "/readyz", None, m.Health),
    ("GET", "/metrics", None, None),
    ("GET", "/openapi.json", None, None),
]


@dataclass
class Options:
    """Connection settings shared by both clients."""

    base_url: str = DEFAULT_BASE_URL
    api_key: Optional[str] = None
    timeout: Union[float, httpx.Timeout] = DEFAULT_TIMEOUT_SECS
    retry: Retry = field(default_factory=Retry)
    headers: Dict[str, str] = field(default_factory=dict)

    def client_kwargs(self) -> Dict[str, Any]:
        headers = {"user-agent": "mnemo-client-python", **self.headers}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return {
            "base_url": self.base_url.rstrip("/"),
            "timeout": self.timeout,
            "headers": headers,
        }
