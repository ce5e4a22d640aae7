"""The inspector and operator routes, thread history paging, the 202
forget-all and the limits, against real `mnemo serve` processes."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta, timezone
from urllib.parse import quote

import pytest

import mnemo
from conftest import BURST, THREADS_PER_USER, Server, wait_until

import tomllib


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def test_whoami_names_each_keys_role(server: Server, client: mnemo.Client, admin: mnemo.Client):
    assert client.whoami().role == "agent" and client.whoami().user_id is None
    me = admin.whoami()
    assert me.role == "admin" and me.tenant_id == "default" and not me.insecure_dev
    with mnemo.Client(server.base_url, api_key=server.user_key) as carol:
        assert (carol.whoami().role, carol.whoami().user_id) == ("user", "carol")


def test_users_are_listed_and_merged_across_cursors(server: Server, client: mnemo.Client):
    a, b = unique("ann"), unique("bob")
    client.add_many([{"user_id": a, "text": f"Ann fact {i}"} for i in range(3)])
    client.add("Bob fact", user_id=b)
    page = client.users()
    assert page.scanned >= 4
    everyone = {u.user_id: u for u in client.all_users()}
    assert everyone[a].memories_seen == 3 and everyone[b].memories_seen == 1
    assert everyone["carol"].has_key, "a user with a key is listed without memories"
    assert [u.user_id for u in client.all_users()] == sorted(everyone)
    with mnemo.Client(server.base_url, api_key=server.user_key) as carol:
        assert [u.user_id for u in carol.all_users()] == ["carol"]
    with pytest.raises(mnemo.InvalidArgumentError):
        client.users(cursor="not-a-cursor")


def test_lineage_follows_the_supersede_chain(client: mnemo.Client):
    user = unique("lin")
    first = client.add("Lin lives in Lyon", user_id=user).ids[0]
    second = client.supersede(first, "Lin lives in Lille").memory.id
    third = client.supersede(second, "Lin lives in Lisbon").memory.id
    chain = client.lineage(second)
    assert [m.id for m in chain] == [first, second, third]
    assert [m.status for m in chain] == ["superseded", "superseded", "active"]
    with pytest.raises(mnemo.NotFoundError):
        client.lineage("00000000-0000-0000-0000-000000000000")


def test_policy_is_the_one_in_force(client: mnemo.Client):
    p = client.policy()
    assert p.policy["limits"]["max_threads_per_user"] == 10000
    assert tomllib.loads(p.toml)["limits"] == p.policy["limits"]


def test_keys_are_created_listed_and_revoked(server: Server, admin: mnemo.Client, client: mnemo.Client):
    user = unique("kay")
    created = admin.create_key("user", user_id=user)
    assert created.key.role == "user" and created.key.user_id == user and created.secret
    assert created.key.id in {k.id for k in admin.keys()}
    with mnemo.Client(server.base_url, api_key=created.secret, max_retries=0) as kay:
        assert kay.whoami().user_id == user
        revoked = admin.revoke_key(created.key.id)
        assert revoked.revoked_at is not None
        with pytest.raises(mnemo.AuthenticationError):
            kay.whoami()
    listed = {k.id: k for k in admin.keys()}
    assert listed[created.key.id].revoked_at is not None
    with pytest.raises(mnemo.NotFoundError):
        admin.revoke_key(created.key.id)
    with pytest.raises(mnemo.InvalidArgumentError) as e:
        admin.create_key("wizard")
    assert e.value.field == "role"
    for denied in (client.keys, client.jobs, client.index, client.evals):
        with pytest.raises(mnemo.PermissionDeniedError):
            denied()


def test_jobs_and_a_dry_run_that_writes_nothing(admin: mnemo.Client, client: mnemo.Client):
    assert {j.job for j in admin.jobs()} == {"ttl-sweep", "weekly-cleanup"}
    soon = datetime.now(timezone.utc) + timedelta(seconds=1)
    memory = client.add("A note that expires at once", user_id=unique("ttl"), expires_at=soon).ids[0]
    time.sleep(1.5)
    preview = admin.dry_run("ttl-sweep")
    assert preview.job == "ttl-sweep" and preview.scanned >= 1
    assert memory in {c.id for c in preview.changes}
    assert sum(preview.counts.values()) >= 1
    assert client.get(memory).status == "active", "a dry run writes nothing"
    with pytest.raises(mnemo.InvalidArgumentError):
        admin.dry_run("no-such-job")


def test_index_health_and_evals(admin: mnemo.Client, client: mnemo.Client):
    client.add("Indexed right away", user_id=unique("idx"), refresh=True)
    health = admin.index()
    assert health.embedding_model and health.store_indexed >= 1
    assert health.lexical_docs >= 1 and health.vector_points >= 1
    assert health.memories["long_term"]["active"] >= 1
    assert health.lexical_lag == health.store_indexed - health.lexical_docs
    evals = admin.evals()
    assert isinstance(evals.sets, list) and isinstance(evals.reports, list)


def test_thread_history_is_paged_through_next_before(client: mnemo.Client):
    thread = client.create_thread(user_id=unique("pager"))
    sent = [f"message number {i}" for i in range(5)]
    for text in sent:
        thread.append("assistant", text)
    pages = list(thread.history_pages(page_size=2))
    assert [len(p.messages) for p in pages] == [2, 2, 1]
    assert pages[0].next_before == pages[0].messages[0].seq and pages[-1].next_before is None
    assert [m.content for m in thread.messages(page_size=2)] == sent
    assert [m.content for m in thread.get(limit=2, before=pages[0].next_before).messages] == sent[1:3]
    with pytest.raises(mnemo.InvalidArgumentError):
        thread.get(limit=0)


def test_forget_all_answers_202_and_is_followed(limited_server: Server):
    with mnemo.Client(limited_server.base_url, api_key=limited_server.agent) as c:
        user = unique("a user/with spaces")
        c.add_many([{"user_id": user, "text": f"Fact {i}"} for i in range(5)], refresh=True)
        accepted = c.forget_user(user, wait=False)
        assert isinstance(accepted, mnemo.models.ErasureAccepted)
        assert accepted.status == "in_progress" and accepted.user_id == user
        assert accepted.status_url == f"/v1/users/{quote(user, safe='')}/erasure"
        done = wait_until(
            lambda: (lambda v: v if v.status == "erased" else None)(c.erasure_status(accepted.status_url)),
            what="the erasure",
        )
        assert done.erased and done.memories == 0 and done.vectors == 0

        other = unique("dora")
        c.add_many([{"user_id": other, "text": f"Dora fact {i}"} for i in range(5)], refresh=True)
        thread = c.create_thread(user_id=other)
        thread.append("user", "Remember my locker code")
        verified = c.forget_user(other)
        assert isinstance(verified, mnemo.models.ErasureVerification)
        assert verified.status == "erased" and verified.erased
        assert verified.memories == verified.threads == verified.messages == 0
        assert c.verify_erasure(other).status == "erased"
        assert not c.search("Dora fact", user_id=other).hits
        with pytest.raises(ValueError):
            c.erasure_status("/v1/memories")


def test_thread_quota_is_its_own_error(limited_server: Server):
    with mnemo.Client(limited_server.base_url, api_key=limited_server.agent) as c:
        user = unique("quota")
        for _ in range(THREADS_PER_USER):
            c.create_thread(user_id=user)
        with pytest.raises(mnemo.QuotaExceededError) as e:
            c.create_thread(user_id=user)
        assert e.value.status == 409 and e.value.code == "quota_exceeded"
        assert isinstance(e.value, mnemo.ConflictError)


def test_rate_limit_is_raised_with_retry_after_or_waited_out(limited_server: Server):
    with mnemo.Client(limited_server.base_url, api_key=limited_server.admin) as admin:
        secret = admin.create_key("agent").secret
    with mnemo.Client(limited_server.base_url, api_key=secret, max_retries=0) as hasty:
        with pytest.raises(mnemo.RateLimitedError) as e:
            for _ in range(BURST * 3):
                hasty.whoami()
        assert e.value.status == 429 and e.value.retry_after is not None and e.value.retry_after > 0
    with mnemo.Client(limited_server.base_url, api_key=secret) as patient:
        assert patient.whoami().role == "agent", "the retry policy waits Retry-After"


def test_oversized_headers_are_payload_too_large(server: Server):
    # More header fields than hyper takes (100). (A 414 needs a request target
    # over 65,534 bytes, which httpx refuses to send; its status mapping is
    # checked in test_retries.)
    big = {f"x-padding-{i}": "y" for i in range(150)}
    with mnemo.Client(server.base_url, api_key=server.agent, headers=big, max_retries=0) as c:
        with pytest.raises(mnemo.PayloadTooLargeError) as e:
            c.whoami()
    assert e.value.status == 431 and e.value.code == "payload_too_large"


def test_export_then_erase_then_import_gives_the_same_memories(client: mnemo.Client, admin: mnemo.Client):
    user = unique("erin")
    added = client.add_many(
        [{"user_id": user, "text": "Erin keeps bees on the roof"}, {"user_id": user, "text": "Erin's hives are blue"}],
        refresh=True,
    )
    ids = sorted(str(m.id) for m in added.memories)
    thread = client.create_thread(user_id=user)
    thread.append("user", "Remember that the queen bee is marked green")

    text = admin.export_user(user)
    records = mnemo._core.parse_export(text)
    manifest = records[-1]
    assert manifest["type"] == "manifest" and manifest["user_id"] == user
    assert manifest["counts"]["memory"] == 2 and manifest["counts"]["message"] == 1
    assert sorted(r["id"] for r in records if r["type"] == "memory") == ids

    # Re-import over existing data is a conflict; a tampered file writes nothing.
    with pytest.raises(mnemo.errors.ConflictError):
        admin.import_user(user, text)
    admin.forget_user(user)
    tampered = text.replace("queen bee", "drone bee")
    with pytest.raises(mnemo.errors.InvalidArgumentError):
        admin.import_user(user, tampered, allow_erased=True)
    assert not client.search("bees", user_id=user).hits
    # An erased user comes back only when the admin says so.
    with pytest.raises(mnemo.errors.ConflictError):
        admin.import_user(user, text)

    report = admin.import_user(user, text, allow_erased=True)
    assert report.user_id == user and report.counts["memory"] == 2 and report.indexed == 2
    assert not report.model_changed
    # The round trip keeps every memory row as it was (audit and message
    # sequence numbers are the deployment's own and may be renumbered).
    again = mnemo._core.parse_export(admin.export_user(user))
    # Every imported memory gains an `import` event in its history.
    counts = {k: v for k, v in manifest["counts"].items() if "audit" not in k}
    assert {k: v for k, v in again[-1]["counts"].items() if "audit" not in k} == counts
    memories = lambda rs: sorted((r for r in rs if r["type"] == "memory"), key=lambda r: r["id"])  # noqa: E731
    assert memories(again) == memories(records)
    hits = client.search("bees on the roof", user_id=user).hits
    assert str(hits[0].memory.id) in ids
    # An agent key may not export by default ([export] allow_agent_keys).
    with pytest.raises(mnemo.errors.PermissionDeniedError):
        client.export_user(user)
