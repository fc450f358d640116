// server/openapi.ts: the OpenAPI 3.1 document is built from the zod schemas the relay uses, so
// what the relay's own builders produce (the information document, a mailbox page, the status
// snapshot) is valid under it, and what it refuses (an unknown error code, a field the schema
// lacks) is not.
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { ERROR_CODES, httpErrorBody } from "../../../shared/errors";
import { relayInfo, VERSION } from "../../../server/info";
import { buildPage } from "../../../shared/mailbox/messages";
import { openApiDocument } from "../../../server/openapi";
import { buildSnapshot } from "../../../server/stats";
import { danglingRefs, operations, resolveRefs, type Doc } from "../../helpers/openapi";

const doc = openApiDocument() as unknown as Doc;
const component = (name: string) =>
  z.fromJSONSchema(resolveRefs(doc, doc.components.schemas[name]) as Parameters<typeof z.fromJSONSchema>[0]);

describe("openApiDocument", () => {
  it("is OpenAPI 3.1.0 with the relay's version, the same every time, its references all resolving", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect((doc as unknown as { info: { version: string } }).info.version).toBe(VERSION);
    expect(JSON.stringify(openApiDocument())).toBe(JSON.stringify(doc));
    expect(danglingRefs(doc)).toEqual([]);
    expect(operations(doc).length).toBeGreaterThanOrEqual(18);
  });

  it("components carry no $schema or $id of their own (the document's dialect is JSON Schema 2020-12)", () => {
    for (const [name, s] of Object.entries(doc.components.schemas)) {
      expect(s, name).not.toHaveProperty("$schema");
      expect(s, name).not.toHaveProperty("$id");
    }
  });

  it("RelayInfo: what relayInfo() builds is valid, with every limit by name; a missing limit is not", () => {
    const info = JSON.parse(JSON.stringify(relayInfo({ name: "r", vapidPublicKey: null, host: null })));
    expect(component("RelayInfo").safeParse(info).success).toBe(true);
    expect(info.openapi).toBe("/openapi.json");
    delete info.limits.mailbox.max_body_bytes;
    expect(component("RelayInfo").safeParse(info).success).toBe(false);
  });

  it("ErrorBody: every code of ERROR_CODES is valid, an unknown one is not", () => {
    for (const code of ERROR_CODES) expect(component("ErrorBody").safeParse(httpErrorBody(code, "m")).success, code).toBe(true);
    expect(component("ErrorBody").safeParse({ error: { code: "new_code", message: "m" } }).success).toBe(false);
  });

  it("MailboxPage and StatusSnapshot: the builders' answers are valid, an extra field is not", () => {
    const page = buildPage([{ seq: 1, at: 10, until: 20, blob: new Uint8Array([1, 2]) }], 0, 10, 1);
    expect(component("MailboxPage").safeParse(page).success).toBe(true);
    expect(component("MailboxPage").safeParse({ ...page, extra: 1 }).success).toBe(false);
    const snapshot = { open: true, ...buildSnapshot([], [], Date.now()) };
    expect(component("StatusSnapshot").safeParse(snapshot).success).toBe(true);
  });

  it("query parameters are documented as the strings the relay reads (the mailbox page's after, limit, wait)", () => {
    const get = doc.paths["/minca/v1/mailbox/{topic}"].get as { parameters: Array<{ name: string; in: string; schema: { type: string } }> };
    expect(get.parameters.map((p) => [p.name, p.in, p.schema.type])).toEqual([
      ["after", "query", "string"],
      ["limit", "query", "string"],
      ["wait", "query", "string"],
    ]);
  });
});

describe("the admin API in the document", () => {
  it("the admin operation and docs/admin-api.md name every method supportedmethods answers", async () => {
    const { METHODS } = await import("../../../workers/admin-api");
    const { readFileSync } = await import("node:fs");
    const page = readFileSync(new URL("../../../docs/admin-api.md", import.meta.url), "utf8");
    const admin = JSON.stringify(
      Object.values(doc.paths).flatMap((item) =>
        Object.values(item as Record<string, { tags?: string[] }>).filter((op) => op?.tags?.includes("admin")),
      ),
    );
    expect(admin).toContain("nostr+json+rpc");
    expect(Object.keys(METHODS).length).toBeGreaterThan(10);
    for (const method of Object.keys(METHODS)) {
      expect(admin, method).toMatch(new RegExp(`\\b${method.replace(".", "\\.")}\\b`));
      expect(page, method).toContain(`\`${method}\``);
    }
  });
});
