"""The OpenAI Agents SDK over Mnemo (``pip install "mnemo-client[openai-agents]"``):
:class:`MnemoSession`, the SDK's ``Session`` protocol backed by a Mnemo
thread, and :func:`memory_tools`, ``remember`` / ``recall`` / ``forget``
function tools over the user's long-term memory.

``Runner.run(agent, "…", session=MnemoSession(...))`` keeps the
conversation in a Mnemo thread: Mnemo's working memory, compaction and
extraction (long-term memories drawn from the user's messages, when the
server has a model) run behind it.

How items are stored:

- A text message of the user or the assistant (a string content, or one
  ``input_text`` / ``output_text`` part) is a thread message with that
  role and text, read back in the SDK's simple input form
  ``{"role": ..., "content": text}`` (the item's ``id``, ``status`` and
  ``provider_data`` — the model's name and response id — are not kept).
- Every other item (function calls and their outputs, reasoning, system
  messages, images, ...) is a ``tool`` message named ``openai_agents_item``
  whose one-line summary enters Mnemo's history, and whose payload is the
  item as given, read back verbatim.
- ``pop_item`` and ``clear_session`` append a marker (a ``tool`` message
  named ``openai_agents_session``): the items it removes are no longer
  returned, but a Mnemo thread is append-only and audited, so their text
  stays on the server until the user is erased
  (:meth:`MnemoSession.forget_user`, Mnemo's forget-all).

The user is explicit: a session is created for ``user_id`` and an existing
thread is refused (:class:`SessionUserMismatch`) when it belongs to another
user.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, List, Optional, Tuple

from agents import FunctionTool, function_tool
from agents.memory import SessionSettings

from .. import models as m
from ..client import AsyncClient
from ..errors import InvalidArgumentError, NotFoundError

__all__ = ["MnemoSession", "SessionUserMismatch", "memory_tools"]

ITEM_TOOL = "openai_agents_item"
MARKER_TOOL = "openai_agents_session"
SUMMARY_CHARS = 200


class SessionUserMismatch(PermissionError):
    """The thread behind a session belongs to another user."""


def _text_message(item: Any) -> Optional[Tuple[str, str]]:
    """``(role, text)`` when the item is a plain text message of the user or
    the assistant, else ``None``."""
    if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
        return None
    if not set(item) <= {"role", "content", "type", "id", "status", "provider_data"}:
        return None
    if item.get("type", "message") != "message":
        return None
    content = item.get("content")
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        part = content[0]
        if part.get("type") not in ("input_text", "output_text"):
            return None
        if not set(part) <= {"type", "text", "annotations", "logprobs"}:
            return None
        if part.get("annotations") or part.get("logprobs"):
            return None
        content = part.get("text")
    if not isinstance(content, str) or not content.strip():
        return None
    return str(item["role"]), content


def _summary(item: Any) -> str:
    kind = item.get("type", "message") if isinstance(item, dict) else type(item).__name__
    detail = ""
    if isinstance(item, dict):
        if kind == "function_call":
            detail = f"{item.get('name')}({item.get('arguments', '')})"
        elif kind == "function_call_output":
            out = item.get("output")
            detail = out if isinstance(out, str) else json.dumps(out)
        elif "role" in item:
            detail = str(item["role"])
    line = f"{kind} {detail}".strip().replace("\n", " ")
    return line[:SUMMARY_CHARS]


class MnemoSession:
    """The Agents SDK's ``Session`` over the Mnemo thread ``session_id``,
    which belongs to ``user_id`` (checked on first use).

    Start a new conversation with :meth:`create`; continue one with
    ``MnemoSession(thread_id, client=..., user_id=...)``.
    """

    def __init__(
        self,
        session_id: str,
        *,
        client: AsyncClient,
        user_id: str,
        session_settings: Optional[SessionSettings] = None,
    ) -> None:
        self.session_id = str(session_id)
        self.client = client
        self.user_id = user_id
        self.session_settings = session_settings
        self._checked = False
        self._lock = asyncio.Lock()

    @classmethod
    async def create(
        cls,
        *,
        client: AsyncClient,
        user_id: str,
        goal: Optional[str] = None,
        session_settings: Optional[SessionSettings] = None,
    ) -> "MnemoSession":
        """A new Mnemo thread for ``user_id`` (``goal`` is pinned in Mnemo's
        prompts), as a session."""
        thread = await client.create_thread(user_id=user_id, goal=goal)
        session = cls(
            str(thread.id), client=client, user_id=user_id, session_settings=session_settings
        )
        session._checked = True
        return session

    # ----- the Session protocol -----------------------------------------------

    async def get_items(self, limit: Optional[int] = None) -> List[Any]:
        """The conversation, oldest first; the latest ``limit`` items when given
        (else the session settings' limit, else all)."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        visible = await self._visible()
        if limit is not None:
            visible = visible[-limit:] if limit > 0 else []
        return list(await asyncio.gather(*(self._item(msg) for msg in visible)))

    async def add_items(self, items: List[Any]) -> None:
        async with self._lock:
            await self._check()
            thread = self.client.thread(self.session_id)
            for item in items:
                text = _text_message(item)
                if text is not None:
                    await thread.append(text[0], text[1])  # type: ignore[arg-type]
                else:
                    await thread.append(
                        "tool",
                        tool={
                            "name": ITEM_TOOL,
                            "status": "ok",
                            "summary": _summary(item),
                            "payload": item,
                        },
                    )

    async def pop_item(self) -> Optional[Any]:
        async with self._lock:
            visible = await self._visible()
            if not visible:
                return None
            last = visible[-1]
            item = await self._item(last)
            await self._mark("pop", last.seq, "session item removed")
            return item

    async def clear_session(self) -> None:
        async with self._lock:
            visible = await self._visible()
            if visible:
                await self._mark("clear", visible[-1].seq, "session cleared")

    # ----- Mnemo --------------------------------------------------------------

    async def forget_user(self) -> Any:
        """Mnemo's forget-all for this session's user: every thread (this one
        included), message, memory and vector, erased (irreversible)."""
        return await self.client.forget_user(self.user_id)

    async def _check(self) -> None:
        if self._checked:
            return
        view = await self.client.thread(self.session_id).get(limit=1)
        if view.user_id != self.user_id:
            raise SessionUserMismatch(
                f"thread {self.session_id} belongs to another user than {self.user_id!r}"
            )
        self._checked = True

    async def _visible(self) -> List[m.Message]:
        await self._check()
        messages = await self.client.thread(self.session_id).messages(include_compacted=True)
        visible: List[m.Message] = []
        for msg in messages:
            tool = msg.tool
            if tool is not None and tool.name == MARKER_TOOL:
                mark = tool.key_fields.get("seq")
                if tool.status == "pop":
                    visible = [v for v in visible if v.seq != mark]
                elif tool.status == "clear" and isinstance(mark, int):
                    visible = [v for v in visible if v.seq > mark]
                continue
            if msg.role == "tool" and (tool is None or tool.name != ITEM_TOOL):
                continue  # a tool line written by something else than this adapter
            visible.append(msg)
        return visible

    async def _item(self, msg: m.Message) -> Any:
        if msg.tool is None:
            return {"role": msg.role, "content": msg.content}
        assert msg.tool.payload_id is not None
        return await self.client.thread(self.session_id).payload(msg.tool.payload_id)

    async def _mark(self, what: str, seq: int, summary: str) -> None:
        await self.client.thread(self.session_id).append(
            "tool",
            tool={"name": MARKER_TOOL, "status": what, "summary": summary, "key_fields": {"seq": seq}},
        )


def memory_tools(
    client: AsyncClient, *, user_id: str, top_k: int = 5
) -> List[FunctionTool]:
    """``remember``, ``recall`` and ``forget`` as Agents SDK function tools
    over ``user_id``'s long-term memory (the model never chooses the user).
    ``forget`` deletes one memory (soft: restorable, audited); erasing the
    whole user is :meth:`mnemo.AsyncClient.forget_user`, left to the
    application, not to the model."""

    async def remember(text: str) -> str:
        """Store a lasting fact or preference about the user.

        Args:
            text: One self-contained statement, e.g. "The user prefers green tea".
        """
        added = await client.add(text, user_id=user_id, refresh=True)
        return f"remembered (id {added.ids[0]})"

    async def recall(query: str) -> str:
        """Search what is remembered about the user.

        Args:
            query: What to look for, in natural language.
        """
        hits = (await client.search(query, user_id=user_id, top_k=top_k)).hits
        if not hits:
            return "nothing remembered about that"
        return "\n".join(f"[{h.memory.id}] {h.memory.text}" for h in hits)

    async def forget(memory_id: str) -> str:
        """Forget one remembered memory of the user.

        Args:
            memory_id: The id shown in brackets by recall.
        """
        try:
            memory = await client.get(memory_id)
        except (NotFoundError, InvalidArgumentError):
            return "no such memory"
        if memory.user_id != user_id:
            return "no such memory"
        await client.delete(memory_id)
        return f"forgotten {memory_id}"

    return [function_tool(f) for f in (remember, recall, forget)]
