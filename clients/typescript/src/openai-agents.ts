/**
 * The OpenAI Agents SDK for TypeScript (`@openai/agents`) over Mnemo:
 * {@link MnemoSession} implements the SDK's `Session` interface on a Mnemo
 * thread, so `run(agent, input, { session })` keeps the conversation in
 * Mnemo (its working memory, compaction and extraction behind it).
 *
 * Imported from `mnemo-client/openai-agents`; it imports only the SDK's
 * types, so the core client stays free of runtime dependencies.
 *
 * How items are stored:
 * - a user message with a string content, and an assistant message with one
 *   `output_text` part (its id and the part's `providerData: {role: "assistant"}`
 *   are not kept), are thread messages with that role and text, read
 *   back as `{role: "user", content}` and
 *   `{type: "message", role: "assistant", status: "completed", content: [{type: "output_text", text}]}`;
 * - every other item (function calls and results, reasoning, system
 *   messages, …) is a `tool` message named `openai_agents_item`: its one-line
 *   summary enters Mnemo's history, its payload is the item, read back verbatim;
 * - `popItem` and `clearSession` append a marker (`openai_agents_session`):
 *   the items are no longer returned, but a Mnemo thread is append-only and
 *   audited, so their text stays on the server until the user is erased
 *   ({@link MnemoSession.forgetUser}, Mnemo's forget-all).
 *
 * The user is explicit: a session is made for `userId`, and a thread of
 * another user is refused ({@link SessionUserMismatch}).
 */

import type { AgentInputItem, Session } from "@openai/agents-core";
import type { Message, MnemoClient } from "./client.js";
import { MnemoError } from "./errors.js";

export const ITEM_TOOL = "openai_agents_item";
export const MARKER_TOOL = "openai_agents_session";

/** The thread behind a session belongs to another user. */
export class SessionUserMismatch extends MnemoError {
  override name = "SessionUserMismatch";
}

type Json = Record<string, unknown>;
/** The spec types `payload` and `key_fields` as objects without properties (any JSON, really). */
type ToolBody = NonNullable<Parameters<MnemoClient["append"]>[1]["tool"]>;
const toolBody = (body: { name: string; status: string; summary: string; payload?: unknown; key_fields?: Json }): ToolBody =>
  body as unknown as ToolBody;

/** `[role, text]` when the item is a plain text message, else `undefined`. */
function textMessage(item: AgentInputItem): ["user" | "assistant", string] | undefined {
  const it = item as Json;
  const keys = Object.keys(it).filter((k) => k !== "type" && k !== "id" && k !== "status");
  if (it["type"] !== undefined && it["type"] !== "message") return undefined;
  if (keys.length !== 2 || !keys.includes("role") || !keys.includes("content")) return undefined;
  const content = it["content"];
  if (it["role"] === "user" && typeof content === "string" && content.trim()) {
    return ["user", content];
  }
  if (it["role"] === "assistant" && Array.isArray(content) && content.length === 1) {
    const part = content[0] as Json;
    const extra = Object.keys(part).filter(
      (k) => !["type", "text", "annotations", "logprobs", "providerData"].includes(k),
    );
    const empty = (v: unknown) => v === undefined || (Array.isArray(v) && v.length === 0);
    // The Chat Completions model tags each part with its role: redundant here.
    const provider = part["providerData"] as Json | undefined;
    const plainProvider =
      provider === undefined ||
      (Object.keys(provider).length === 1 && provider["role"] === "assistant");
    if (
      part["type"] === "output_text" &&
      typeof part["text"] === "string" &&
      part["text"].trim() &&
      extra.length === 0 &&
      plainProvider &&
      empty(part["annotations"]) &&
      empty(part["logprobs"])
    ) {
      return ["assistant", part["text"]];
    }
  }
  return undefined;
}

function summary(item: AgentInputItem): string {
  const it = item as Json;
  const kind = String(it["type"] ?? "message");
  let detail = "";
  if (kind === "function_call") detail = `${String(it["name"])}(${String(it["arguments"] ?? "")})`;
  else if (kind === "function_call_result") detail = JSON.stringify(it["output"] ?? "");
  else if (typeof it["role"] === "string") detail = it["role"];
  return `${kind} ${detail}`.trim().replace(/\s+/g, " ").slice(0, 200);
}

export class MnemoSession implements Session {
  private checked = false;
  private queue: Promise<unknown> = Promise.resolve();

  /** The session on the existing Mnemo thread `threadId`, which must be `userId`'s. */
  constructor(
    readonly client: MnemoClient,
    readonly threadId: string,
    readonly userId: string,
  ) {}

  /** A new Mnemo thread for `userId` (`goal` is pinned in Mnemo's prompts), as a session. */
  static async create(
    client: MnemoClient,
    options: { userId: string; goal?: string },
  ): Promise<MnemoSession> {
    const body: { user_id: string; goal?: string } = { user_id: options.userId };
    if (options.goal !== undefined) body.goal = options.goal;
    const thread = await client.createThread(body);
    const session = new MnemoSession(client, thread.id, options.userId);
    session.checked = true;
    return session;
  }

  async getSessionId(): Promise<string> {
    return this.threadId;
  }

  async getItems(limit?: number): Promise<AgentInputItem[]> {
    let visible = await this.visible();
    if (limit !== undefined) visible = limit > 0 ? visible.slice(-limit) : [];
    return Promise.all(visible.map((m) => this.item(m)));
  }

  addItems(items: AgentInputItem[]): Promise<void> {
    return this.serial(async () => {
      await this.check();
      for (const item of items) {
        const text = textMessage(item);
        if (text) {
          await this.client.append(this.threadId, { role: text[0], content: text[1] });
        } else {
          await this.client.append(this.threadId, {
            role: "tool",
            tool: toolBody({ name: ITEM_TOOL, status: "ok", summary: summary(item), payload: item }),
          });
        }
      }
    });
  }

  popItem(): Promise<AgentInputItem | undefined> {
    return this.serial(async () => {
      const visible = await this.visible();
      const last = visible.at(-1);
      if (!last) return undefined;
      const item = await this.item(last);
      await this.mark("pop", last.seq, "session item removed");
      return item;
    });
  }

  clearSession(): Promise<void> {
    return this.serial(async () => {
      const last = (await this.visible()).at(-1);
      if (last) await this.mark("clear", last.seq, "session cleared");
    });
  }

  /** Mnemo's forget-all for this session's user (this thread included; irreversible). */
  forgetUser(): ReturnType<MnemoClient["forgetUser"]> {
    return this.client.forgetUser(this.userId);
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async check(): Promise<void> {
    if (this.checked) return;
    const view = await this.client.getThread(this.threadId, { limit: 1 });
    if (view.user_id !== this.userId) {
      throw new SessionUserMismatch(`thread ${this.threadId} belongs to another user than ${this.userId}`);
    }
    this.checked = true;
  }

  private async visible(): Promise<Message[]> {
    await this.check();
    let visible: Message[] = [];
    for (const m of await this.client.messages(this.threadId, true)) {
      const tool = m.tool;
      if (tool && tool.name === MARKER_TOOL) {
        const seq = (tool.key_fields as Json | undefined)?.["seq"];
        if (tool.status === "pop") visible = visible.filter((v) => v.seq !== seq);
        else if (tool.status === "clear" && typeof seq === "number") visible = visible.filter((v) => v.seq > seq);
        continue;
      }
      if (m.role === "tool" && (!tool || tool.name !== ITEM_TOOL)) continue;
      visible.push(m);
    }
    return visible;
  }

  private async item(m: Message): Promise<AgentInputItem> {
    if (!m.tool) {
      if (m.role === "user") return { role: "user", content: m.content } as AgentInputItem;
      return {
        type: "message",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: m.content }],
      } as AgentInputItem;
    }
    if (!m.tool.payload_id) throw new MnemoError(`message ${m.seq} has no payload`);
    return (await this.client.payload(this.threadId, m.tool.payload_id)) as AgentInputItem;
  }

  private async mark(what: "pop" | "clear", seq: number, text: string): Promise<void> {
    await this.client.append(this.threadId, {
      role: "tool",
      tool: toolBody({ name: MARKER_TOOL, status: what, summary: text, key_fields: { seq } }),
    });
  }
}
