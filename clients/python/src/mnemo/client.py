"""The sync :class:`Client` and the async :class:`AsyncClient`.

Every API call is written once, in ``_core``, as a function that builds a
:class:`~mnemo._core.Call`; the two clients expose those functions as
methods (with their signatures and documentation, ``_sync`` / ``_async``
below) and differ only in how they send a ``Call``: the same
:class:`~mnemo._core.Retry` policy and the same exceptions
(``mnemo.errors``) either way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import os
import time
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    TypeVar,
    Union,
)

import httpx
from typing_extensions import Concatenate, ParamSpec

from . import _core as c
from . import models as m
from ._core import Id, Retry

T = TypeVar("T")
P = ParamSpec("P")


def _adopt(method: Any, build: Callable[..., Any], *, bound: bool, awaited: bool) -> None:
    """Gives ``method`` the name, documentation and signature of ``build``:
    ``self`` first (in place of the thread id when ``bound``), returning what
    the ``Call`` yields (awaited, for the async clients)."""
    sig = inspect.signature(build)
    params = list(sig.parameters.values())[1 if bound else 0 :]
    returns = sig.return_annotation
    if isinstance(returns, str) and returns.startswith("Call[") and returns.endswith("]"):
        returns = returns[len("Call[") : -1]
        if awaited:
            returns = f"Awaitable[{returns}]"
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = sig.replace(parameters=[self_param, *params], return_annotation=returns)
    method.__name__ = build.__name__
    method.__qualname__ = build.__qualname__
    method.__doc__ = build.__doc__


def _sync(build: Callable[P, c.Call[T]]) -> Callable[Concatenate["Client", P], T]:
    """``build`` as a method of :class:`Client` that sends what it builds."""

    def method(self: "Client", /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.send(build(*args, **kwargs))

    _adopt(method, build, bound=False, awaited=False)
    return method


def _async(build: Callable[P, c.Call[T]]) -> Callable[Concatenate["AsyncClient", P], Awaitable[T]]:
    """``build`` as a coroutine method of :class:`AsyncClient`."""

    async def method(self: "AsyncClient", /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.send(build(*args, **kwargs))

    _adopt(method, build, bound=False, awaited=True)
    return method


def _sync_thread(
    build: Callable[Concatenate[Id, P], c.Call[T]],
) -> Callable[Concatenate["ThreadSession", P], T]:
    """``build`` as a method of :class:`ThreadSession` (its id goes first)."""

    def method(self: "ThreadSession", /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.client.send(build(self.id, *args, **kwargs))

    _adopt(method, build, bound=True, awaited=False)
    return method


def _async_thread(
    build: Callable[Concatenate[Id, P], c.Call[T]],
) -> Callable[Concatenate["AsyncThreadSession", P], Awaitable[T]]:
    async def method(self: "AsyncThreadSession", /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.client.send(build(self.id, *args, **kwargs))

    _adopt(method, build, bound=True, awaited=True)
    return method


def _options(
    base_url: Optional[str],
    api_key: Optional[str],
    timeout: Union[float, httpx.Timeout],
    max_retries: Optional[int],
    retry: Optional[Retry],
    headers: Optional[Mapping[str, str]],
) -> c.Options:
    policy = retry or Retry()
    if max_retries is not None:
        policy = dataclasses.replace(policy, max_retries=max_retries)
    return c.Options(
        base_url=base_url or os.environ.get("MNEMO_BASE_URL") or c.DEFAULT_BASE_URL,
        api_key=api_key if api_key is not None else os.environ.get("MNEMO_API_KEY"),
        timeout=timeout,
        retry=policy,
        headers=dict(headers or {}),
    )


def _wait_for(call: c.Call[Any], policy: Retry, attempt: int, outcome: Any) -> Optional[float]:
    """How long to wait before retrying ``outcome`` (a response or a transport
    error), or ``None`` when it is final."""
    if isinstance(outcome, httpx.TransportError):
        return policy.delay(attempt, call.method, exc=outcome)
    if outcome.is_success or outcome.status_code in call.also_ok:
        return None
    return policy.delay(
        attempt,
        call.method,
        status=outcome.status_code,
        retry_after=c.retry_after_secs(outcome.headers.get("retry-after")),
    )


def _finish(call: c.Call[T], outcome: Any) -> T:
    if isinstance(outcome, httpx.TransportError):
        raise c.transport_error(outcome) from outcome
    return c.result(call, outcome)


class Client:
    """A synchronous Mnemo client.

    ``base_url`` defaults to ``$MNEMO_BASE_URL`` or ``http://127.0.0.1:8420``,
    ``api_key`` to ``$MNEMO_API_KEY``. ``timeout`` is per attempt, in seconds
    (or an ``httpx.Timeout``). ``max_retries`` / ``retry`` set the retry
    policy (:class:`~mnemo.Retry`). Use as a context manager, or call
    :meth:`close`.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: Union[float, httpx.Timeout] = c.DEFAULT_TIMEOUT_SECS,
        max_retries: Optional[int] = None,
        retry: Optional[Retry] = None,
        headers: Optional[Mapping[str, str]] = None,
        transport: Optional[httpx.BaseTransport] = None,
    ) -> None:
        self.options = _options(base_url, api_key, timeout, max_retries, retry, headers)
        self._http = httpx.Client(transport=transport, **self.options.client_kwargs())
        self._sleep: Callable[[float], Any] = time.sleep

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(self, call: c.Call[T]) -> T:
        """Sends one call, retrying as the policy says; the parsed answer."""
        attempt = 0
        while True:
            try:
                outcome: Any = self._http.request(
                    call.method,
                    call.path,
                    json=call.json,
                    params=call.params,
                    content=call.content,
                    headers=call.headers(),
                )
            except httpx.TransportError as e:
                outcome = e
            wait = _wait_for(call, self.options.retry, attempt, outcome)
            if wait is None:
                return _finish(call, outcome)
            self._sleep(wait)
            attempt += 1

    add = _sync(c.add)
    add_many = _sync(c.add_many)
    get = _sync(c.get)
    update = _sync(c.update)
    delete = _sync(c.delete)
    history = _sync(c.history)
    list = _sync(c.list_page)
    confirm = _sync(c.confirm)
    reject = _sync(c.reject)
    restore = _sync(c.restore)
    supersede = _sync(c.supersede)
    search = _sync(c.search)
    context = _sync(c.context)
    add_document = _sync(c.add_document)
    delete_document = _sync(c.delete_document)
    start_erasure = _sync(c.start_erasure)
    verify_erasure = _sync(c.verify_erasure)
    erasure_status = _sync(c.erasure_status)
    export_user = _sync(c.export_user)
    import_user = _sync(c.import_user)
    users = _sync(c.users)
    whoami = _sync(c.whoami)
    lineage = _sync(c.lineage)
    policy = _sync(c.policy)
    evals = _sync(c.evals)
    keys = _sync(c.keys)
    create_key = _sync(c.create_key)
    revoke_key = _sync(c.revoke_key)
    jobs = _sync(c.jobs)
    dry_run = _sync(c.dry_run)
    index = _sync(c.index)
    health = _sync(c.health)
    ready = _sync(c.ready)
    metrics = _sync(c.metrics)
    openapi = _sync(c.openapi)

    def forget_user(
        self,
        user_id: str,
        *,
        wait: bool = True,
        timeout: float = 300.0,
        poll_interval: float = 0.5,
    ) -> Union[m.ErasureReceipt, m.ErasureAccepted, m.ErasureVerification]:
        """Erases every trace of a user from every store (irreversible).

        Finished within the server's wait: the receipt (what was removed).
        Still running (202): with ``wait=False`` its in-progress status
        (:class:`~mnemo.models.ErasureAccepted`); with ``wait=True`` the
        status URL is polled every ``poll_interval`` seconds until the
        erasure is no longer ``in_progress``, and the verification is
        returned (``status == "erased"``, every count zero).
        ``APITimeoutError`` after ``timeout`` seconds of waiting; the
        erasure goes on on the server either way."""
        answer = self.send(c.start_erasure(user_id))
        if isinstance(answer, m.ErasureReceipt) or not wait:
            return answer
        deadline = time.monotonic() + timeout
        while True:
            check = self.send(c.erasure_status(answer.status_url))
            if check.status != "in_progress":
                return check
            if time.monotonic() >= deadline:
                raise c.erasure_timeout(timeout)
            self._sleep(poll_interval)

    def all_users(self) -> List[m.UserEntry]:
        """Every user the key may see, following ``next_cursor`` to the end of
        the tenant's memories; a user met in several scans is one entry
        (``memories_seen`` summed)."""
        merged: Dict[str, m.UserEntry] = {}
        cursor: Optional[str] = None
        while True:
            page = self.users(cursor=cursor)
            c.merge_users(merged, page.users)
            if page.next_cursor is None:
                return [merged[k] for k in sorted(merged)]
            cursor = page.next_cursor

    def iter_memories(self, *, page_size: int = 100, **filters: Any) -> Iterator[m.Memory]:
        """Every memory matching ``filters`` (those of :meth:`list`), oldest
        first, fetching ``page_size`` at a time by following ``next_cursor``."""
        cursor: Optional[str] = filters.pop("cursor", None)
        while True:
            page = self.list(cursor=cursor, limit=page_size, **filters)
            yield from page.memories
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def pending(self, user_id: Optional[str] = None, *, page_size: int = 100) -> Iterator[m.Memory]:
        """The review queue: candidates awaiting :meth:`confirm` or :meth:`reject`."""
        return self.iter_memories(user_id=user_id, status="pending", page_size=page_size)

    def create_thread(
        self, *, user_id: Optional[str] = None, goal: Optional[str] = None
    ) -> "ThreadSession":
        """Starts a thread (``goal`` is pinned: always in the prompt)."""
        created = self.send(c.create_thread(user_id=user_id, goal=goal))
        return ThreadSession(self, created.id, created)

    def thread(self, thread_id: Id) -> "ThreadSession":
        """A handle on an existing thread (no request is made)."""
        return ThreadSession(self, thread_id)


class ThreadSession:
    """One thread of the agent loop: ``append`` messages, ``prompt`` (assemble
    the prompt for your own model) or ``turn`` (the server's model answers)."""

    def __init__(self, client: Client, thread_id: Id, info: Optional[m.Thread] = None) -> None:
        self.client = client
        self.id = thread_id
        #: The thread as created (``None`` for a handle from :meth:`Client.thread`).
        self.info = info

    get = _sync_thread(c.get_thread)
    append = _sync_thread(c.append)
    payload = _sync_thread(c.payload)
    prompt = _sync_thread(c.prompt)
    turn = _sync_thread(c.turn)

    def history_pages(
        self, *, page_size: int = 200, include_compacted: bool = False
    ) -> Iterator[m.ThreadView]:
        """The thread's history page by page, newest page first (each page
        oldest first), following ``next_before``; ``include_compacted=True``
        goes back through the messages folded into the summary too."""
        before: Optional[int] = None
        while True:
            page = self.get(limit=page_size, before=before, include_compacted=include_compacted)
            yield page
            if page.next_before is None:
                return
            before = page.next_before

    def messages(self, *, include_compacted: bool = True, page_size: int = 200) -> List[m.Message]:
        """Every message of the thread, oldest first (the whole history by default)."""
        pages = list(self.history_pages(page_size=page_size, include_compacted=include_compacted))
        return [msg for page in reversed(pages) for msg in page.messages]


class AsyncClient:
    """The asyncio twin of :class:`Client`: the same methods, awaited
    (``iter_memories`` and ``pending`` are async iterators)."""

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: Union[float, httpx.Timeout] = c.DEFAULT_TIMEOUT_SECS,
        max_retries: Optional[int] = None,
        retry: Optional[Retry] = None,
        headers: Optional[Mapping[str, str]] = None,
        transport: Optional[httpx.AsyncBaseTransport] = None,
    ) -> None:
        self.options = _options(base_url, api_key, timeout, max_retries, retry, headers)
        self._http = httpx.AsyncClient(transport=transport, **self.options.client_kwargs())
        self._sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def send(self, call: c.Call[T]) -> T:
        """Sends one call, retrying as the policy says; the parsed answer."""
        attempt = 0
        while True:
            try:
                outcome: Any = await self._http.request(
                    call.method,
                    call.path,
                    json=call.json,
                    params=call.params,
                    content=call.content,
                    headers=call.headers(),
                )
            except httpx.TransportError as e:
                outcome = e
            wait = _wait_for(call, self.options.retry, attempt, outcome)
            if wait is None:
                return _finish(call, outcome)
            await self._sleep(wait)
            attempt += 1

    add = _async(c.add)
    add_many = _async(c.add_many)
    get = _async(c.get)
    update = _async(c.update)
    delete = _async(c.delete)
    history = _async(c.history)
    list = _async(c.list_page)
    confirm = _async(c.confirm)
    reject = _async(c.reject)
    restore = _async(c.restore)
    supersede = _async(c.supersede)
    search = _async(c.search)
    context = _async(c.context)
    add_document = _async(c.add_document)
    delete_document = _async(c.delete_document)
    start_erasure = _async(c.start_erasure)
    verify_erasure = _async(c.verify_erasure)
    erasure_status = _async(c.erasure_status)
    export_user = _async(c.export_user)
    import_user = _async(c.import_user)
    users = _async(c.users)
    whoami = _async(c.whoami)
    lineage = _async(c.lineage)
    policy = _async(c.policy)
    evals = _async(c.evals)
    keys = _async(c.keys)
    create_key = _async(c.create_key)
    revoke_key = _async(c.revoke_key)
    jobs = _async(c.jobs)
    dry_run = _async(c.dry_run)
    index = _async(c.index)
    health = _async(c.health)
    ready = _async(c.ready)
    metrics = _async(c.metrics)
    openapi = _async(c.openapi)

    async def forget_user(
        self,
        user_id: str,
        *,
        wait: bool = True,
        timeout: float = 300.0,
        poll_interval: float = 0.5,
    ) -> Union[m.ErasureReceipt, m.ErasureAccepted, m.ErasureVerification]:
        """:meth:`Client.forget_user`, awaited."""
        answer = await self.send(c.start_erasure(user_id))
        if isinstance(answer, m.ErasureReceipt) or not wait:
            return answer
        deadline = time.monotonic() + timeout
        while True:
            check = await self.send(c.erasure_status(answer.status_url))
            if check.status != "in_progress":
                return check
            if time.monotonic() >= deadline:
                raise c.erasure_timeout(timeout)
            await self._sleep(poll_interval)

    async def all_users(self) -> List[m.UserEntry]:
        """:meth:`Client.all_users`, awaited."""
        merged: Dict[str, m.UserEntry] = {}
        cursor: Optional[str] = None
        while True:
            page = await self.users(cursor=cursor)
            c.merge_users(merged, page.users)
            if page.next_cursor is None:
                return [merged[k] for k in sorted(merged)]
            cursor = page.next_cursor

    async def iter_memories(self, *, page_size: int = 100, **filters: Any) -> AsyncIterator[m.Memory]:
        """Every matching memory, oldest first, page after page."""
        cursor: Optional[str] = filters.pop("cursor", None)
        while True:
            page = await self.list(cursor=cursor, limit=page_size, **filters)
            for memory in page.memories:
                yield memory
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def pending(
        self, user_id: Optional[str] = None, *, page_size: int = 100
    ) -> AsyncIterator[m.Memory]:
        """The review queue, as an async iterator."""
        return self.iter_memories(user_id=user_id, status="pending", page_size=page_size)

    async def create_thread(
        self, *, user_id: Optional[str] = None, goal: Optional[str] = None
    ) -> "AsyncThreadSession":
        created = await self.send(c.create_thread(user_id=user_id, goal=goal))
        return AsyncThreadSession(self, created.id, created)

    def thread(self, thread_id: Id) -> "AsyncThreadSession":
        return AsyncThreadSession(self, thread_id)


class AsyncThreadSession:
    """The asyncio twin of :class:`ThreadSession`."""

    def __init__(
        self, client: AsyncClient, thread_id: Id, info: Optional[m.Thread] = None
    ) -> None:
        self.client = client
        self.id = thread_id
        self.info = info

    get = _async_thread(c.get_thread)
    append = _async_thread(c.append)
    payload = _async_thread(c.payload)
    prompt = _async_thread(c.prompt)
    turn = _async_thread(c.turn)

    async def history_pages(
        self, *, page_size: int = 200, include_compacted: bool = False
    ) -> AsyncIterator[m.ThreadView]:
        """:meth:`ThreadSession.history_pages`, as an async iterator."""
        before: Optional[int] = None
        while True:
            page = await self.get(limit=page_size, before=before, include_compacted=include_compacted)
            yield page
            if page.next_before is None:
                return
            before = page.next_before

    async def messages(
        self, *, include_compacted: bool = True, page_size: int = 200
    ) -> List[m.Message]:
        """Every message of the thread, oldest first."""
        pages = [
            p
            async for p in self.history_pages(page_size=page_size, include_compacted=include_compacted)
        ]
        return [msg for page in reversed(pages) for msg in page.messages]
