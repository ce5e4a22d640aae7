// Generates src/schema.d.ts from a live server's /openapi.json with
// openapi-typescript (pinned in package.json). `--check` regenerates into
// memory and fails on any difference from the checked-in file: the types
// cannot drift from the server unnoticed.
//
// The server: $MNEMO_BASE_URL (default http://127.0.0.1:8420).
import { readFile, writeFile } from "node:fs/promises";
import openapiTS, { astToString } from "openapi-typescript";

const base = (process.env.MNEMO_BASE_URL ?? "http://127.0.0.1:8420").replace(/\/+$/, "");
const target = new URL("../src/schema.d.ts", import.meta.url);
const check = process.argv.includes("--check");

const response = await fetch(`${base}/openapi.json`);
if (!response.ok) {
  console.error(`GET ${base}/openapi.json: ${response.status}`);
  process.exit(1);
}
const spec = await response.json();
// The client names routes by path and method (`paths`), not by operationId,
// and the server's operationIds are its handler names, which repeat (`get`
// for GET /v1/threads/{id} and GET /v1/evals/{id}): openapi-typescript
// refuses duplicates, so they are left out.
for (const operations of Object.values(spec.paths ?? {})) {
  for (const op of Object.values(operations)) {
    if (op && typeof op === "object") delete op.operationId;
  }
}
const header =
  "// Generated from mnemo serve's /openapi.json by scripts/gen-types.mjs\n" +
  "// (openapi-typescript). Do not edit: run `npm run gen:types` against a\n" +
  "// server built from this checkout; `npm run check:types` fails on drift.\n\n";
const generated = header + astToString(await openapiTS(spec));

if (check) {
  const current = await readFile(target, "utf8").catch(() => "");
  if (current !== generated) {
    const a = current.split("\n");
    const b = generated.split("\n");
    let i = 0;
    while (i < Math.max(a.length, b.length) && a[i] === b[i]) i++;
    console.error(
      `src/schema.d.ts differs from the server's /openapi.json (first at line ${i + 1}):\n` +
        `  checked in: ${a[i] ?? "<end>"}\n  generated:  ${b[i] ?? "<end>"}\n` +
        "Run `npm run gen:types` against the server and commit the result.",
    );
    process.exit(1);
  }
  console.log("src/schema.d.ts matches the server's /openapi.json");
} else {
  await writeFile(target, generated);
  console.log(`wrote src/schema.d.ts from ${base}/openapi.json`);
}
