"""What the LangGraph store and an Agents SDK session hold survives a
restart of `mnemo serve` on the same data directory."""

from __future__ import annotations

import asyncio
from typing import Any, List

import mnemo
from conftest import Restartable, unique
from mnemo.integrations.langgraph import MnemoStore
from mnemo.integrations.openai_agents import MnemoSession

ITEMS: List[Any] = [
    {"role": "user", "content": "Book the ryokan in Kyoto"},
    {"type": "function_call", "call_id": "c9", "name": "book", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c9", "output": "booked"},
    {"role": "assistant", "content": "Booked."},
]


def test_items_and_sessions_survive_a_restart(restartable: Restartable):
    user = unique("ida")
    ns = ("users", user, "memories")
    with restartable.run() as first:
        with mnemo.Client(first.base_url, api_key=first.agent) as c:
            MnemoStore(c).put(ns, "home", {"text": "Ida lives in Bergen"})

        async def start() -> str:
            async with mnemo.AsyncClient(first.base_url, api_key=first.agent) as ac:
                session = await MnemoSession.create(client=ac, user_id=user)
                await session.add_items(ITEMS)
                return session.session_id

        session_id = asyncio.run(start())

    with restartable.run() as second:
        with mnemo.Client(second.base_url, api_key=second.agent) as c:
            store = MnemoStore(c)
            item = store.get(ns, "home")
            assert item is not None and item.value == {"text": "Ida lives in Bergen"}
            assert [h.key for h in store.search(("users", user), query="where does Ida live?")] == [
                "home"
            ]

        async def resume() -> List[Any]:
            async with mnemo.AsyncClient(second.base_url, api_key=second.agent) as ac:
                return await MnemoSession(session_id, client=ac, user_id=user).get_items()

        assert asyncio.run(resume()) == ITEMS
