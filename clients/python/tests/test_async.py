"""The async client against the real server: the same calls, awaited."""

from __future__ import annotations

import uuid

import pytest

import mnemo
from conftest import TURN_REPLY


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_async_agent_loop(server, fake_model):
    user = f"async-{uuid.uuid4().hex[:8]}"
    async with mnemo.AsyncClient(server.base_url, api_key=server.agent, timeout=30) as c:
        added = await c.add_many(
            [{"user_id": user, "text": f"Async fact {i}: the user likes kite {i}"} for i in range(5)],
            refresh=True,
        )
        unsure = await c.add("The user may own a boat", user_id=user, confidence=0.1, refresh=True)
        seen = [m.id async for m in c.iter_memories(user_id=user, status="active", page_size=2)]
        assert sorted(seen) == sorted(added.ids) and seen == sorted(seen), "each once, in id order"
        assert [m.id async for m in c.pending(user)] == unsure.ids
        assert (await c.confirm(unsure.ids[0])).status == "active"

        found = await c.search("kite", user_id=user, explain=True, top_k=3)
        assert len(found.hits) == 3 and all(h.breakdown for h in found.hits)

        thread = await c.create_thread(user_id=user, goal="Fly a kite")
        await thread.append("user", "The wind is strong today.")
        prompt = await thread.prompt("Which kite?", model_context_tokens=4096)
        assert any("Fly a kite" in m.content for m in prompt.messages)
        turn = await thread.turn("Pick one.")
        assert turn.reply.content == TURN_REPLY
        assert [m.content for m in (await thread.get()).messages][-1] == TURN_REPLY

        receipt = await c.forget_user(user)
        assert receipt.erased.memories == 6 and receipt.erased.threads == 1
        assert (await c.verify_erasure(user)).erased
        with pytest.raises(mnemo.NotFoundError):
            await c.get(added.ids[0])
