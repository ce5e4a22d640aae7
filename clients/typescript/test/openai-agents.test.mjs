// MnemoSession driven through @openai/agents' own API (`run(agent, input,
// { session })`) against the real `mnemo serve`. The agent's model is a local
// stub speaking the Chat Completions API: it answers "you said: <last user
// message>"; everything else is real.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";

import { MnemoSession, SessionUserMismatch } from "../dist/openai-agents.js";
import { NotFoundError } from "../dist/index.js";
import { client, unique } from "./support.mjs";

setTracingDisabled(true);
const mnemo = client();
let stub;
const requests = [];

before(async () => {
  stub = createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      const body = JSON.parse(raw);
      requests.push(body);
      const last = [...body.messages].reverse().find((m) => m.role === "user");
      const content = `you said: ${typeof last?.content === "string" ? last.content : JSON.stringify(last?.content)}`;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: "chatcmpl-stub",
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model: "stub",
          choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise((r) => stub.listen(0, "127.0.0.1", r));
});
after(() => stub.close());

function agent() {
  const openai = new OpenAI({ baseURL: `http://127.0.0.1:${stub.address().port}/v1`, apiKey: "stub", maxRetries: 0 });
  return new Agent({ name: "assistant", instructions: "Be brief.", model: new OpenAIChatCompletionsModel(openai, "stub") });
}

test("run() keeps the conversation in a Mnemo thread", async () => {
  const user = unique("ben");
  const session = await MnemoSession.create(mnemo, { userId: user });
  const first = await run(agent(), "My name is Ben", { session });
  assert.equal(first.finalOutput, "you said: My name is Ben");
  const second = await run(agent(), "What is my name?", { session });
  assert.equal(second.finalOutput, "you said: What is my name?");
  const sent = JSON.stringify(requests.at(-1).messages);
  assert.ok(sent.includes("My name is Ben") && sent.includes("you said: My name is Ben"), "history came from Mnemo");
  const view = await mnemo.getThread(await session.getSessionId());
  assert.deepEqual(
    view.messages.map((m) => [m.role, m.content]),
    [
      ["user", "My name is Ben"],
      ["assistant", "you said: My name is Ben"],
      ["user", "What is my name?"],
      ["assistant", "you said: What is my name?"],
    ],
  );
  // Resumed by id (a new process, say): the same items.
  const again = new MnemoSession(mnemo, session.threadId, user);
  assert.deepEqual(await again.getItems(), await session.getItems());
  assert.equal((await again.getItems(1)).length, 1);
});

test("items round-trip; pop and clear hide them", async () => {
  const session = await MnemoSession.create(mnemo, { userId: unique("ana") });
  const call = { type: "function_call", callId: "c1", name: "lookup", arguments: '{"q":"tea"}', status: "completed" };
  const result = { type: "function_call_result", callId: "c1", name: "lookup", status: "completed", output: { type: "text", text: "found 3" } };
  await session.addItems([{ role: "user", content: "I like green tea" }, call, result]);
  const items = await session.getItems();
  assert.deepEqual(items, [{ role: "user", content: "I like green tea" }, call, result]);
  assert.deepEqual(await session.popItem(), result);
  assert.equal((await session.getItems()).length, 2);
  await session.clearSession();
  assert.deepEqual(await session.getItems(), []);
  assert.equal(await session.popItem(), undefined);
});

test("the user is explicit; forget-all erases the session", async () => {
  const alice = unique("alice");
  const session = await MnemoSession.create(mnemo, { userId: alice });
  await session.addItems([{ role: "user", content: "Alice's locker code is 4711" }]);
  const stolen = new MnemoSession(mnemo, session.threadId, unique("bob"));
  await assert.rejects(stolen.getItems(), SessionUserMismatch);
  const done = await session.forgetUser();
  assert.equal(done.status, "erased");
  await assert.rejects(new MnemoSession(mnemo, session.threadId, alice).getItems(), NotFoundError);
});
