"""The client against a real `mnemo serve`: the scenarios an agent runs."""

from __future__ import annotations

import uuid

import httpx
import pytest

import mnemo
from conftest import HEDGED_MEMORY, TURN_REPLY, wait_until


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def test_add_then_search_with_explain(client: mnemo.Client):
    user = unique("alice")
    added = client.add(
        "Alice prefers green tea over coffee", user_id=user, kind="preference", refresh=True
    )
    client.add("Alice's flight lands at nine", user_id=user, kind="event", refresh=True)
    assert len(added.ids) == 1 and added.memories[0].status == "active"

    result = client.search("what does alice like to drink?", user_id=user, explain=True)
    assert result.hits, "the preference is found"
    top = result.hits[0]
    assert top.memory.id == added.ids[0]
    assert top.memory.user_id == user and top.memory.kind == "preference"
    assert top.breakdown is not None
    assert top.breakdown.final_score == pytest.approx(top.score, rel=1e-4)
    assert top.breakdown.bm25_rank is not None or top.breakdown.vector_rank is not None
    assert result.took_ms >= result.embed_ms > 0

    plain = client.search("what does alice like to drink?", user_id=user)
    assert all(h.breakdown is None for h in plain.hits)
    assert client.get(added.ids[0]).text == "Alice prefers green tea over coffee"


def test_context_block_fits_its_budget(client: mnemo.Client):
    user = unique("bea")
    ids = client.add("Bea is allergic to peanuts", user_id=user, kind="fact", refresh=True).ids
    block = client.context(user_id=user, query="what should I cook for Bea?", model_context_tokens=8000)
    assert ids[0] in block.memory_ids
    assert "peanuts" in block.text
    assert 0 < block.tokens <= block.budget_tokens == 800
    from_messages = client.context(
        user_id=user,
        messages=[{"role": "user", "content": "Any food allergies I should know of?"}],
        model_context_tokens=8000,
        budget_fraction=0.05,
    )
    assert from_messages.budget_tokens == 400 and ids[0] in from_messages.memory_ids


def test_review_queue_confirm_and_reject(client: mnemo.Client):
    user = unique("dan")
    unsure = client.add("Dan may be vegetarian", user_id=user, confidence=0.3, refresh=True)
    other = client.add("Dan might move to Oslo", user_id=user, confidence=0.2, refresh=True)
    assert unsure.memories[0].status == "pending"
    queue = {m.id for m in client.pending(user)}
    assert queue == {unsure.ids[0], other.ids[0]}

    assert not client.search("vegetarian", user_id=user).hits
    assert client.search("vegetarian", user_id=user, include_pending=True).hits

    confirmed = client.confirm(unsure.ids[0])
    assert confirmed.status == "active"
    assert client.search("vegetarian", user_id=user).hits[0].memory.id == unsure.ids[0]
    rejected = client.reject(other.ids[0])
    assert rejected.status == "deleted"
    assert list(client.pending(user)) == []

    with pytest.raises(mnemo.ConflictError) as e:
        client.confirm(unsure.ids[0])
    assert e.value.status == 409 and e.value.code == "conflict"
    actions = [ev.action for ev in client.history(other.ids[0])]
    assert actions[0] == "create" and "reject" in actions
    assert client.restore(other.ids[0]).status == "active"


def test_supersede_links_old_and_new(client: mnemo.Client):
    user = unique("eve")
    old = client.add("Eve lives in Paris", user_id=user, kind="fact", refresh=True).ids[0]
    done = client.supersede(old, "Eve lives in Lyon")
    assert done.superseded == old
    assert done.memory.supersedes == old and done.memory.text == "Eve lives in Lyon"
    before = client.get(old)
    assert before.status == "superseded" and before.superseded_by == done.memory.id
    assert "supersede" in [ev.action for ev in client.history(old)]
    hits = client.search("where does Eve live?", user_id=user).hits
    assert [h.memory.id for h in hits] == [done.memory.id]


def test_update_and_delete(client: mnemo.Client):
    user = unique("fay")
    mid = client.add("Fay likes jazz", user_id=user, expires_at="2999-01-01T00:00:00Z").ids[0]
    changed = client.update(mid, importance=0.9, metadata={"source": "chat"})
    assert changed.importance == pytest.approx(0.9) and changed.metadata == {"source": "chat"}
    assert changed.expires_at is not None and changed.text == "Fay likes jazz"
    cleared = client.update(mid, expires_at=None)
    assert cleared.expires_at is None and cleared.version > changed.version
    assert client.delete(mid).status == "deleted"
    with pytest.raises(mnemo.InvalidArgumentError) as e:
        client.update(mid)
    assert e.value.field == "body"


def test_pagination_follows_the_cursor(client: mnemo.Client):
    user = unique("gus")
    texts = [f"Gus note number {i}" for i in range(7)]
    added = client.add_many([{"user_id": user, "text": t} for t in texts])
    first = client.list(user_id=user, limit=3)
    assert len(first.memories) == 3 and first.next_cursor is not None
    seen = [m.id for m in client.iter_memories(user_id=user, page_size=3)]
    # Oldest first by id (UUIDv7): ids made in the same millisecond may tie.
    assert sorted(seen) == sorted(added.ids) and seen == sorted(seen), "every memory once"
    last = client.list(user_id=user, limit=3, cursor=str(seen[5]))
    assert [m.id for m in last.memories] == [seen[6]] and last.next_cursor is None


def test_thread_prompt_tool_payload_and_turn(client: mnemo.Client, fake_model):
    user = unique("hana")
    tea = client.add("Hana prefers green tea", user_id=user, kind="preference", refresh=True).ids[0]
    thread = client.create_thread(user_id=user, goal="Plan a trip to Kyoto in April")
    assert thread.info is not None and thread.info.goal == "Plan a trip to Kyoto in April"

    thread.append("user", "We land on the 3rd.")
    tool = thread.append(
        "tool",
        tool={
            "name": "hotel_search",
            "status": "ok",
            "summary": "3 ryokans found",
            "key_fields": {"cheapest": "Sawaya"},
            "payload": {"results": ["Sawaya", "Hiiragiya", "Tawaraya"]},
        },
    )
    assert tool.tool is not None and tool.tool.payload_id is not None
    assert thread.payload(tool.tool.payload_id) == {"results": ["Sawaya", "Hiiragiya", "Tawaraya"]}

    # A question that names the memory's topic: "drink" alone sits at e5's
    # unrelated level to "green tea" (docs/decisions/0001-default-model.md);
    # retrieval quality is measured by `mnemo eval`, not here.
    prompt = thread.prompt("Which tea should I drink in Kyoto?", model_context_tokens=8192)
    text = "\n".join(m.content for m in prompt.messages)
    assert "Plan a trip to Kyoto in April" in text and "green tea" in text
    assert "cheapest=Sawaya" in text, "the tool result enters as its compact line"
    assert tea in prompt.memory_ids
    assert prompt.tokens.total > 0 and prompt.tokens.memories <= prompt.tokens.budget_memories
    assert prompt.messages[-1].role == "user"

    before = len(fake_model.turn_bodies())
    ask = "Book the cheapest one, with green tea at breakfast."
    reply = thread.turn(ask, max_tokens=64)
    assert reply.reply.role == "assistant" and reply.reply.content == TURN_REPLY
    assert reply.user_message.content == ask and reply.model == "fake-model"
    assert tea in reply.memory_ids
    sent = fake_model.turn_bodies()[before:]
    assert len(sent) == 1, "one model call per turn"
    upstream_text = "\n".join(m["content"] for m in sent[0]["messages"])
    assert "Plan a trip to Kyoto in April" in upstream_text, "the pinned goal went to the model"
    assert "Hana prefers green tea" in upstream_text, "so did the retrieved memory"
    assert "cheapest=Sawaya" in upstream_text and sent[0]["messages"][-1]["content"] == ask
    assert sent[0]["max_tokens"] == 64

    view = thread.get()
    contents = [m.content for m in view.messages]
    assert contents[-2:] == [ask, TURN_REPLY]
    assert view.goal == "Plan a trip to Kyoto in April" and view.user_id == user
    same = client.thread(thread.id).get()
    assert same.id == view.id


def test_extracted_candidate_reaches_the_review_queue(client: mnemo.Client):
    user = unique("ivy")
    thread = client.create_thread(user_id=user)
    thread.append("user", "Hmm, maybe I like oolong tea.")
    pending = wait_until(
        lambda: [m for m in client.pending(user) if m.text == HEDGED_MEMORY],
        what="the extracted candidate",
    )
    assert pending[0].source.thread_id == str(thread.id)
    assert client.confirm(pending[0].id).status == "active"


def test_forget_all_with_receipt(client: mnemo.Client):
    user = unique("jon")
    client.add_many([{"user_id": user, "text": f"Jon fact {i}"} for i in range(3)], refresh=True)
    thread = client.create_thread(user_id=user, goal="Jon's plans")
    thread.append("user", "Remember that I take the early train.")
    receipt = client.forget_user(user)
    assert receipt.user_id == user
    assert receipt.erased.memories >= 3 and receipt.erased.threads == 1
    assert receipt.erased.messages >= 1 and receipt.erased.vectors >= 3
    check = client.verify_erasure(user)
    assert check.erased and check.memories == 0 and check.threads == 0 and check.vectors == 0
    assert check.last_erasure_at is not None
    assert not client.search("Jon fact", user_id=user).hits
    with pytest.raises(mnemo.NotFoundError):
        thread.get()


def test_errors_map_to_exception_classes(server, client: mnemo.Client):
    with mnemo.Client(server.base_url, api_key=server.user_key) as carol:
        with pytest.raises(mnemo.PermissionDeniedError) as e:
            carol.search("anything", user_id="someone-else")
        assert e.value.status == 403 and e.value.code == "forbidden" and e.value.request_id
        own = carol.add("Carol keeps bees").ids[0]
        assert carol.get(own).user_id == "carol", "a user key fills in its own user"
    with pytest.raises(mnemo.NotFoundError) as nf:
        client.get(uuid.uuid4())
    assert nf.value.code == "not_found"
    with pytest.raises(mnemo.InvalidArgumentError) as bad:
        client.search("tea", user_id="x", top_k=0)
    assert bad.value.field == "top_k"
    with mnemo.Client(server.base_url, api_key="mnemo_not_a_key", max_retries=0) as nobody:
        assert nobody.health().status == "ok", "an open route"
        with pytest.raises(mnemo.AuthenticationError) as auth:
            nobody.search("tea", user_id="x")
    assert auth.value.status == 401
    with pytest.raises(mnemo.PermissionDeniedError):
        client.metrics()  # admin only


def test_health_and_readiness(client: mnemo.Client):
    assert client.health().status == "ok"
    ready = client.ready()
    assert ready.status == "ready" and ready.checks["store"] == "ok"


def test_reference_documents(admin: mnemo.Client, client: mnemo.Client):
    doc = admin.add_document(
        "Refunds take five business days.", document_id=unique("refunds"), title="Refunds"
    )
    assert doc.chunk_ids and doc.replaced_chunks == 0
    hits = client.search("how long do refunds take?", user_id=unique("kim"), tiers=["reference"])
    assert doc.chunk_ids[0] in [h.memory.id for h in hits.hits]
    with pytest.raises(mnemo.PermissionDeniedError):
        client.add_document("Agents may not write reference memory.")
    assert admin.delete_document(doc.document_id).deleted_chunks == len(doc.chunk_ids)


def test_raw_http_agrees_with_the_models(server, client: mnemo.Client):
    """The models parse exactly what the server sends (nothing dropped)."""
    user = unique("lea")
    mid = client.add("Lea collects stamps", user_id=user, refresh=True).ids[0]
    raw = httpx.get(
        f"{server.base_url}/v1/memories/{mid}",
        headers={"authorization": f"Bearer {server.agent}"},
    ).json()
    model = client.get(mid)
    assert set(raw) == set(type(model).model_fields)
    assert model.model_dump(mode="json")["text"] == raw["text"]
