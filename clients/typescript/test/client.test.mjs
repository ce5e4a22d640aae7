// The client against a real `mnemo serve` (scripts/test-typescript-client.sh).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  AuthenticationError,
  ConflictError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
} from "../dist/index.js";
import { client, keys, unique } from "./support.mjs";

const agent = client();
const admin = client(keys.admin);

test("memories: add, get, list, update, delete", async () => {
  const user = unique("fay");
  const added = await agent.add({ text: "Fay likes jazz", user_id: user, kind: "preference" });
  assert.equal(added.ids.length, 1);
  const id = added.ids[0];
  const got = await agent.get(id);
  assert.equal(got.text, "Fay likes jazz");
  assert.equal(got.user_id, user);
  assert.equal(got.kind, "preference");
  const changed = await agent.update(id, { importance: 0.9, metadata: { source: "chat" } });
  assert.equal(changed.importance, 0.9);
  assert.deepEqual(changed.metadata, { source: "chat" });
  assert.ok(changed.version > got.version);
  const listed = await agent.list({ user_id: user });
  assert.deepEqual(listed.memories.map((m) => m.id), [id]);
  assert.equal((await agent.delete(id)).status, "deleted");
  assert.equal((await agent.get(id)).status, "deleted");
  const history = await agent.history(id);
  assert.equal(history[0].action, "create");
  assert.ok(history.some((e) => e.action === "delete"));
});

test("pagination: iterMemories follows next_cursor", async () => {
  const user = unique("gus");
  const texts = Array.from({ length: 7 }, (_, i) => `Gus note number ${i}`);
  const added = await agent.add({ memories: texts.map((text) => ({ user_id: user, text })) });
  const first = await agent.list({ user_id: user, limit: 3 });
  assert.equal(first.memories.length, 3);
  assert.ok(first.next_cursor);
  const seen = [];
  for await (const m of agent.iterMemories({ user_id: user }, 3)) seen.push(m.id);
  assert.deepEqual([...seen].sort(), [...added.ids].sort());
  assert.equal(new Set(seen).size, 7, "every memory once");
});

test("search with explain", async () => {
  const user = unique("alice");
  const tea = await agent.add({
    text: "Alice prefers green tea over coffee",
    user_id: user,
    kind: "preference",
    refresh: true,
  });
  await agent.add({ text: "Alice's flight lands at nine", user_id: user, kind: "event", refresh: true });
  const result = await agent.search({ query: "what does alice like to drink?", user_id: user, explain: true });
  assert.ok(result.hits.length > 0);
  const top = result.hits[0];
  assert.equal(top.memory.id, tea.ids[0]);
  assert.ok(top.breakdown, "explain gives the breakdown");
  assert.ok(Math.abs(top.breakdown.final_score - top.score) < 1e-4 * Math.max(1, top.score));
  const plain = await agent.search({ query: "what does alice like to drink?", user_id: user });
  assert.ok(plain.hits.every((h) => h.breakdown === undefined || h.breakdown === null));
  const other = await agent.search({ query: "green tea", user_id: unique("bob") });
  assert.deepEqual(other.hits, [], "another user's scope is empty");
});

test("context block within its budget", async () => {
  const user = unique("bea");
  const ids = (await agent.add({ text: "Bea is allergic to peanuts", user_id: user, kind: "fact", refresh: true })).ids;
  const block = await agent.context({ user_id: user, query: "what should I cook for Bea?", model_context_tokens: 8000 });
  assert.ok(block.memory_ids.includes(ids[0]));
  assert.match(block.text, /peanuts/);
  assert.ok(block.tokens > 0 && block.tokens <= block.budget_tokens);
});

test("threads and turns: append, prompt, page through", async () => {
  const user = unique("hana");
  const thread = await agent.createThread({ user_id: user, goal: "Plan a trip to Kyoto in April" });
  assert.equal(thread.goal, "Plan a trip to Kyoto in April");
  await agent.append(thread.id, { role: "user", content: "We land on the 3rd." });
  const tool = await agent.append(thread.id, {
    role: "tool",
    tool: { name: "hotel_search", status: "ok", summary: "3 ryokans found", key_fields: { cheapest: "Sawaya" }, payload: { results: ["Sawaya"] } },
  });
  assert.ok(tool.tool?.payload_id);
  assert.deepEqual(await agent.payload(thread.id, tool.tool.payload_id), { results: ["Sawaya"] });
  const prompt = await agent.prompt(thread.id, { message: "Which tea should I drink in Kyoto?", model_context_tokens: 8192 });
  const text = prompt.messages.map((m) => m.content).join("\n");
  assert.match(text, /Plan a trip to Kyoto in April/);
  assert.match(text, /cheapest=Sawaya/);
  assert.equal(prompt.messages.at(-1).content, "Which tea should I drink in Kyoto?");
  assert.ok(prompt.tokens.total > 0);

  for (let i = 0; i < 4; i++) await agent.append(thread.id, { role: "user", content: `Note ${i}` });
  const pages = [];
  for await (const page of agent.threadPages(thread.id, { pageSize: 2 })) pages.push(page);
  assert.equal(pages.length, 3, "6 messages, 2 a page");
  const all = await agent.messages(thread.id);
  assert.deepEqual(
    all.map((m) => m.content.slice(0, 6)),
    ["We lan", "[tool ", "Note 0", "Note 1", "Note 2", "Note 3"],
  );
  // No model is configured on this server: a turn is a typed 503.
  await assert.rejects(agent.turn(thread.id, { message: "hi" }), (e) => e.status === 503 && typeof e.code === "string");
});

test("review: pending candidates, confirm and reject", async () => {
  const user = unique("dan");
  const unsure = await agent.add({ text: "Dan may be vegetarian", user_id: user, confidence: 0.3, refresh: true });
  const other = await agent.add({ text: "Dan might move to Oslo", user_id: user, confidence: 0.2, refresh: true });
  assert.equal(unsure.memories[0].status, "pending");
  const queue = [];
  for await (const m of agent.pending(user)) queue.push(m.id);
  assert.deepEqual(queue.sort(), [unsure.ids[0], other.ids[0]].sort());
  assert.equal((await agent.confirm(unsure.ids[0])).status, "active");
  assert.equal((await agent.reject(other.ids[0])).status, "deleted");
  const left = [];
  for await (const m of agent.pending(user)) left.push(m);
  assert.deepEqual(left, []);
  await assert.rejects(agent.confirm(unsure.ids[0]), (e) => e instanceof ConflictError && e.code === "conflict" && e.status === 409);
  assert.equal((await agent.restore(other.ids[0])).status, "active");
  const sup = await agent.supersede(unsure.ids[0], "Dan is vegan");
  assert.equal(sup.superseded, unsure.ids[0]);
});

test("forget-all follows its 202 until the erasure is done", async () => {
  const user = unique("jon");
  await agent.add({ memories: [0, 1, 2].map((i) => ({ user_id: user, text: `Jon fact ${i}` })), refresh: true });
  const thread = await agent.createThread({ user_id: user });
  await agent.append(thread.id, { role: "user", content: "I take the early train" });
  const accepted = await agent.forgetUser(user, { wait: false });
  assert.ok("status_url" in accepted, "this server answers 202 at once");
  assert.equal(accepted.user_id, user);
  const done = await agent.forgetUser(user);
  assert.equal(done.status, "erased");
  const check = await agent.verifyErasure(user);
  assert.equal(check.memories, 0);
  assert.equal(check.threads, 0);
  assert.equal(check.vectors, 0);
  await assert.rejects(agent.getThread(thread.id), NotFoundError);
});

test("export and import a user", async () => {
  const user = unique("kim");
  await agent.add({ text: "Kim collects stamps", user_id: user, refresh: true });
  const exported = await admin.exportUser(user);
  const records = exported.trim().split("\n").map((l) => JSON.parse(l));
  assert.ok(records.length >= 2);
  assert.ok(exported.includes("Kim collects stamps"));
  await admin.forgetUser(user);
  assert.deepEqual((await agent.list({ user_id: user })).memories, []);
  // An erased user comes back only when the admin says so.
  await assert.rejects(admin.importUser(user, exported), ConflictError);
  const report = await admin.importUser(user, exported, { allowErased: true });
  assert.equal(report.counts.memory, 1);
  assert.equal(report.indexed, 1);
  const back = (await agent.list({ user_id: user })).memories;
  assert.deepEqual(back.map((m) => m.text), ["Kim collects stamps"]);
  await assert.rejects(admin.importUser(user, exported), ConflictError);
  await admin.importUser(user, exported, { replace: true, allowErased: true });
});

test("keys: create, use, revoke", async () => {
  const user = unique("lea");
  const created = await admin.createKey({ role: "user", user_id: user });
  assert.ok(created.secret);
  const theirs = client(created.secret, { retry: { maxRetries: 0 } });
  const me = await theirs.whoami();
  assert.equal(me.user_id, user);
  assert.equal(me.role, "user");
  assert.ok((await admin.keys()).some((k) => k.id === created.key.id));
  const revoked = await admin.revokeKey(created.key.id);
  assert.ok(revoked.revoked_at);
  await assert.rejects(theirs.whoami(), (e) => e instanceof AuthenticationError && e.status === 401);
});

test("errors are typed and carry the server's code", async () => {
  const carol = client(keys.user);
  await assert.rejects(carol.search({ query: "anything", user_id: "someone-else" }), (e) => {
    assert.ok(e instanceof PermissionDeniedError);
    assert.equal(e.code, "forbidden");
    assert.ok(e.requestId);
    return true;
  });
  await assert.rejects(agent.get("00000000-0000-7000-8000-000000000000"), (e) => e instanceof NotFoundError && e.code === "not_found");
  await assert.rejects(agent.search({ query: "tea", user_id: "x", top_k: 0 }), (e) => {
    assert.ok(e instanceof InvalidArgumentError);
    assert.equal(e.code, "invalid_argument");
    assert.equal(e.field, "top_k");
    return true;
  });
  const anon = client("mnemo_not_a_key", { retry: { maxRetries: 0 } });
  assert.equal((await anon.health()).status, "ok");
  await assert.rejects(anon.search({ query: "tea", user_id: "x" }), AuthenticationError);
});
