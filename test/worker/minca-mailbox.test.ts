// The mailbox Durable Object inside workerd: durability across eviction, the alarm's sweep, the
// bounds, rate limits, and what each push-service answer does to a receiver (an in-process push
// service stands in here; the real loopback one is in the end-to-end layer).
import { SELF, env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { runDeferred } from "../helpers/deferred";
import { describe, expect, it } from "vitest";
import { p256 } from "@noble/curves/nist.js";
import type { TestMincaMailbox } from "./test-objects";
import { MAILBOX_LIMITS } from "../../shared/limits";
import { base64urlDecode, base64urlEncode, randomBytes } from "../../shared/encoding";
import { decryptPushMessage } from "../../shared/webpush/encrypt";
import { verifyVapid } from "../../server/webpush/vapid";
import { wakePushTopic } from "../../shared/mailbox/topic";
import { waitFor } from "../helpers/wait";
import { ownAddress } from "../helpers/client-address";

const BASE = "http://relay.test/minca/v1/mailbox";
let n = 0;
const newTopic = () => `worker-test-topic-${Date.now()}-${++n}`;
const stub = (topic: string) =>
  env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(topic)) as unknown as DurableObjectStub<TestMincaMailbox>;

async function post(topic: string, body: BodyInit = "hello", query = "", headers: Record<string, string> = {}) {
  return SELF.fetch(`${BASE}/${topic}${query}`, { method: "POST", body, headers });
}
async function page(topic: string, query = ""): Promise<any> {
  const res = await SELF.fetch(`${BASE}/${topic}${query}`);
  expect(res.status).toBe(200);
  return res.json();
}

/** A browser-like subscription (noble keys) and an in-process push service answering `answers`. */
function fakePushService(answers: Array<number | { status: number; headers?: Record<string, string> }> = []) {
  const uaPrivate = p256.utils.randomSecretKey();
  const auth = randomBytes(16);
  const endpoint = `https://push.example/sub/${Math.random().toString(36).slice(2)}`;
  const got: Array<{ url: string; headers: Record<string, string>; plaintext: any }> = [];
  const fetch = async (url: string, init: RequestInit): Promise<Response> => {
    const headers = init.headers as Record<string, string>;
    const plaintext = JSON.parse(new TextDecoder().decode(decryptPushMessage(init.body as Uint8Array, uaPrivate, auth)));
    got.push({ url, headers, plaintext });
    const a = answers.shift() ?? 201;
    const { status, headers: h } = typeof a === "number" ? { status: a, headers: undefined } : a;
    return new Response(null, { status, headers: h });
  };
  const subscription = {
    endpoint,
    keys: { p256dh: base64urlEncode(p256.getPublicKey(uaPrivate, false)), auth: base64urlEncode(auth) },
  };
  return { fetch, got, subscription };
}

async function withReceiver(topic: string, svc: ReturnType<typeof fakePushService>): Promise<string> {
  await runInDurableObject(stub(topic), (inst: TestMincaMailbox) => {
    inst.fetchWith = svc.fetch;
  });
  const res = await SELF.fetch(`${BASE}/${topic}/receivers`, { method: "POST", body: JSON.stringify(svc.subscription) });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

const deliveries = (topic: string) =>
  runInDurableObject(stub(topic), (_i, state) =>
    state.storage.sql.exec<{ attempts: number; next_at: number }>("SELECT attempts, next_at FROM deliveries").toArray(),
  );

describe("docs/mailbox.md: posting and reading", () => {
  it("an acknowledged POST is durable: the item survives the object's eviction", async () => {
    const topic = newTopic();
    const res = await post(topic, new Uint8Array([0, 1, 2, 255]));
    expect(res.status).toBe(201);
    const { seq, until } = (await res.json()) as { seq: number; until: number };
    expect(seq).toBe(1);
    expect(until).toBeGreaterThan(Date.now() / 1000 + 29 * 86_400);
    await evictDurableObject(stub(topic));
    const p = await page(topic);
    expect(p.items).toHaveLength(1);
    expect(base64urlDecode(p.items[0].blob)).toEqual(new Uint8Array([0, 1, 2, 255]));
    expect(p).toMatchObject({ next: 1, more: false, oldest_seq: 1 });
  });

  it("seq keeps increasing after every item is gone (a client's `after` never points at a reused seq)", async () => {
    const topic = newTopic();
    await post(topic);
    await post(topic);
    await runInDurableObject(stub(topic), (_i, state) => void state.storage.sql.exec("DELETE FROM items"));
    const res = await post(topic);
    expect(((await res.json()) as { seq: number }).seq).toBe(3);
  });

  it("the alarm sweeps items whose until has passed (gone from storage, not only hidden)", async () => {
    const topic = newTopic();
    await post(topic, "a");
    await post(topic, "b");
    const left = await runInDurableObject(stub(topic), async (inst: TestMincaMailbox, state) => {
      state.storage.sql.exec("UPDATE items SET until = ? WHERE seq = 1", Math.floor(Date.now() / 1000) - 1);
      expect((await page(topic)).items.map((i: any) => i.seq)).toEqual([2]); // never served
      await inst.alarm();
      return state.storage.sql
        .exec<{ seq: number }>("SELECT seq FROM items")
        .toArray()
        .map((r) => r.seq);
    });
    expect(left).toEqual([2]);
    expect((await page(topic)).oldest_seq).toBe(2);
  });

  it("the count bound evicts the oldest items first, and oldest_seq shows the gap", async () => {
    const topic = newTopic();
    const until = Math.floor(Date.now() / 1000) + 60;
    // fill it to the bound directly (a thousand HTTP posts would only slow the suite)
    await post(topic, "first");
    await runInDurableObject(stub(topic), (_i, state) => {
      for (let i = 1; i < MAILBOX_LIMITS.max_items; i++) {
        state.storage.sql.exec(
          "INSERT INTO items (at, until, bytes, blob) VALUES (?, ?, 1, ?)",
          until - 60,
          until,
          new Uint8Array([i & 0xff]).buffer,
        );
      }
    });
    for (let i = 0; i < 3; i++) expect((await post(topic, "more")).status).toBe(201);
    const p = await page(topic, "?limit=2");
    expect(p.oldest_seq).toBe(4);
    expect(p.items.map((i: any) => i.seq)).toEqual([4, 5]);
    expect(p.more).toBe(true);
  });

  it("a long-poll answers as soon as an item arrives", async () => {
    const topic = newTopic();
    const started = Date.now();
    const waiting = page(topic, "?wait=10");
    await waitFor(async () => (await stub(topic).waitingPolls()) === 1, { what: "the long-poll waiting" });
    await post(topic, "now");
    const p = await waiting;
    expect(p.items.map((i: any) => i.seq)).toEqual([1]);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("per-client rate limit: past the burst, 429 with Retry-After and the documented error", async () => {
    const topic = newTopic();
    const headers = { "cf-connecting-ip": ownAddress() };
    let ok = 0;
    let res: Response | undefined;
    for (let i = 0; i < 2 * MAILBOX_LIMITS.write_burst; i++) {
      res = await post(topic, "x", "", headers);
      if (res.status !== 201) break;
      ok++;
    }
    expect(ok).toBeGreaterThanOrEqual(MAILBOX_LIMITS.write_burst);
    res = res!;
    expect(res.status).toBe(429);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(((await res.json()) as any).error.code).toBe("rate_limited");
    expect((await post(topic, "x", "", { "cf-connecting-ip": ownAddress() })).status).toBe(201); // another client
  });
});

describe("docs/mailbox.md: wakes by Web Push", () => {
  it("each new item sends each receiver one push with { topic, seq, blob } and the mailbox's Topic", async () => {
    const topic = newTopic();
    const svc = fakePushService();
    await withReceiver(topic, svc);
    await post(topic, new Uint8Array([9, 9]));
    await waitFor(() => svc.got.length === 1, { what: "a push" });
    const [push] = svc.got;
    expect(push.plaintext).toEqual({ topic, seq: 1, blob: "CQk" });
    expect(push.headers.Topic).toBe(wakePushTopic(topic));
    expect(push.headers.TTL).toBe("2419200"); // 30 days ahead, capped at the 4 weeks push services keep
    const info = (await (await SELF.fetch("http://relay.test/", { headers: { accept: "application/json" } })).json()) as any;
    const v = verifyVapid(push.headers.Authorization, { audience: "https://push.example", nowSeconds: Math.floor(Date.now() / 1000) });
    expect(base64urlEncode(v.publicKey)).toBe(info.protocols.minca.push.vapid_public_key);
    expect(await deliveries(topic)).toEqual([]);
  });

  it("410 from the push service removes the receiver", async () => {
    const topic = newTopic();
    const svc = fakePushService([410]);
    await withReceiver(topic, svc);
    await post(topic);
    await waitFor(async () => (await stub(topic).receivers()).length === 0, { what: "receiver removed" });
    expect(await deliveries(topic)).toEqual([]);
  });

  it("404 does not remove a receiver whose endpoint changed while the push was in flight", async () => {
    const topic = newTopic();
    const svc = fakePushService([404]);
    const inner = svc.fetch;
    svc.fetch = async (url, init) => {
      await runInDurableObject(
        stub(topic),
        (_i, state) => void state.storage.sql.exec("UPDATE receivers SET endpoint = 'https://push.example/new'"),
      );
      return inner(url, init);
    };
    await withReceiver(topic, svc);
    await post(topic);
    await waitFor(() => svc.got.length === 1, { what: "a push" });
    await waitFor(async () => (await deliveries(topic)).length === 0, { what: "the 404 acted on" });
    expect((await stub(topic).receivers()).map((r) => r.endpoint)).toEqual(["https://push.example/new"]);
  });

  it("429 is retried later, honouring Retry-After", async () => {
    const topic = newTopic();
    const svc = fakePushService([{ status: 429, headers: { "retry-after": "600" } }]);
    await withReceiver(topic, svc);
    const before = Date.now();
    await post(topic);
    await waitFor(async () => (await deliveries(topic))[0]?.attempts === 1, { what: "a retry recorded" });
    const [d] = await deliveries(topic);
    expect(d.next_at).toBeGreaterThanOrEqual(before + 600_000);
    await runDeferred(stub(topic)); // the post's report; the retry's alarm stays
    const alarm = await runInDurableObject(stub(topic), (_i, state) => state.storage.getAlarm());
    expect(alarm).toBe(d.next_at);
    // when the alarm comes, it is sent again and delivered
    await runInDurableObject(stub(topic), async (inst: TestMincaMailbox, state) => {
      state.storage.sql.exec("UPDATE deliveries SET next_at = ?", Date.now());
      await inst.alarm();
    });
    expect(svc.got).toHaveLength(2);
    expect(await deliveries(topic)).toEqual([]);
  });

  it("5xx is retried with doubling backoff; 413 and 403 are not retried and keep the receiver", async () => {
    const t1 = newTopic();
    const s1 = fakePushService([503]);
    await withReceiver(t1, s1);
    const before = Date.now();
    await post(t1);
    await waitFor(async () => (await deliveries(t1))[0]?.attempts === 1, { what: "a retry recorded" });
    expect((await deliveries(t1))[0].next_at).toBeGreaterThanOrEqual(before + MAILBOX_LIMITS.push_retry_base_seconds * 1000);

    for (const status of [413, 403]) {
      const t = newTopic();
      const s = fakePushService([status]);
      await withReceiver(t, s);
      await post(t);
      await waitFor(() => s.got.length === 1, { what: "a push" });
      await waitFor(async () => (await deliveries(t)).length === 0, { what: "delivery dropped" });
      expect(await stub(t).receivers()).toHaveLength(1);
    }
  });

  it("pushing never delays the 201: a push service that hangs does not hold the POST", async () => {
    const topic = newTopic();
    const svc = fakePushService();
    const inner = svc.fetch;
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    svc.fetch = async (url, init) => {
      await answered; // hangs until the 201 was seen
      return inner(url, init);
    };
    await withReceiver(topic, svc);
    const t0 = Date.now();
    expect((await post(topic)).status).toBe(201);
    expect(Date.now() - t0).toBeLessThan(1_000);
    answer();
    await waitFor(() => svc.got.length === 1, { what: "the slow push", timeout: 5_000 });
  });

  it("receivers: the same endpoint again keeps its id; DELETE removes it (204), then 404", async () => {
    const topic = newTopic();
    const svc = fakePushService();
    const id = await withReceiver(topic, svc);
    const again = await SELF.fetch(`${BASE}/${topic}/receivers`, { method: "POST", body: JSON.stringify(svc.subscription) });
    expect(((await again.json()) as any).id).toBe(id);
    expect((await SELF.fetch(`${BASE}/${topic}/receivers/${id}`, { method: "DELETE" })).status).toBe(204);
    expect((await SELF.fetch(`${BASE}/${topic}/receivers/${id}`, { method: "DELETE" })).status).toBe(404);
    await post(topic);
    expect(await deliveries(topic)).toEqual([]); // no wake queued: none can be sent
    expect(svc.got).toHaveLength(0);
  });
});

describe("docs/mailbox.md: the push-endpoint rule, applied when a receiver registers", () => {
  const register = (topic: string, endpoint: string) => {
    const svc = fakePushService();
    return SELF.fetch(`${BASE}/${topic}/receivers`, { method: "POST", body: JSON.stringify({ ...svc.subscription, endpoint }) });
  };

  it("a receiver endpoint that is not an https URL on the default port with a public name, or is this relay, is refused with 400", async () => {
    const topic = newTopic();
    for (const endpoint of [
      "http://127.0.0.1:9/push/x", // plain http to loopback: no longer allowed because the relay is on loopback
      "https://127.0.0.1/push/x",
      "https://2130706433/push/x",
      "https://[::ffff:10.0.0.1]/push/x",
      "https://169.254.169.254/latest/meta-data",
      "https://localhost/push/x",
      "https://push.example:8443/x",
      `https://relay.test/minca/v1/mailbox/${topic}`, // the relay's own mailbox: a wake that wakes itself
      "https://RELAY.test./minca/v1/mailbox/x",
    ]) {
      const res = await register(topic, endpoint);
      expect(res.status, endpoint).toBe(400);
      expect(((await res.json()) as any).error.code, endpoint).toBe("invalid_endpoint");
    }
    expect(await stub(topic).receivers()).toHaveLength(0);
    expect((await register(topic, "https://push.example/ok")).status).toBe(201);
  });

  it("a receiver's keys are replaced only by its registrant: other keys for a known endpoint are 409 until its id deletes it", async () => {
    const topic = newTopic();
    const victim = fakePushService();
    const id = await withReceiver(topic, victim);
    const attacker = fakePushService();
    const hijack = { endpoint: victim.subscription.endpoint, keys: attacker.subscription.keys };
    const res = await SELF.fetch(`${BASE}/${topic}/receivers`, { method: "POST", body: JSON.stringify(hijack) });
    expect(res.status).toBe(409);
    const body = (await res.json()) as any;
    expect(body.error.code).toBe("receiver_exists");
    expect(JSON.stringify(body)).not.toContain(id);
    // The wake still goes to the registrant's keys.
    await post(topic);
    await waitFor(() => victim.got.length === 1, { what: "the registrant's wake" });
    // The registrant, who holds the id, replaces its keys by deleting and registering again.
    expect((await SELF.fetch(`${BASE}/${topic}/receivers/${id}`, { method: "DELETE" })).status).toBe(204);
    const again = await SELF.fetch(`${BASE}/${topic}/receivers`, { method: "POST", body: JSON.stringify(hijack) });
    expect(again.status).toBe(201);
  });
});

describe("information document", () => {
  it("lists the mailbox endpoints and a stable 65-byte VAPID public key generated once", async () => {
    const get = async () => (await (await SELF.fetch("http://relay.test/", { headers: { accept: "application/json" } })).json()) as any;
    const a = await get();
    const b = await get();
    expect(a.protocols.minca.mailbox.endpoint).toBe("/minca/v1/mailbox/<topic>");
    expect(base64urlDecode(a.protocols.minca.push.vapid_public_key)).toHaveLength(65);
    expect(b.protocols.minca.push.vapid_public_key).toBe(a.protocols.minca.push.vapid_public_key);
    expect(a.limits.mailbox.max_body_bytes).toBe(65_536);
  });
});
