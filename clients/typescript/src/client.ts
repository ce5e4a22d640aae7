/**
 * The Mnemo REST client: one `fetch` per attempt, retries with backoff on
 * 429 and 503 honouring `Retry-After`, a timeout per attempt
 * (AbortController), typed errors carrying the server's `error.code`, and
 * async iterators over the paged lists. Request and response types come from
 * the server's `/openapi.json` (`schema.d.ts`, generated).
 */

import type { components, paths } from "./schema.js";
import {
  APIConnectionError,
  APIError,
  APITimeoutError,
  MnemoError,
  errorFor,
} from "./errors.js";

export type Schemas = components["schemas"];
export type Memory = Schemas["Memory"];
export type MemoryInput = Schemas["MemoryInput"];
export type AddRequest = Schemas["AddRequest"];
export type AddResponse = Schemas["AddResponse"];
export type PatchRequest = Schemas["PatchRequest"];
export type DeleteResponse = Schemas["DeleteResponse"];
export type ListResponse = Schemas["ListResponse"];
export type AuditEvent = Schemas["AuditEvent"];
export type SupersedeResponse = Schemas["SupersedeResponse"];
export type SearchBody = Schemas["SearchBody"];
export type SearchResponse = Schemas["SearchResponse"];
export type SearchHit = Schemas["SearchHit"];
export type ContextRequest = Schemas["ContextRequest"];
export type ContextBlock = Schemas["ContextBlock"];
export type CreateThread = Schemas["CreateThread"];
export type Thread = Schemas["Thread"];
export type ThreadView = Schemas["ThreadView"];
export type AppendMessage = Schemas["AppendMessage"];
export type Message = Schemas["Message"];
export type PromptRequest = Schemas["PromptRequest"];
export type PromptResponse = Schemas["PromptResponse"];
export type TurnRequest = Schemas["TurnRequest"];
export type TurnReply = Schemas["TurnReply"];
export type ErasureReceipt = Schemas["ErasureReceipt"];
export type ErasureAccepted = Schemas["ErasureAccepted"];
export type ErasureVerification = Schemas["ErasureVerification"];
export type ImportReport = Schemas["ImportReport"];
export type UsersResponse = Schemas["UsersResponse"];
export type UserEntry = Schemas["UserEntry"];
export type WhoAmI = Schemas["WhoAmI"];
export type KeyView = Schemas["KeyView"];
export type CreateKey = Schemas["CreateKey"];
export type CreatedKey = Schemas["CreatedKey"];
export type Health = Schemas["Health"];
export type ListParams = NonNullable<paths["/v1/memories"]["get"]["parameters"]["query"]>;

export const DEFAULT_BASE_URL = "http://127.0.0.1:8420";

/** When and how long to wait before trying again. */
export interface RetryPolicy {
  /** Attempts after the first (default 3). */
  maxRetries: number;
  /** First backoff without `Retry-After` (default 500 ms), doubled each attempt… */
  backoffBaseMs: number;
  /** …up to this (default 8 s), with jitter. */
  backoffMaxMs: number;
  /** A `Retry-After` longer than this is not waited for (default 30 s). */
  maxRetryAfterMs: number;
  jitter: boolean;
}

export interface ClientOptions {
  /** Default `http://127.0.0.1:8420`. */
  baseUrl?: string;
  /** Sent as `Authorization: Bearer …`. */
  apiKey?: string;
  /** Per attempt (default 60 s, above the server's own 30 s). */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  headers?: Record<string, string>;
  /** Another `fetch` (default: the global one). */
  fetch?: typeof fetch;
}

interface Call {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | undefined | null> | undefined;
  json?: unknown;
  body?: string;
  contentType?: string;
  /** The answer is text, not JSON. */
  text?: boolean;
  /** Statuses whose body is an answer (besides 2xx). */
  alsoOk?: number[];
}

const IDEMPOTENT = new Set(["GET", "PUT", "DELETE", "HEAD", "OPTIONS"]);

/** `Retry-After` in milliseconds: delta-seconds or an HTTP date. */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const when = Date.parse(v);
  return Number.isNaN(when) ? undefined : Math.max(0, when - now);
}

/** One path segment, escaped (user ids may hold any character). */
const seg = (value: string): string => encodeURIComponent(value);

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(t);
      reject(signal.reason);
    });
  });

export interface ForgetOptions {
  /** Follow a 202 until the erasure is done (default true). */
  wait?: boolean;
  /** Give up waiting after this long (default 300 s); the erasure goes on. */
  timeoutMs?: number;
  pollIntervalMs?: number;
}

export class MnemoClient {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly retry: RetryPolicy;
  private readonly headers: Record<string, string>;
  private readonly fetchImpl: typeof fetch;
  /** How the client waits between attempts (tests replace it). */
  sleep: (ms: number) => Promise<void> = (ms) => sleep(ms);

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.retry = {
      maxRetries: 3,
      backoffBaseMs: 500,
      backoffMaxMs: 8_000,
      maxRetryAfterMs: 30_000,
      jitter: true,
      ...options.retry,
    };
    this.headers = { ...options.headers };
    if (options.apiKey) this.headers["authorization"] = `Bearer ${options.apiKey}`;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** Milliseconds to wait before attempt `attempt + 1`, or `undefined` to give up. */
  retryDelay(
    attempt: number,
    method: string,
    outcome: { status?: number; retryAfterMs?: number | undefined; error?: unknown; unsent?: boolean },
  ): number | undefined {
    const p = this.retry;
    if (attempt >= p.maxRetries) return undefined;
    const idempotent = IDEMPOTENT.has(method);
    if (outcome.error !== undefined) {
      // A failed fetch: retry only what cannot have been applied twice.
      if (!idempotent && !outcome.unsent) return undefined;
    } else if (outcome.status === 429 || (outcome.status === 503 && outcome.retryAfterMs !== undefined)) {
      // Refused before any work was done: always safe to retry.
    } else if (!(outcome.status === 503 && idempotent)) {
      return undefined;
    }
    if (outcome.retryAfterMs !== undefined) {
      return outcome.retryAfterMs <= p.maxRetryAfterMs ? outcome.retryAfterMs : undefined;
    }
    const wait = Math.min(p.backoffMaxMs, p.backoffBaseMs * 2 ** attempt);
    return p.jitter ? wait * (0.5 + Math.random() / 2) : wait;
  }

  /** Sends one call, retrying as the policy says; the parsed answer. */
  async send<T>(call: Call): Promise<T> {
    const url = new URL(this.baseUrl + call.path);
    for (const [k, v] of Object.entries(call.query ?? {})) {
      if (v !== undefined && v !== null) url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = { ...this.headers };
    let body: string | undefined;
    if (call.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(call.json);
    } else if (call.body !== undefined) {
      headers["content-type"] = call.contentType ?? "text/plain";
      body = call.body;
    }
    for (let attempt = 0; ; attempt++) {
      const controller = new AbortController();
      const timer = setTimeout(
        () => controller.abort(new APITimeoutError(`request timed out after ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
      let response: Response;
      try {
        const init: RequestInit = { method: call.method, headers, signal: controller.signal };
        if (body !== undefined) init.body = body;
        response = await this.fetchImpl(url, init);
      } catch (e) {
        clearTimeout(timer);
        const error =
          e instanceof MnemoError
            ? e
            : controller.signal.aborted
              ? new APITimeoutError(`request timed out after ${this.timeoutMs} ms`)
              : new APIConnectionError(`connection failed: ${(e as Error)?.message ?? e}`);
        // Refused connections never reached the server: safe for any method.
        const unsent = (e as { cause?: { code?: string } })?.cause?.code === "ECONNREFUSED";
        const wait = this.retryDelay(attempt, call.method, { error, unsent });
        if (wait === undefined) throw error;
        await this.sleep(wait);
        continue;
      }
      try {
        const text = await response.text();
        if (response.ok || call.alsoOk?.includes(response.status)) {
          return (call.text ? text : text ? JSON.parse(text) : undefined) as T;
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        const after = retryAfterMs(response.headers.get("retry-after"));
        const error = errorFor(response.status, parsed, parsed === undefined ? text : "", {
          retryAfterMs: after,
          requestId: response.headers.get("x-request-id") ?? undefined,
        });
        const wait = this.retryDelay(attempt, call.method, {
          status: response.status,
          retryAfterMs: after,
        });
        if (wait === undefined) throw error;
        await this.sleep(wait);
      } catch (e) {
        if (e instanceof APIError) throw e;
        if (controller.signal.aborted) {
          const error = new APITimeoutError(`response timed out after ${this.timeoutMs} ms`);
          const wait = this.retryDelay(attempt, call.method, { error });
          if (wait === undefined) throw error;
          await this.sleep(wait);
          continue;
        }
        throw e;
      } finally {
        clearTimeout(timer);
      }
    }
  }

  // ----- memories -----------------------------------------------------------

  /** Adds one memory (or a batch: `{memories: [...]}`); `refresh: true` makes it searchable before the answer. */
  add(body: AddRequest): Promise<AddResponse> {
    return this.send({ method: "POST", path: "/v1/memories", json: body });
  }
  get(id: string): Promise<Memory> {
    return this.send({ method: "GET", path: `/v1/memories/${seg(id)}` });
  }
  /** One page, oldest first; pass `next_cursor` as `cursor` for the next (or use {@link iterMemories}). */
  list(params: ListParams = {}): Promise<ListResponse> {
    return this.send({ method: "GET", path: "/v1/memories", query: params });
  }
  update(id: string, patch: PatchRequest): Promise<Memory> {
    return this.send({ method: "PATCH", path: `/v1/memories/${seg(id)}`, json: patch });
  }
  /** Soft delete: gone from retrieval, restorable, history kept. */
  delete(id: string): Promise<DeleteResponse> {
    return this.send({ method: "DELETE", path: `/v1/memories/${seg(id)}` });
  }
  async history(id: string): Promise<AuditEvent[]> {
    const r = await this.send<Schemas["HistoryResponse"]>({
      method: "GET",
      path: `/v1/memories/${seg(id)}/history`,
    });
    return r.events;
  }
  /** Every memory matching `params`, oldest first, `pageSize` per request. */
  async *iterMemories(params: Omit<ListParams, "limit"> = {}, pageSize = 100): AsyncGenerator<Memory> {
    const query: ListParams = { ...params, limit: pageSize };
    for (;;) {
      const page = await this.list(query);
      yield* page.memories;
      if (!page.next_cursor) return;
      query.cursor = page.next_cursor;
    }
  }

  // ----- review -------------------------------------------------------------

  /** The review queue: candidates awaiting {@link confirm} or {@link reject}. */
  pending(userId?: string, pageSize = 100): AsyncGenerator<Memory> {
    return this.iterMemories(
      userId === undefined ? { status: "pending" } : { user_id: userId, status: "pending" },
      pageSize,
    );
  }
  confirm(id: string): Promise<Memory> {
    return this.send({ method: "POST", path: `/v1/memories/${seg(id)}/confirm` });
  }
  reject(id: string): Promise<Memory> {
    return this.send({ method: "POST", path: `/v1/memories/${seg(id)}/reject` });
  }
  restore(id: string): Promise<Memory> {
    return this.send({ method: "POST", path: `/v1/memories/${seg(id)}/restore` });
  }
  supersede(id: string, text: string): Promise<SupersedeResponse> {
    return this.send({ method: "POST", path: `/v1/memories/${seg(id)}/supersede`, json: { text } });
  }

  // ----- retrieval ----------------------------------------------------------

  /** Hybrid search in one user's scope; `explain: true` adds each hit's score breakdown. */
  search(body: SearchBody): Promise<SearchResponse> {
    return this.send({ method: "POST", path: "/v1/search", json: body });
  }
  /** A memory block for a prompt, within a token budget. */
  context(body: ContextRequest): Promise<ContextBlock> {
    return this.send({ method: "POST", path: "/v1/context", json: body });
  }

  // ----- threads ------------------------------------------------------------

  createThread(body: CreateThread = {}): Promise<Thread> {
    return this.send({ method: "POST", path: "/v1/threads", json: body });
  }
  getThread(
    id: string,
    params: { limit?: number; before?: number; include_compacted?: boolean } = {},
  ): Promise<ThreadView> {
    return this.send({
      method: "GET",
      path: `/v1/threads/${seg(id)}`,
      query: { ...params, include_compacted: params.include_compacted ? "true" : undefined },
    });
  }
  /** Stores a message (agents that run their own model). */
  append(threadId: string, message: AppendMessage): Promise<Message> {
    return this.send({ method: "POST", path: `/v1/threads/${seg(threadId)}/messages`, json: message });
  }
  /** A tool result's full payload, as stored. */
  payload(threadId: string, payloadId: string): Promise<unknown> {
    return this.send({
      method: "GET",
      path: `/v1/threads/${seg(threadId)}/payloads/${seg(payloadId)}`,
    });
  }
  prompt(threadId: string, body: PromptRequest): Promise<PromptResponse> {
    return this.send({ method: "POST", path: `/v1/threads/${seg(threadId)}/prompt`, json: body });
  }
  /** A turn with the server's model (stored first, then the reply). */
  turn(threadId: string, body: TurnRequest): Promise<TurnReply> {
    return this.send({ method: "POST", path: `/v1/threads/${seg(threadId)}/turns`, json: body });
  }
  /** The thread's history page by page, newest page first (each page oldest first). */
  async *threadPages(
    threadId: string,
    options: { pageSize?: number; includeCompacted?: boolean } = {},
  ): AsyncGenerator<ThreadView> {
    let before: number | undefined;
    for (;;) {
      const params: { limit: number; before?: number; include_compacted: boolean } = {
        limit: options.pageSize ?? 200,
        include_compacted: options.includeCompacted ?? false,
      };
      if (before !== undefined) params.before = before;
      const page = await this.getThread(threadId, params);
      yield page;
      if (page.next_before === undefined || page.next_before === null) return;
      before = page.next_before;
    }
  }
  /** Every message of the thread, oldest first (compacted ones included by default). */
  async messages(threadId: string, includeCompacted = true): Promise<Message[]> {
    const pages: ThreadView[] = [];
    for await (const page of this.threadPages(threadId, { includeCompacted })) pages.push(page);
    return pages.reverse().flatMap((p) => p.messages);
  }

  // ----- users --------------------------------------------------------------

  /** `DELETE /v1/users/{id}` sent once: the receipt (200) or the in-progress status (202). */
  async startErasure(userId: string): Promise<ErasureReceipt | ErasureAccepted> {
    return this.send({ method: "DELETE", path: `/v1/users/${seg(userId)}` });
  }
  verifyErasure(userId: string): Promise<ErasureVerification> {
    return this.send({ method: "GET", path: `/v1/users/${seg(userId)}/erasure` });
  }
  /**
   * Forget-all: erases every trace of a user from every store (irreversible).
   * A 202 is followed (its `status_url` polled) until the erasure is no longer
   * `in_progress`, and the verification returned; `wait: false` returns the 202's status.
   */
  async forgetUser(
    userId: string,
    options: ForgetOptions = {},
  ): Promise<ErasureReceipt | ErasureAccepted | ErasureVerification> {
    const answer = await this.startErasure(userId);
    if (!("status_url" in answer) || options.wait === false) return answer;
    if (!answer.status_url.startsWith("/v1/users/") || !answer.status_url.endsWith("/erasure")) {
      throw new MnemoError(`not an erasure status URL: ${answer.status_url}`);
    }
    const deadline = Date.now() + (options.timeoutMs ?? 300_000);
    for (;;) {
      const check = await this.send<ErasureVerification>({ method: "GET", path: answer.status_url });
      if (check.status !== "in_progress") return check;
      if (Date.now() >= deadline) {
        throw new APITimeoutError(
          `erasure still in progress after ${options.timeoutMs ?? 300_000} ms (it goes on on the server)`,
        );
      }
      await this.sleep(options.pollIntervalMs ?? 500);
    }
  }
  /** Everything the service holds about a user, as JSON Lines (the manifest last). */
  exportUser(userId: string): Promise<string> {
    return this.send({ method: "GET", path: `/v1/users/${seg(userId)}/export`, text: true });
  }
  /** Restores an export (admin); `replace` erases what the user has first. */
  /**
   * Restores an export (admin). `replace` erases what the user has first; a
   * user who was erased (forget-all) comes back only with `allowErased`.
   */
  importUser(
    userId: string,
    ndjson: string,
    options: { replace?: boolean; allowErased?: boolean } = {},
  ): Promise<ImportReport> {
    return this.send({
      method: "POST",
      path: `/v1/users/${seg(userId)}/import`,
      query: {
        replace: options.replace ? "true" : undefined,
        allow_erased: options.allowErased ? "true" : undefined,
      },
      body: ndjson,
      contentType: "application/x-ndjson",
    });
  }
  users(cursor?: string): Promise<UsersResponse> {
    return this.send({ method: "GET", path: "/v1/users", query: { cursor } });
  }
  /** Every user the key may see, scan after scan. */
  async *allUsers(): AsyncGenerator<UserEntry> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.users(cursor);
      yield* page.users;
      if (!page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }
  whoami(): Promise<WhoAmI> {
    return this.send({ method: "GET", path: "/v1/whoami" });
  }

  // ----- keys (admin) -------------------------------------------------------

  async keys(): Promise<KeyView[]> {
    const r = await this.send<Schemas["KeysResponse"]>({ method: "GET", path: "/v1/keys" });
    return r.keys;
  }
  /** A new key; its `secret` is in this answer only. */
  createKey(body: CreateKey): Promise<CreatedKey> {
    return this.send({ method: "POST", path: "/v1/keys", json: body });
  }
  revokeKey(id: string): Promise<KeyView> {
    return this.send({ method: "DELETE", path: `/v1/keys/${seg(id)}` });
  }

  // ----- operations ---------------------------------------------------------

  health(): Promise<Health> {
    return this.send({ method: "GET", path: "/healthz" });
  }
  /** Readiness; a 503 `not_ready` is an answer, not an error. */
  ready(): Promise<Health> {
    return this.send({ method: "GET", path: "/readyz", alsoOk: [503] });
  }
  openapi(): Promise<Record<string, unknown>> {
    return this.send({ method: "GET", path: "/openapi.json" });
  }
}
