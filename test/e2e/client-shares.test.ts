// One client cannot fill a total, one key cannot fill the Tally total, and a client cannot start
// objects for a few hundred made-up names a second (docs/hostile.md, "Shares of a total" and
// "Requests that start objects"), against a relay process of its own started with its totals
// lowered (16 MiB for Tally and mailboxes, so a share holds a few databases; 4 MiB for the host, so a
// share holds a few space databases)
// and a trusted client address header (`x-real-ip`), so each client is told apart.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HostConnection, HostError, makeSpace, newAccount, writeVersion } from "../../clients/minca/host";
import { bytesToHex, randomBytes } from "../../shared/encoding";
import { COMMON_LIMITS, STORAGE_LIMITS } from "../../shared/limits";
import { rowBytes } from "../../shared/storage";
import { startRelay, type RelayProcess } from "../helpers/relay-process";
import { newUser, opaqueEnvelope, rawRegistered } from "../helpers/tally";

let relay: RelayProcess;
const TOTAL = 1024 * 1024;
const BIG_TOTAL = 16 * TOTAL;
const HOST_TOTAL = 4 * TOTAL;

beforeAll(async () => {
  relay = await startRelay({
    env: { STORAGE_MAILBOX_BYTES: "16MiB", STORAGE_TALLY_BYTES: "16MiB", STORAGE_HOST_BYTES: "4MiB", TRUSTED_PROXY_HEADER: "x-real-ip" },
  });
});

afterAll(async () => {
  await relay?.stop();
});

const topic = () => `${relay.url}/minca/v1/mailbox/shares-${bytesToHex(randomBytes(12))}`;
const from = (ip: string) => ({ "x-real-ip": ip });

describe("storage.client_share: one client cannot fill a total", () => {
  it("mailbox: one address posting to fresh topics stops at its share with 429 rate_limited (retry_after_ms), each topic's database charged; the total is not full: another address still stores", async () => {
    const share = BIG_TOTAL * STORAGE_LIMITS.client_share;
    const body = "a".repeat(4_000);
    // each POST to a fresh topic costs its row and the topic's database (storage.database_bytes_mailbox)
    const cost = rowBytes(body.length) + STORAGE_LIMITS.database_bytes_mailbox;
    let stored = 0;
    let refused: Response | undefined;
    for (let i = 0; i < 2 * (share / cost) && !refused; i++) {
      const r = await fetch(topic(), { method: "POST", body, headers: from("203.0.113.10") });
      if (r.status === 201) stored++;
      else refused = r;
    }
    expect(refused?.status).toBe(429);
    const err = ((await refused!.json()) as any).error;
    expect(err.code).toBe("rate_limited");
    expect(err.retry_after_ms).toBeGreaterThan(0);
    expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(stored * cost).toBeLessThanOrEqual(share);
    expect(stored).toBeGreaterThanOrEqual(Math.floor(share / cost) - 1);
    // Another client stores; the first is still refused.
    expect((await fetch(topic(), { method: "POST", body, headers: from("203.0.113.11") })).status).toBe(201);
    expect((await fetch(topic(), { method: "POST", body, headers: from("203.0.113.10") })).status).toBe(429);
  });

  it("storage.client_share is reserved at the check: 40 concurrent POSTs of 60 KB to fresh topics from one address store no more than its share", async () => {
    const share = BIG_TOTAL * STORAGE_LIMITS.client_share;
    const body = "c".repeat(60_000);
    const cost = rowBytes(body.length) + STORAGE_LIMITS.database_bytes_mailbox;
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => fetch(topic(), { method: "POST", body, headers: from("203.0.113.60") })),
    );
    const stored = answers.filter((r) => r.status === 201).length;
    for (const r of answers) await r.body?.cancel();
    expect(answers.every((r) => r.status === 201 || r.status === 429)).toBe(true);
    expect(stored).toBeGreaterThan(0);
    expect(stored * cost).toBeLessThanOrEqual(share);
  });

  it("host: one address writing versions stops at its share of the host's total; another address's account still stores", async () => {
    const connect = async (ip: string) => {
      const withIp = ((input: RequestInfo | URL, init?: RequestInit) =>
        fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...from(ip) } })) as typeof fetch;
      const account = await newAccount();
      const host = new HostConnection(account, relay.url, { fetch: withIp, rateRetries: 0 }); // the share's 429 at once
      await host.connect();
      const space = makeSpace(account, "public");
      expect(await host.pass(space)).toMatchObject({ accepted: true });
      return { account, host, space };
    };
    const a = await connect("203.0.113.20");
    const text = "h".repeat(4_000);
    let status = 0;
    let n = 0;
    for (; n < 64; n++) {
      const v = await writeVersion(a.account, a.space, { collection: "std.note", key: `k${n}`, body: { text } });
      try {
        expect((await a.host.post(a.space.id, [v]))[0]).toMatchObject({ accepted: true });
      } catch (err) {
        if (!(err instanceof HostError)) throw err;
        status = err.status;
        expect(err.code).toBe("rate_limited");
        break;
      }
    }
    expect(status).toBe(429);
    expect(n * rowBytes(text.length)).toBeLessThanOrEqual(HOST_TOTAL * STORAGE_LIMITS.client_share);
    const b = await connect("203.0.113.21");
    const v = await writeVersion(b.account, b.space, { collection: "std.note", key: "k", body: { text } });
    expect((await b.host.post(b.space.id, [v]))[0]).toMatchObject({ accepted: true });
  });
});

describe("storage.sender_share: one key cannot fill the Tally total", () => {
  it("one key sending to many fresh npubs is stored up to its share, then queued not_stored; the total is not full: another key still stores", async () => {
    const sender = newUser();
    const s = await rawRegistered(relay.url, sender);
    const statuses: string[] = [];
    let cost = 0;
    for (let i = 0; i < 80; i++) {
      const env = opaqueEnvelope(sender, newUser(), `share-${i}`);
      // a first envelope to a user, stored: its row, the sender's contact row and the recipient's database
      cost = rowBytes(JSON.stringify(env).length) + rowBytes(64) + STORAGE_LIMITS.database_bytes_tally;
      s.send({ type: "queue_peer_envelope", envelope: env });
      const answer = await s.next("queued");
      statuses.push(answer.status);
    }
    const stored = statuses.filter((x) => x === "stored").length;
    // the sender's own database is charged with its first envelope
    const share = BIG_TOTAL * STORAGE_LIMITS.sender_share - STORAGE_LIMITS.database_bytes_tally;
    expect(stored).toBeGreaterThan(0);
    expect(stored * cost).toBeLessThanOrEqual(share + cost);
    expect(stored).toBeGreaterThanOrEqual(Math.floor(share / cost) - 1);
    expect(statuses.slice(stored).every((x) => x === "not_stored")).toBe(true);
    expect(s.ofType("error")).toEqual([]);
    // Another key stores.
    const other = newUser();
    const o = await rawRegistered(relay.url, other);
    o.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(other, newUser(), "other-1") });
    expect((await o.next("queued")).status).toBe("stored");
    s.ws.close();
    o.ws.close();
  });
});

describe("storage.client_share of the Tally total: one address cannot fill it with fresh keys", () => {
  it("many fresh keys from one address are stored up to the address's share, then queued not_stored; an honest user at another address still stores", async () => {
    const ip = { "x-real-ip": "203.0.113.40" };
    const share = BIG_TOTAL * STORAGE_LIMITS.client_share;
    // each fresh key's first envelope to a fresh npub, stored: its row, the sender's contact row, two databases
    const perKey = 2 * STORAGE_LIMITS.database_bytes_tally + rowBytes(64) + rowBytes(300);
    const statuses: string[] = [];
    for (let k = 0; k < Math.ceil((2 * share) / perKey); k++) {
      const key = newUser();
      const s = await rawRegistered(relay.url, key, { headers: ip });
      s.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(key, newUser(), `fresh-${k}`) });
      statuses.push((await s.next("queued")).status);
      s.ws.close();
    }
    const stored = statuses.filter((x) => x === "stored").length;
    // each key alone is far within its own share (storage.sender_share): the address's share stops them
    expect(perKey).toBeLessThan(BIG_TOTAL * STORAGE_LIMITS.sender_share);
    expect(stored).toBeGreaterThan(0);
    expect(stored * perKey).toBeLessThanOrEqual(share + perKey);
    expect(statuses.slice(stored).every((x) => x === "not_stored")).toBe(true);
    expect(statuses.at(-1)).toBe("not_stored");
    // An honest user at another address stores.
    const honest = newUser();
    const h = await rawRegistered(relay.url, honest, { headers: { "x-real-ip": "203.0.113.41" } });
    h.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(honest, newUser(), "honest-1") });
    expect((await h.next("queued")).status).toBe("stored");
    h.ws.close();
  });
});

describe("common.client_object_requests_*: requests that start fresh objects", () => {
  it("one address asking for made-up topics is answered 429 rate_limited past its bucket across all names; another address is served", async () => {
    const ip = "203.0.113.30";
    // Made-up names as fast as this machine sends them: short ones (400 before any object, so the
    // burst is spent quickly) and well-formed ones (each would start a topic's object).
    const madeUp = (i: number) => (i % 4 === 0 ? topic() : `${relay.url}/minca/v1/mailbox/${bytesToHex(randomBytes(4))}`);
    let sent = 0;
    let limited: Response | undefined;
    const cap = 8 * COMMON_LIMITS.client_object_requests_burst;
    while (!limited && sent < cap) {
      const batch = await Promise.all(Array.from({ length: 64 }, (_, i) => fetch(madeUp(i), { headers: from(ip) })));
      sent += batch.length;
      // a well-formed name refused: its object never started
      limited = batch.find((r, i) => r.status === 429 && i % 4 === 0);
      for (const r of batch) if (r !== limited) await r.body?.cancel();
    }
    expect(limited?.status).toBe(429);
    expect(sent).toBeGreaterThanOrEqual(COMMON_LIMITS.client_object_requests_burst);
    expect(((await limited!.json()) as any).error.code).toBe("rate_limited");
    expect(Number(limited!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await fetch(topic(), { headers: from("203.0.113.31") })).status).toBe(200);
  });
});
