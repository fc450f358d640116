// The OpenAPI document (server/openapi.ts) against the Worker's own router: every
// route the app registers is a path of the document, with its methods, and every path of the
// document is a route; and the operator pages' 401 (ADMIN_TOKEN set) is an answer it promises.
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../workers/app";
import { openApiDocument } from "../../server/openapi";
import { answerProblem, METHODS, type Doc } from "../helpers/openapi";
import { ownAddress } from "../helpers/client-address";

const doc = openApiDocument() as unknown as Doc;

/** Hono's `/a/:b{[0-9]+}` as OpenAPI's `/a/{b}`. */
const template = (path: string) => path.replace(/:(\w+)(\{(?:[^{}]|\{[^{}]*\})*\})?/g, "{$1}");

describe("the OpenAPI document and the Worker's router", () => {
  it("names every route the Worker registers, with its methods, and no path the Worker lacks", () => {
    const routes = app.routes.filter((r) => !r.path.includes("*"));
    const missing: string[] = [];
    for (const r of routes) {
      const item = doc.paths[template(r.path)];
      if (!item) missing.push(`${r.method} ${r.path}`);
      else if (r.method !== "ALL" && !item[r.method.toLowerCase()]) missing.push(`${r.method} ${r.path}`);
    }
    expect(missing).toEqual([]);
    const routed = new Set(routes.map((r) => template(r.path)));
    expect(Object.keys(doc.paths).filter((p) => !routed.has(p))).toEqual([]);
    // A path served only through app.all (the WebSocket upgrades) documents GET, the one method it takes.
    for (const [p, item] of Object.entries(doc.paths)) expect(METHODS.filter((m) => item[m]).length, p).toBeGreaterThan(0);
  });

  it("the operator pages' 401, with ADMIN_TOKEN set, is an answer the document promises", async () => {
    const headers = { "cf-connecting-ip": ownAddress() };
    for (const path of ["/status", "/status.json", "/metrics"]) {
      const res = await app.fetch(new Request(`http://relay.test${path}`, { headers }), { ...env, ADMIN_TOKEN: "a-token" });
      expect(res.status).toBe(401);
      const a = { method: "GET", path, status: res.status, contentType: res.headers.get("content-type"), body: await res.text() };
      expect(answerProblem(doc, a)).toBeNull();
    }
  });

  it("every path answers a method it does not list with 405, naming the ones it does in Allow (GET implies HEAD)", async () => {
    const example: Record<string, string> = {
      npub: "npub1x",
      room: "b" + "a".repeat(52),
      topic: "A".repeat(43),
      seq: "1",
      id: "b" + "a".repeat(52),
      did: "did:key:zDnaexample",
    };
    const wrong: string[] = [];
    for (const [t, item] of Object.entries(doc.paths)) {
      const path = t.replace(/\{(\w+)\}/g, (_m, name: string) => example[name]);
      const listed = METHODS.filter((m) => item[m]).map((m) => m.toUpperCase());
      const allow = listed.flatMap((m) => (m === "GET" ? ["GET", "HEAD"] : [m])).join(", ");
      for (const method of ["PUT", "PATCH", ...["GET", "POST", "DELETE"].filter((m) => !listed.includes(m))]) {
        const res = await SELF.fetch(`http://relay.test${path}`, { method });
        const got = `${res.status} ${res.headers.get("allow")}`;
        if (got !== `405 ${allow}`) wrong.push(`${method} ${t}: ${got}, not 405 ${allow}`);
        await res.body?.cancel();
      }
      if (listed.includes("GET")) {
        const head = await SELF.fetch(`http://relay.test${path}`, { method: "HEAD" });
        if (head.status === 405) wrong.push(`HEAD ${t}: 405, though Allow names it`);
        await head.body?.cancel();
      }
    }
    expect(wrong).toEqual([]);
  });
});
