// What the tests share: the live server scripts/test-typescript-client.sh
// started (its URL and keys in the environment) and unique user ids.
import { randomUUID } from "node:crypto";
import { MnemoClient } from "../dist/index.js";

function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`$${name} must be set (scripts/test-typescript-client.sh sets it)`);
  return value;
}

export const baseUrl = env("MNEMO_BASE_URL");
export const keys = {
  admin: env("MNEMO_TEST_ADMIN_KEY"),
  agent: env("MNEMO_TEST_AGENT_KEY"),
  /** Bound to the user `carol`. */
  user: env("MNEMO_TEST_USER_KEY"),
};

export const client = (apiKey = keys.agent, options = {}) =>
  new MnemoClient({ baseUrl, apiKey, timeoutMs: 30_000, ...options });

export const unique = (name) => `${name}-${randomUUID().slice(0, 8)}`;
