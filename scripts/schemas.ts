// `npm run schemas`: JSON Schemas (draft 2020-12) of every WebSocket message, one file per
// protocol and direction under docs/schemas/, generated from the zod schemas the relay and the
// clients use (zod 4's toJSONSchema). A test (test/e2e/wire-schemas.test.ts) keeps the files
// equal to what this generates and checks real frames from the relay against them. Checks zod
// cannot express as JSON Schema (an npub's checksum, a did:key's point) are left out: the
// schemas say the shape, the docs say the rest.
// Runs with `node --import tsx`, like every script (the shared modules import without extensions).
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as z from "zod";
import * as tally from "../shared/tally/messages";
import * as passnote from "../shared/passnote/messages";
import * as minca from "../shared/minca/room";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const SCHEMA_DIR = join(ROOT, "docs", "schemas");

/** File name (under docs/schemas) -> the schema of every message in that direction: each protocol's own unions. */
export function wireSchemas(): Record<string, z.ZodType> {
  return {
    "tally.client-to-relay.json": tally.clientMessageSchema,
    "tally.relay-to-client.json": tally.serverMessageSchema,
    "passnote.client-to-relay.json": passnote.clientMessageSchema,
    "passnote.relay-to-client.json": passnote.roomServerMessageSchema,
    "minca-rooms.client-to-relay.json": minca.clientMessageSchema,
    "minca-rooms.relay-to-client.json": minca.relayMessageSchema,
  };
}

/** The text of each file, as written. */
export function schemaFiles(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, schema] of Object.entries(wireSchemas())) {
    const json = z.toJSONSchema(schema, { unrepresentable: "any", io: "input" }) as Record<string, unknown>;
    const title = name
      .replace(/\.json$/, "")
      .replace(/\./g, ": ")
      .replace(/-to-/, " to ");
    out[name] = `${JSON.stringify({ $id: `edge-relay/${name}`, title, ...json }, null, 2)}\n`;
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  mkdirSync(SCHEMA_DIR, { recursive: true });
  for (const [name, text] of Object.entries(schemaFiles())) writeFileSync(join(SCHEMA_DIR, name), text);
}
