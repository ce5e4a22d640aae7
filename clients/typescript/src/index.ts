/**
 * The TypeScript client for Mnemo, a memory service for AI agents.
 *
 * ```ts
 * import { MnemoClient } from "mnemo-client";
 * const mnemo = new MnemoClient({ baseUrl: "http://127.0.0.1:8420", apiKey: process.env.MNEMO_API_KEY });
 * await mnemo.add({ text: "Alice prefers green tea", user_id: "alice", kind: "preference", refresh: true });
 * const { hits } = await mnemo.search({ query: "what does alice drink?", user_id: "alice", explain: true });
 * ```
 */
export * from "./client.js";
export * from "./errors.js";
export type { components, paths } from "./schema.js";
