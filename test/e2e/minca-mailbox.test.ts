// Minca mailboxes over HTTPS and their Web Push wakes (docs/mailbox.md, the Minca protocol §4.2, §4.4),
// against the running relay, with a real push service on loopback that checks the VAPID JWT and
// decrypts each wake with an independent implementation (Node's crypto).
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MailboxClient, MailboxError } from "../../clients/mailbox/index";
import { LocalPushService } from "../helpers/push-service";
import { sleep, waitFor } from "../helpers/wait";

const relay = inject("relayUrl");
const base = `${relay}/minca/v1/mailbox`;
let n = 0;
const newTopic = () => `e2e_${Date.now().toString(36)}_${(++n).toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
const b64u = (b: Uint8Array) => Buffer.from(b).toString("base64url");

async function post(topic: string, body: BodyInit = "hi", query = ""): Promise<Response> {
  return fetch(`${base}/${topic}${query}`, { method: "POST", body, headers: { "content-type": "application/octet-stream" } });
}
async function page(topic: string, query = ""): Promise<any> {
  const res = await fetch(`${base}/${topic}${query}`);
  expect(res.status).toBe(200);
  return res.json();
}
async function errorOf(res: Response): Promise<string> {
  return ((await res.json()) as any).error.code;
}

describe("the Minca protocol §4.2, docs/mailbox.md: a mailbox fetched over HTTPS", () => {
  it("POST answers 201 { seq, until }; GET pages oldest first with next, more and oldest_seq", async () => {
    const topic = newTopic();
    for (let i = 1; i <= 5; i++) {
      const res = await post(topic, new Uint8Array([i]));
      expect(res.status).toBe(201);
      expect(((await res.json()) as any).seq).toBe(i);
    }
    const seen: number[] = [];
    let after = 0;
    for (;;) {
      const p = await page(topic, `?after=${after}&limit=2`);
      expect(p.oldest_seq).toBe(1);
      for (const it of p.items) {
        seen.push(it.seq);
        expect(Buffer.from(it.blob, "base64url")).toEqual(Buffer.from([it.seq]));
        expect(it.until).toBeGreaterThan(it.at);
      }
      after = p.next;
      if (!p.more) break;
    }
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect(after).toBe(5);
    // reading never deletes
    expect((await page(topic)).items).toHaveLength(5);
  });

  it("?wait= long-polls: an empty answer is held open and answered as soon as an item arrives", async () => {
    const topic = newTopic();
    const t0 = Date.now();
    const waiting = page(topic, "?wait=10");
    await sleep(300);
    await post(topic, "wake up");
    const p = await waiting;
    expect(p.items.map((i: any) => Buffer.from(i.blob, "base64url").toString())).toEqual(["wake up"]);
    expect(Date.now() - t0).toBeLessThan(5_000);
    // and with nothing new, it answers empty when the wait is over
    const t1 = Date.now();
    const empty = await page(topic, `?after=${p.next}&wait=1`);
    expect(empty).toEqual({ items: [], next: p.next, more: false, oldest_seq: 1 });
    expect(Date.now() - t1).toBeGreaterThanOrEqual(900);
  });

  it("an item past its until is never served", async () => {
    const topic = newTopic();
    const until = Math.floor(Date.now() / 1000) + 2;
    const res = await post(topic, "short-lived", `?until=${until}`);
    expect(((await res.json()) as any).until).toBe(until);
    await post(topic, "long-lived");
    expect((await page(topic)).items).toHaveLength(2);
    await waitFor(() => Date.now() / 1000 > until, { timeout: 4_000 });
    const p = await page(topic);
    expect(p.items.map((i: any) => i.seq)).toEqual([2]);
    expect(p.oldest_seq).toBe(2);
  });

  it("the byte bound evicts the oldest items first", async () => {
    const topic = newTopic();
    const big = new Uint8Array(65_536);
    const fits = (4 * 1024 * 1024) / big.length; // 64 items of 64 KiB fill the 4 MiB bound
    for (let i = 0; i < fits + 1; i++) expect((await post(topic, big)).status).toBe(201);
    const p = await page(topic, "?limit=1");
    expect(p.oldest_seq).toBe(2);
    expect(p.items[0].seq).toBe(2);
  });

  it("bad input: topic 400, body over 64 KiB 413, until out of range 400, wait over 25 s 400, all with the JSON error", async () => {
    const topic = newTopic();
    let res = await post("short", "x");
    expect([res.status, await errorOf(res)]).toEqual([400, "invalid_topic"]);
    res = await fetch(`${base}/${"a".repeat(15)}%2F`);
    expect(res.status).toBe(400);
    res = await post(topic, new Uint8Array(65_537));
    expect([res.status, await errorOf(res)]).toEqual([413, "too_large"]);
    expect((await post(topic, new Uint8Array(65_536))).status).toBe(201);
    const now = Math.floor(Date.now() / 1000);
    for (const until of [now - 5, now + 31 * 86_400, "tomorrow"]) {
      res = await post(topic, "x", `?until=${until}`);
      expect([res.status, await errorOf(res)]).toEqual([400, "invalid_until"]);
    }
    res = await fetch(`${base}/${topic}?wait=26`);
    expect([res.status, await errorOf(res)]).toEqual([400, "invalid_query"]);
    res = await fetch(`${base}/${topic}/receivers`, { method: "POST", body: JSON.stringify({ endpoint: "https://x.example/", keys: {} }) });
    expect([res.status, await errorOf(res)]).toEqual([400, "invalid_subscription"]);
    res = await fetch(`${base}/${topic}`, { method: "PUT", body: "x" });
    expect(res.status).toBe(405);
  });

  it("CORS: any origin may read and post; the preflight allows it", async () => {
    const topic = newTopic();
    const pre = await fetch(`${base}/${topic}`, {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
    expect(pre.status).toBeLessThan(300);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    expect(pre.headers.get("access-control-allow-methods")).toContain("POST");
    const res = await fetch(`${base}/${topic}`, { headers: { origin: "https://app.example" } });
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("a blob is served as application/octet-stream, exactly as posted, with no Content-Encoding", async () => {
    const topic = newTopic();
    const blob = new Uint8Array(5000).map((_, i) => i % 7);
    const { seq } = (await (await post(topic, blob)).json()) as any;
    const res = await fetch(`${base}/${topic}/items/${seq}`, { headers: { "accept-encoding": "gzip, br" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    expect(res.headers.get("content-encoding")).toBeNull();
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(blob);
    expect((await fetch(`${base}/${topic}/items/${seq + 1}`)).status).toBe(404);
  });
});

describe("the mailbox client (clients/mailbox)", () => {
  it("follows a topic in order across long-polls, sees a retention gap, and reports the documented errors", async () => {
    const client = new MailboxClient({ relayUrl: relay });
    const topic = newTopic();
    const ctl = new AbortController();
    const got: string[] = [];
    const following = (async () => {
      for await (const item of client.follow(topic, { wait: 2, signal: ctl.signal })) {
        got.push(Buffer.from(item.blob).toString());
        if (got.length === 3) ctl.abort();
      }
    })();
    await client.post(topic, Buffer.from("one"));
    await waitFor(() => got.length === 1, { what: "the first item, before the next long-poll" });
    await client.post(topic, Buffer.from("two"));
    await client.post(topic, Buffer.from("three"));
    await following;
    expect(got).toEqual(["one", "two", "three"]);
    const other = newTopic();
    const short = Math.floor(Date.now() / 1000) + 3; // far enough that it is live when first paged
    await client.post(other, Buffer.from("gone soon"), { until: short });
    await client.post(other, Buffer.from("stays"));
    expect((await client.page(other)).gap).toBe(false);
    await waitFor(() => Date.now() / 1000 > short, { timeout: 5_000 });
    const p = await client.page(other);
    expect(p.gap).toBe(true);
    expect(p.items.map((i) => Buffer.from(i.blob).toString())).toEqual(["stays"]);
    const tooBig = client.post(topic, new Uint8Array(65_537));
    await expect(tooBig).rejects.toBeInstanceOf(MailboxError);
    await expect(tooBig).rejects.toMatchObject({ status: 413, code: "too_large" });
    await expect(client.page("bad")).rejects.toBeInstanceOf(RangeError);
  });
});

describe("the Minca protocol §4.4, docs/mailbox.md: wakes by Web Push to a push service on loopback", () => {
  let push: LocalPushService;
  let vapidKey: string;
  beforeAll(async () => {
    push = await LocalPushService.start();
    const info = (await (await fetch(relay, { headers: { accept: "application/json" } })).json()) as any;
    vapidKey = info.protocols.minca.push.vapid_public_key;
  });
  afterAll(async () => push?.stop());

  async function receiver(topic: string) {
    const s = push.subscribe();
    const res = await fetch(`${base}/${topic}/receivers`, { method: "POST", body: JSON.stringify(s.json) });
    expect(res.status).toBe(201);
    return { ...s, receiverId: ((await res.json()) as any).id as string };
  }

  it("each new item wakes each receiver once: VAPID-signed with the relay's key, decrypted by an independent implementation", async () => {
    const topic = newTopic();
    const a = await receiver(topic);
    const b = await receiver(topic);
    const res = await post(topic, new Uint8Array([1, 2, 3]));
    const { seq } = (await res.json()) as any;
    await waitFor(() => push.pushesTo(a.id).length === 1 && push.pushesTo(b.id).length === 1, { what: "two wakes" });
    for (const got of [push.pushesTo(a.id)[0], push.pushesTo(b.id)[0]]) {
      expect(got.error).toBeUndefined();
      expect(got.vapid!.publicKey).toBe(vapidKey);
      expect(got.vapid!.claims.aud).toBe(push.origin);
      expect(JSON.parse(got.plaintext!.toString("utf8"))).toEqual({ topic, seq, blob: b64u(new Uint8Array([1, 2, 3])) });
      expect(got.headers.topic).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(Number(got.headers.ttl)).toBeGreaterThan(0);
      expect(got.headers.urgency).toBe("normal");
    }
    // one push per receiver per item: nothing more arrives (a next item's wake, sent after any
    // second copy of the first would have been, is the known point)
    await post(topic, "next");
    await waitFor(() => push.pushesTo(a.id).length >= 2, { what: "the next item's wake" });
    expect(push.pushesTo(a.id).map((p) => JSON.parse(p.plaintext!.toString("utf8")).seq)).toEqual([seq, seq + 1]);
  });

  it("a blob too big for a 2 KB wake is left out: the wake carries topic and seq only", async () => {
    const topic = newTopic();
    const r = await receiver(topic);
    await post(topic, new Uint8Array(3000));
    await waitFor(() => push.pushesTo(r.id).length === 1, { what: "a wake" });
    expect(JSON.parse(push.pushesTo(r.id)[0].plaintext!.toString())).toEqual({ topic, seq: 1 });
  });

  it("a 410 from the push service removes the receiver: no more wakes, and it is gone", async () => {
    const topic = newTopic();
    const r = await receiver(topic);
    push.answer(r.id, { status: 410 });
    await post(topic, "one");
    await waitFor(() => push.pushesTo(r.id).length === 1, { what: "the wake answered 410" });
    await waitFor(async () => (await fetch(`${base}/${topic}/receivers/${r.receiverId}`, { method: "DELETE" })).status === 404, {
      what: "receiver removed",
    });
    const other = await receiver(topic); // its wake for "two" is the point where r's would have come
    await post(topic, "two");
    await waitFor(() => push.pushesTo(other.id).length === 1, { what: "the other receiver's wake" });
    expect(push.pushesTo(r.id)).toHaveLength(1);
  });

  it("a receiver removed with DELETE gets no wakes", async () => {
    const topic = newTopic();
    const r = await receiver(topic);
    expect((await fetch(`${base}/${topic}/receivers/${r.receiverId}`, { method: "DELETE" })).status).toBe(204);
    const other = await receiver(topic); // its wake is the point where r's would have come
    await post(topic, "quiet");
    await waitFor(() => push.pushesTo(other.id).length === 1, { what: "the other receiver's wake" });
    expect(push.pushesTo(r.id)).toHaveLength(0);
  });
});
