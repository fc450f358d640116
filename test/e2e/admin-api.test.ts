// The admin API through a real relay (NIP-86 JSON-RPC over HTTP, authorized by NIP-98 from a key in
// ADMIN_PUBKEYS or by the ADMIN_TOKEN): every method, its effect on the relay, its log line and
// counter.
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { schnorr } from "@noble/curves/secp256k1.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bytesToHex, utf8Encode } from "../../shared/encoding";
import { nip98Header } from "../../server/nostr/nip98";
import { freePort, startRelay, type RelayProcess } from "../helpers/relay-process";
import { newUser, opaqueEnvelope, rawRegistered, type User } from "../helpers/tally";
import { waitFor } from "../helpers/wait";
import { TallyClient, TallyRelayError } from "../../clients/tally/index";
import { CLOSE_CODES } from "../../shared/limits";

const TOKEN = "e2e-admin-token";
const adminKey = schnorr.utils.randomSecretKey();
let relay: RelayProcess;

beforeAll(async () => {
  // NIP-98 needs PUBLIC_URL: the u tag must name the relay as it says it is reached.
  const port = await freePort();
  relay = await startRelay({
    port,
    env: {
      ADMIN_TOKEN: TOKEN,
      ADMIN_PUBKEYS: bytesToHex(schnorr.getPublicKey(adminKey)),
      TRUSTED_PROXY_HEADER: "x-real-ip",
      PUBLIC_URL: `http://127.0.0.1:${port}`,
    },
  });
});

afterAll(async () => {
  await relay?.stop();
});

type Auth = "nip98" | "token" | { key: Uint8Array } | { bearer: string } | "none";

async function call(method: string, params: unknown[] = [], auth: Auth = "nip98", path = "/"): Promise<{ status: number; body: any }> {
  const url = `${relay.url}${path}`;
  const text = JSON.stringify({ method, params });
  const body = utf8Encode(text);
  const headers: Record<string, string> = { "content-type": "application/nostr+json+rpc", "x-real-ip": "192.0.2.1" };
  if (auth === "nip98") headers.authorization = nip98Header(adminKey, url, "POST", body);
  else if (auth === "token") headers.authorization = `Bearer ${TOKEN}`;
  else if (auth !== "none" && "key" in auth) headers.authorization = nip98Header(auth.key, url, "POST", body);
  else if (auth !== "none") headers.authorization = `Bearer ${auth.bearer}`;
  const res = await fetch(url, { method: "POST", headers, body: text });
  return { status: res.status, body: await res.json() };
}

/** A WebSocket to the Tally endpoint: its first frame and its close code. */
function firstFrameAndClose(user: User): Promise<{ frame: any; code: number }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${relay.url.replace(/^http/, "ws")}/tally/v1/${user.npub}`);
    let frame: any;
    ws.onmessage = (ev) => {
      frame ??= JSON.parse(String(ev.data));
    };
    ws.onclose = (ev) => resolve({ frame, code: ev.code });
    ws.onerror = () => {
      if (frame === undefined) reject(new Error("the upgrade failed"));
    };
  });
}

/** The status of a WebSocket upgrade to the Tally endpoint, and its body when refused. */
function upgradeStatus(user: User): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${relay.url}/tally/v1/${user.npub}`, {
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version": "13",
        "x-real-ip": "192.0.2.2",
      },
    });
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: "" });
    });
    req.on("response", (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the admin API (NIP-86) through the relay", () => {
  it("authorization: a NIP-98 event by a key in ADMIN_PUBKEYS or the ADMIN_TOKEN; anything else 401; another Content-Type 415", async () => {
    expect(await call("supportedmethods")).toMatchObject({
      status: 200,
      body: { result: expect.arrayContaining(["banpubkey", "listblockedips", "edge.liststorageholders"]) },
    });
    expect((await call("supportedmethods", [], "token")).status).toBe(200);
    expect((await call("supportedmethods", [], "none")).status).toBe(401);
    expect((await call("supportedmethods", [], { key: schnorr.utils.randomSecretKey() })).body.error.code).toBe("auth_failed");
    expect((await call("supportedmethods", [], { bearer: "nope" })).status).toBe(401);
    const other = await fetch(`${relay.url}/`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      body: "{}",
    });
    expect(other.status).toBe(415);
    // The Tally endpoint's URL answers too.
    const npub = newUser().npub;
    expect(await call("supportedmethods", [], "nip98", `/tally/v1/${npub}`)).toMatchObject({
      status: 200,
      body: { result: expect.any(Array) },
    });
    expect((await call("nosuchmethod")).body).toEqual({ error: expect.stringMatching(/unknown method/) });
  });

  it("banpubkey: the banned npub's stored envelopes are purged, its upgrade is refused on the socket (error banned, close 1008), envelopes to it are not_stored; listbannedpubkeys names it; unbanpubkey lets it back with an empty queue", async () => {
    const alice = newUser();
    const bob = newUser();
    const b = await rawRegistered(relay.url, bob);
    b.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(bob, alice, "for-alice-1") });
    b.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(bob, alice, "for-alice-2") });
    await waitFor(() => b.ofType("queued").length === 2, { what: "queued" });
    expect(b.ofType("queued").map((q: any) => q.status)).toEqual(["stored", "stored"]);

    expect(await call("banpubkey", [alice.npub, "spam"])).toEqual({ status: 200, body: { result: true } });
    expect((await call("listbannedpubkeys")).body.result).toContainEqual({ pubkey: alice.hex, reason: "spam" });
    expect((await upgradeStatus(alice)).status).toBe(101);
    const refused = await firstFrameAndClose(alice);
    expect(refused).toMatchObject({ frame: { type: "error", code: "banned" }, code: CLOSE_CODES.policy });
    // Envelopes to the banned npub are not stored (its object keeps the ban).
    b.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(bob, alice, "while-banned") });
    await waitFor(() => b.ofType("queued").length === 3, { what: "queued" });
    expect(b.ofType("queued")[2]).toMatchObject({ id: "while-banned", status: "not_stored" });

    expect((await call("unbanpubkey", [alice.hex])).body).toEqual({ result: true });
    expect((await call("listbannedpubkeys")).body.result).not.toContainEqual(expect.objectContaining({ pubkey: alice.hex }));
    // Back: it registers, its queue empty (the two stored before the ban were purged, the one
    // sent while banned never kept), and envelopes to it are stored again.
    const a = await rawRegistered(relay.url, alice);
    expect(a.ofType("registered")[0].queued).toBe(0);
    a.close();
    await a.closed;
    b.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(bob, alice, "after-unban") });
    await waitFor(() => b.ofType("queued").length === 4, { what: "queued" });
    expect(b.ofType("queued")[3]).toMatchObject({ id: "after-unban", status: "stored" });
    b.close();
  });

  it("banpubkey: the Tally SDK of a key the relay's lists already ban sees banned: connect() rejects with TallyRelayError banned and stops retrying", async () => {
    const erin = newUser();
    expect((await call("banpubkey", [erin.npub, "spam"])).body).toEqual({ result: true });
    const client = new TallyClient({ relayUrl: relay.url.replace(/^http/, "ws"), secretKey: erin.secretKey, store: "memory" });
    try {
      const outcome = await Promise.race([
        client.connect().then(
          () => "connected",
          (e) => e,
        ),
        new Promise((r) => setTimeout(() => r("still retrying after 15 s"), 15_000)),
      ]);
      expect(outcome).toBeInstanceOf(TallyRelayError);
      expect(outcome).toMatchObject({ code: "banned", closeCode: CLOSE_CODES.policy });
    } finally {
      client.close();
      await call("unbanpubkey", [erin.hex]);
    }
  });

  it("allowpubkey: once any key is allowed, only allowed ones may connect (refused on the socket: not_allowed, 1008); listallowedpubkeys, unallowpubkey", async () => {
    const carol = newUser();
    const dave = newUser();
    expect((await call("allowpubkey", [carol.npub, "friend"])).body).toEqual({ result: true });
    expect((await call("listallowedpubkeys")).body.result).toEqual([{ pubkey: carol.hex, reason: "friend" }]);
    expect(await firstFrameAndClose(dave)).toMatchObject({ frame: { type: "error", code: "not_allowed" }, code: CLOSE_CODES.policy });
    expect((await upgradeStatus(carol)).status).toBe(101);
    expect((await call("unallowpubkey", [carol.npub])).body).toEqual({ result: true });
    expect((await call("listallowedpubkeys")).body.result).toEqual([]);
    expect((await upgradeStatus(dave)).status).toBe(101);
  });

  it("blockip: the address (as the relay sees it) gets 403 blocked on every route but the health probe; listblockedips, unblockip; bad params are an error", async () => {
    expect((await call("blockip", ["203.0.113.9", "abuse"])).body).toEqual({ result: true });
    expect((await call("listblockedips")).body.result).toEqual([{ ip: "203.0.113.9", reason: "abuse" }]);
    // the health probe is answered before the block list (docs/operating.md)
    expect((await fetch(`${relay.url}/healthz`, { headers: { "x-real-ip": "203.0.113.9" } })).status).toBe(200);
    for (const path of ["/", "/minca/v1/mailbox/" + "Z".repeat(43)]) {
      const res = await fetch(`${relay.url}${path}`, { headers: { "x-real-ip": "203.0.113.9" } });
      expect(res.status, path).toBe(403);
      expect(((await res.json()) as any).error.code).toBe("blocked");
    }
    expect((await fetch(`${relay.url}/healthz`, { headers: { "x-real-ip": "203.0.113.10" } })).status).toBe(200);
    expect((await call("unblockip", ["203.0.113.9"])).body).toEqual({ result: true });
    expect((await fetch(`${relay.url}/healthz`, { headers: { "x-real-ip": "203.0.113.9" } })).status).toBe(200);
    expect((await call("blockip", ["not an address"])).body).toEqual({ error: expect.stringMatching(/params\[0\]/) });
  });

  it("unblockip takes exactly what listblockedips prints: an IPv6 address blocked by its /64", async () => {
    expect((await call("blockip", ["2001:db8:1:2::5", "v6"])).body).toEqual({ result: true });
    const listed = (await call("listblockedips")).body.result as Array<{ ip: string }>;
    expect(listed).toEqual([{ ip: "2001:db8:1:2::/64", reason: "v6" }]);
    expect((await fetch(`${relay.url}/`, { headers: { "x-real-ip": "2001:db8:1:2::77" } })).status).toBe(403);
    expect((await call("unblockip", [listed[0].ip])).body).toEqual({ result: true });
    expect((await call("listblockedips")).body.result).toEqual([]);
    expect((await fetch(`${relay.url}/`, { headers: { "x-real-ip": "2001:db8:1:2::77" } })).status).toBe(200);
    expect((await call("unblockip", ["2001:db8:1:2::/48"])).body).toEqual({ error: expect.stringMatching(/params\[0\]/) });
  });

  it("NIP-98: each event is accepted once (a captured header sent again is 401); an event whose u names another host is refused though the request's Host says so", async () => {
    const url = `${relay.url}/`;
    const text = JSON.stringify({ method: "supportedmethods", params: [] });
    const headers = {
      "content-type": "application/nostr+json+rpc",
      "x-real-ip": "192.0.2.5",
      authorization: nip98Header(adminKey, url, "POST", utf8Encode(text)),
    };
    expect((await fetch(url, { method: "POST", headers, body: text })).status).toBe(200);
    expect((await fetch(url, { method: "POST", headers, body: text })).status).toBe(401);
    // signed for another relay, sent here with that relay's name as Host
    const other = nip98Header(adminKey, "http://other-relay.example/", "POST", utf8Encode(text));
    const res = await new Promise<number>((resolve, reject) => {
      const req = request(url, {
        method: "POST",
        headers: {
          host: "other-relay.example",
          "content-type": "application/nostr+json+rpc",
          "x-real-ip": "192.0.2.5",
          authorization: other,
        },
      });
      req.on("response", (r) => {
        r.resume();
        resolve(r.statusCode ?? 0);
      });
      req.on("error", reject);
      req.end(text);
    });
    expect(res).toBe(401);
  });

  it("blockip is decided by route: a POST to another route sent as application/nostr+json+rpc is blocked too (403); the admin API's routes are not", async () => {
    expect((await call("blockip", ["203.0.113.77", "abuse"])).body).toEqual({ result: true });
    const item = await fetch(`${relay.url}/minca/v1/mailbox/admin-type-${Date.now()}-topic`, {
      method: "POST",
      body: "spam",
      headers: { "x-real-ip": "203.0.113.77", "content-type": "application/nostr+json+rpc" },
    });
    expect(item.status).toBe(403);
    expect(((await item.json()) as any).error.code).toBe("blocked");
    // the admin API itself still answers the blocked address (401 without credentials, not 403)
    const admin = await fetch(`${relay.url}/`, {
      method: "POST",
      body: JSON.stringify({ method: "supportedmethods", params: [] }),
      headers: { "x-real-ip": "203.0.113.77", "content-type": "application/nostr+json+rpc" },
    });
    expect(admin.status).toBe(401);
    expect((await call("unblockip", ["203.0.113.77"])).body).toEqual({ result: true });
  });

  it("blockip closes the blocked address's open sockets (1008); another address's socket stays open", async () => {
    const blocked = await rawRegistered(relay.url, newUser(), { headers: { "x-real-ip": "203.0.113.78" } });
    const other = await rawRegistered(relay.url, newUser(), { headers: { "x-real-ip": "203.0.113.79" } });
    expect((await call("blockip", ["203.0.113.78", "abuse"])).body).toEqual({ result: true });
    expect(await blocked.closed).toBe(1008);
    other.send({ type: "ping" });
    await other.next("pong");
    expect(other.closeCode).toBeUndefined();
    expect((await call("unblockip", ["203.0.113.78"])).body).toEqual({ result: true });
    other.ws.close();
  });

  it("banpubkey purges the envelopes the banned key sent that wait in other users' queues", async () => {
    const spammer = newUser();
    const victim = newUser();
    const s = await rawRegistered(relay.url, spammer);
    for (let i = 0; i < 5; i++) {
      s.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(spammer, victim, `spam-${i}`) });
      expect((await s.next("queued")).status).toBe("stored");
    }
    expect((await call("banpubkey", [spammer.npub, "spam"])).body).toEqual({ result: true });
    const v = await rawRegistered(relay.url, victim);
    expect(v.ofType("registered")[0].queued).toBe(0);
    v.ws.close();
  });

  it("edge.blocktopic: a blocked topic answers 403; edge.listblockedtopics, edge.unblocktopic; edge.liststorageholders lists the largest holders per stored kind", async () => {
    const topic = `admin-e2e-topic-${Date.now()}`;
    const url = `${relay.url}/minca/v1/mailbox/${topic}`;
    expect((await fetch(url, { method: "POST", body: "x".repeat(5000) })).status).toBe(201);
    const holders = await call("edge.liststorageholders", [5]);
    expect(holders.body.result.mailbox.length).toBeGreaterThan(0);
    expect(holders.body.result.mailbox[0]).toMatchObject({ holder: expect.stringMatching(/^[0-9a-f]{64}$/), bytes: expect.any(Number) });
    // Every listed holder is named so another method can act on it: a topic is what edge.purgetopic takes.
    const listed = holders.body.result.mailbox.find((h: { name: string }) => h.name === topic);
    expect(listed).toMatchObject({ name: topic, bytes: expect.any(Number) });
    expect((await call("edge.purgetopic", [listed.name])).body).toEqual({ result: { purged: 1 } });
    expect((await fetch(url, { method: "POST", body: "x".repeat(5000) })).status).toBe(201);
    expect(Object.keys(holders.body.result).sort()).toEqual(["host", "mailbox", "tally"]);

    expect((await call("edge.blocktopic", [topic, "abuse"])).body).toEqual({ result: true });
    expect((await call("edge.listblockedtopics")).body.result).toContainEqual({ topic, reason: "abuse" });
    const blocked = await fetch(url);
    expect([blocked.status, ((await blocked.json()) as any).error.code]).toEqual([403, "blocked"]);
    expect((await call("edge.unblocktopic", [topic])).body).toEqual({ result: true });
    expect((await fetch(url)).status).toBe(200);
  });

  it("edge.purgetopic: every item of the topic is deleted (the count answered) and the topic takes new items", async () => {
    const topic = `admin-e2e-purge-${Date.now()}`;
    const url = `${relay.url}/minca/v1/mailbox/${topic}`;
    for (let i = 0; i < 3; i++) expect((await fetch(url, { method: "POST", body: `item ${i}` })).status).toBe(201);
    expect(((await (await fetch(url)).json()) as any).items).toHaveLength(3);
    expect((await call("edge.purgetopic", [topic])).body).toEqual({ result: { purged: 3 } });
    expect(((await (await fetch(url)).json()) as any).items).toEqual([]);
    expect((await call("edge.purgetopic", ["short"])).body).toEqual({ error: expect.stringMatching(/params\[0\]/) });
    expect((await fetch(url, { method: "POST", body: "after" })).status).toBe(201);
    expect((await call("supportedmethods")).body.result).toContain("edge.purgetopic");
  });

  it("every admin action is one JSON log line and a counter in /metrics", async () => {
    await call("listblockedips");
    const metrics = await (
      await fetch(`${relay.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}`, "x-real-ip": "192.0.2.1" } })
    ).text();
    expect(metrics).toMatch(/^edge_relay_admin_actions_total\{method="banpubkey",outcome="ok"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^edge_relay_admin_actions_total\{method="listblockedips",outcome="ok"\} [1-9]\d*$/m);
    await waitFor(() => relay.output().includes('"msg":"admin action"'), { what: "an admin action log line" });
    const line = relay
      .output()
      .split("\n")
      .find((l) => l.includes('"msg":"admin action"') && l.includes('"method":"banpubkey"'))!;
    const json = JSON.parse(line.slice(line.indexOf("{")));
    expect(json).toMatchObject({
      level: "info",
      method: "banpubkey",
      outcome: "ok",
      by: bytesToHex(schnorr.getPublicKey(adminKey)),
      request_id: expect.any(String),
    });
  });

  it("every method supportedmethods lists is called by an end-to-end test (this file or admin-accounts.test.ts)", async () => {
    const here = ["admin-api.test.ts", "admin-accounts.test.ts"].map((f) => readFileSync(new URL(f, import.meta.url), "utf8")).join("\n");
    const methods: string[] = (await call("supportedmethods")).body.result;
    expect(methods.length).toBeGreaterThan(10);
    expect(methods.filter((m) => !here.includes(`call("${m}"`))).toEqual([]);
  });
});
