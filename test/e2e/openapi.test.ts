// GET /openapi.json: the running relay publishes its HTTPS endpoints as an OpenAPI 3.1
// document generated from the zod schemas (server/openapi.ts), and its real answers, a success
// and an error of every operation, are what the document promises: a listed status, a listed
// content type, and a body valid under the schema given for them.
import { describe, expect, inject, it } from "vitest";
import { HostConnection, newAccount } from "../../clients/minca/host";
import { bytesToHex, randomBytes } from "../../shared/encoding";
import { codeRoom, codeSecret, newCode } from "../../shared/minca/code";
import { newSpace } from "../../shared/minca/space";
import { roomKeys } from "../../shared/passnote/room";
import { answerProblem, danglingRefs, operations, recordingFetch, templateOf, type Answer, type Doc } from "../helpers/openapi";
import { groupKey } from "../helpers/passnote";
import { TEST_PUSH_ALLOW } from "../helpers/relay-process";
import { TestSocket } from "../helpers/socket";
import { newUser } from "../helpers/tally";
import { nodeSubscription } from "../helpers/webpush-node";

const base = inject("relayUrl");
const ws = base.replace(/^http/, "ws");

/** Every route the Worker serves, as the document names them (test/worker/openapi.test.ts checks this list against the Worker's router). */
const ROUTES = [
  "GET /",
  "GET /openapi.json",
  "GET /healthz",
  "GET /status",
  "GET /status.json",
  "GET /metrics",
  "GET /favicon.ico",
  "POST /status/login",
  "POST /status/logout",
  "POST /",
  "POST /tally/v1/{npub}",
  "GET /tally/v1/{npub}",
  "GET /passnote/v2/{room}",
  "GET /minca/v1/rooms/{room}",
  "POST /minca/v1/mailbox/{topic}",
  "GET /minca/v1/mailbox/{topic}",
  "GET /minca/v1/mailbox/{topic}/items/{seq}",
  "POST /minca/v1/mailbox/{topic}/receivers",
  "DELETE /minca/v1/mailbox/{topic}/receivers/{id}",
  "POST /minca/v1/host/accounts",
  "GET /minca/v1/host/accounts/{did}",
  "POST /minca/v1/spaces/{id}/versions",
  "GET /minca/v1/spaces/{id}/versions",
];

async function getDoc(): Promise<{ res: Response; doc: Doc }> {
  const res = await fetch(`${base}/openapi.json`, { headers: { origin: "https://app.example" } });
  return { res, doc: (await res.json()) as Doc };
}

describe("GET /openapi.json", () => {
  it("is an OpenAPI 3.1 document naming every route, readable from any origin, its references all resolving", async () => {
    const { res, doc } = await getDoc();
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(doc.openapi).toBe("3.1.0");
    expect((doc as unknown as { info: { title: string; version: string } }).info).toMatchObject({
      title: "edge-relay",
      version: expect.any(String),
    });
    expect(operations(doc).sort()).toEqual([...ROUTES].sort());
    expect(danglingRefs(doc)).toEqual([]);
    // Every operation has a unique operationId and declares each of its path's parameters.
    const ids: string[] = [];
    for (const [template, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (method === "parameters") continue;
        ids.push((op as { operationId: string }).operationId);
        const params = [
          ...((item.parameters as unknown as Array<{ name: string; in: string }>) ?? []),
          ...((op.parameters as Array<{ name: string; in: string }>) ?? []),
        ];
        const declared = params.filter((p) => p.in === "path").map((p) => p.name);
        expect(declared.sort(), `${method} ${template}`).toEqual([...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort());
      }
    }
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("the relay's real answers, a success and an error of every operation, are valid under it", async () => {
    const { doc } = await getDoc();
    const answers: Answer[] = [];
    const rec = recordingFetch(answers);
    const json = (v: unknown) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(v) });

    // The relay's own documents.
    await rec(`${base}/`, { headers: { accept: "application/json" } });
    await rec(`${base}/`, { headers: { accept: "text/html" } });
    await rec(`${base}/openapi.json`);
    await rec(`${base}/healthz`);
    for (const p of ["/status", "/status.json", "/metrics"]) await rec(`${base}${p}`);
    await rec(`${base}/favicon.ico`);
    await rec(`${base}/status/login`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "token=x",
      redirect: "manual",
    });
    await rec(`${base}/status/logout`, { method: "POST", redirect: "manual" });
    // The admin API: this relay has neither ADMIN_TOKEN nor ADMIN_PUBKEYS, so 401 (its successes: test/e2e/admin-api.test.ts).
    const rpc = {
      method: "POST",
      headers: { "content-type": "application/nostr+json+rpc" },
      body: '{"method":"supportedmethods","params":[]}',
    };
    await rec(`${base}/`, rpc);
    await rec(`${base}/tally/v1/${newUser().npub}`, rpc);

    // WebSocket endpoints: a bad key, no upgrade, and (below) a real upgrade.
    const npub = newUser().npub;
    const passnoteRoom = roomKeys(groupKey()).roomId;
    const mincaRoom = codeRoom(codeSecret(newCode()));
    for (const [path, bad] of [
      [`/tally/v1/${npub}`, "/tally/v1/npub1nope"],
      [`/passnote/v2/${passnoteRoom}`, "/passnote/v2/short"],
      [`/minca/v1/rooms/${mincaRoom}`, "/minca/v1/rooms/Bnope"],
    ]) {
      await rec(`${base}${path}`);
      await rec(`${base}${bad}`);
      const s = await TestSocket.open(`${ws}${path}`);
      await s.next("challenge");
      s.ws.close();
    }

    // Mailbox: store, page, item, receivers; each with a refusal.
    const mb = `${base}/minca/v1/mailbox/${bytesToHex(randomBytes(12))}`;
    await rec(mb, { method: "POST", body: "an opaque item" });
    await rec(`${mb}?until=1`, { method: "POST", body: "x" });
    await rec(mb);
    await rec(`${mb}?limit=0`);
    await rec(`${base}/minca/v1/mailbox/short`);
    await rec(`${mb}/items/1`);
    await rec(`${mb}/items/999`);
    const sub = nodeSubscription(`${TEST_PUSH_ALLOW}:9/push/${bytesToHex(randomBytes(8))}`);
    const added = await rec(`${mb}/receivers`, json({ endpoint: sub.endpoint, keys: sub.keys }));
    const { id } = (await added.json()) as { id: string };
    await rec(`${mb}/receivers`, json({ endpoint: sub.endpoint, keys: {} }));
    await rec(`${mb}/receivers/${id}`, { method: "DELETE" });
    await rec(`${mb}/receivers/${id}`, { method: "DELETE" });

    // Minca host: connect, status, pass a space (a POST of versions), read its log; and refusals.
    const alice = await newAccount();
    const host = new HostConnection(alice, base, { fetch: rec });
    await host.connect(0, "Alice");
    await rec(`${base}/minca/v1/host/accounts`, json({ v: 1, kind: "nope" }));
    await host.status();
    await rec(`${base}/minca/v1/host/accounts/${encodeURIComponent(alice.root.did)}`);
    const pub = newSpace({ founders: [alice.root.did], visibility: "public" });
    const priv = newSpace({ founders: [alice.root.did], visibility: "private" });
    await host.pass(pub);
    await host.pass(priv);
    await rec(`${base}/minca/v1/spaces/${pub.id}/versions`, { method: "POST", body: "[]" });
    await host.fetchLog(pub);
    await rec(`${base}/minca/v1/spaces/${priv.id}/versions`);

    const problems = answers.map((a) => answerProblem(doc, a)).filter((p) => p !== null);
    expect(problems).toEqual([]);

    // Every operation was answered with a success (WebSocket upgrades: opened above) and, where
    // the document lists one, an error (the operator pages' 401: test/worker/openapi.test.ts, as
    // this relay has no ADMIN_TOKEN).
    const seen = (ok: boolean) =>
      new Set(answers.filter((a) => a.status < 400 === ok).map((a) => `${a.method} ${templateOf(doc, a.path)}`));
    const sockets = ROUTES.filter((r) => /\/(tally|passnote|minca\/v1\/rooms)\//.test(r));
    const operator = ["GET /status", "GET /status.json", "GET /metrics"];
    const adminApi = ["POST /", "POST /tally/v1/{npub}"];
    expect(ROUTES.filter((r) => !seen(true).has(r) && !sockets.includes(r) && !adminApi.includes(r))).toEqual([]);
    const noErrors = [
      "GET /",
      "GET /openapi.json",
      "GET /healthz",
      "GET /favicon.ico",
      "POST /status/login",
      "POST /status/logout",
      ...operator,
    ];
    expect(ROUTES.filter((r) => !seen(false).has(r) && !noErrors.includes(r))).toEqual([]);
  });
});
