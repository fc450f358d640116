// The Tally protocol, rules the client keeps on its own (no relay): results, the friend rule, persistence,
// retries that end, transport-only receipts, the default store. Two clients joined by in-memory
// channels whose frames the test hands over.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  CLIENT_LIMITS,
  IGNORED,
  KeyValueTallyStore,
  MapKeyValue,
  TallyClient,
  connectInMemory,
  memoryStore,
  type InnerMessage,
} from "../../../../clients/tally/index";
import { OutboxRetry } from "../../../../clients/tally/outbox";
import { openEnvelope } from "../../../../shared/tally/envelope";
import { directPair, newUser } from "../../../helpers/tally";
import { innerMessage, offlineClient, plaintextReceipt, sealedFrame, withStoreDir } from "../../../helpers/tally-frames";
import { waitFor } from "../../../helpers/wait";

const pair = directPair;

/** The receipt results in frames b sent back to a. */
async function receiptResults(a: TallyClient, frames: string[]): Promise<unknown[]> {
  const results: unknown[] = [];
  const off = a.on("receipt", (_id, result) => void results.push(result));
  for (const f of frames) await a.handleDirectFrame(f);
  off();
  return results;
}

describe("8.1 receipts", () => {
  it("8.1 duplicate receipt repeats the original result: a message first ignored is receipted 'ignored' again", async () => {
    const { a, b, aToB, bToA } = pair();
    b.on("message", () => IGNORED);
    await a.send(b.npub, "note", {});
    await b.handleDirectFrame(aToB[0]);
    await b.handleDirectFrame(aToB[0]);
    expect(bToA).toHaveLength(2);
    expect(await receiptResults(a, [bToA[0]])).toEqual([IGNORED]);
    // The first receipt emptied a's outbox; put the message back to read the duplicate's receipt too.
    const env = JSON.parse(aToB[0]);
    await a.store.putOutbox({ id: env.id, to_user_id: b.npub, envelope: env, created_at: Date.now(), attempts: 0, last_attempt_at: 0 });
    expect(await receiptResults(a, [bToA[1]])).toEqual([IGNORED]);
  });

  it("3.2 a plaintext transport-only receipt on a live direct channel is accepted", async () => {
    const { a, b, aToB } = pair();
    const id = await a.send(b.npub, "note", {});
    expect(aToB).toHaveLength(1);
    const receipts: string[] = [];
    a.on("receipt", (mid) => void receipts.push(mid));
    const plaintext = plaintextReceipt(b.npub, a.npub, id);
    // From another channel's peer it is not taken; from b's channel it is.
    await a.handleDirectFrame(plaintext, newUser().npub);
    expect(receipts).toEqual([]);
    await a.handleDirectFrame(plaintext, b.npub);
    expect(receipts).toEqual([id]);
    expect(await a.store.listOutbox()).toEqual([]);
  });
});

describe("3.1 and 7: ignored for good", () => {
  it("3.1 a recipient who has already processed an id MUST NOT process it again: a message ignored stays ignored after its processed id expired", async () => {
    const { alice, bob, a, aToB } = pair();
    const b = offlineClient(bob, { store: new KeyValueTallyStore(new MapKeyValue(), 1) });
    const back: string[] = [];
    b.addDirectChannel(alice.npub, { send: (f) => void back.push(f) });
    const handled: string[] = [];
    b.on("message", (m: InnerMessage) => {
      handled.push(m.id);
      return IGNORED;
    });
    const id = await a.send(bob.npub, "note", {});
    await b.handleDirectFrame(aToB[0]);
    await new Promise((r) => setTimeout(r, 5)); // the processed id's 1 ms lifetime passes
    await b.handleDirectFrame(aToB[0]);
    expect(handled).toEqual([id]);
    expect(await receiptResults(a, back)).toEqual([IGNORED]);
    expect(await b.store.listIgnored!()).toEqual([{ from_user_id: alice.npub, id }]);
  });
});

describe("12.8 the friend rule", () => {
  it("12.8 no ledger entry when the handler returns 'ignored'", async () => {
    const { a, b, aToB } = pair();
    b.on("message", () => IGNORED);
    const id = await a.send(b.npub, "note", {});
    await b.handleDirectFrame(aToB[0]);
    expect(await b.store.hasProcessed(a.npub, id)).toBe(true);
    expect(await b.store.listLedger()).toEqual([]);
  });

  it("12.8 a stranger's friend_accept makes no friend; the local user's own accept does", async () => {
    const { a, b, aToB } = pair();
    await a.send(b.npub, "friend_accept", {});
    await b.handleDirectFrame(aToB[0]);
    expect(await b.store.listLedger()).toHaveLength(1); // the app applied it ...
    expect(b.sync.isFriend(a.npub)).toBe(false); // ... but the stranger cannot befriend itself
    expect(a.sync.isFriend(b.npub)).toBe(true); // a accepted b itself
    await b.send(a.npub, "friend_accept", {});
    expect(b.sync.isFriend(a.npub)).toBe(true);
  });

  it("12.8 an accept answering the local user's own request makes a friend", async () => {
    const { a, b, aToB, bToA } = pair();
    await b.send(a.npub, "friend_request", {});
    await a.handleDirectFrame(bToA[0]);
    await a.send(b.npub, "friend_accept", {});
    await b.handleDirectFrame(aToB.at(-1)!);
    expect(b.sync.isFriend(a.npub)).toBe(true);
  });
});

describe("7 and 8.2: exactly once, and retries that end", () => {
  it("7 step 3 and 8.1: a handler that throws is not answered 'processed'; the message is handled when it comes again", async () => {
    const { a, b, aToB, bToA } = pair();
    let fail = true;
    const handled: string[] = [];
    b.on("message", (m: InnerMessage) => {
      if (fail) throw new Error("the app's database is down");
      handled.push(m.id);
    });
    const failed: string[] = [];
    b.on("handler_failed", (m) => void failed.push(m.id));
    const id = await a.send(b.npub, "note", {});
    await b.handleDirectFrame(aToB[0]);
    expect(failed).toEqual([id]);
    expect(bToA).toEqual([]); // no receipt at all, so the sender keeps retrying
    expect(await b.store.hasProcessed(a.npub, id)).toBe(false);
    expect(await b.store.listLedger()).toEqual([]);
    expect((await a.store.listOutbox()).map((i) => i.id)).toEqual([id]);
    fail = false;
    await b.handleDirectFrame(aToB[0]); // the sender's retry: the same envelope
    expect(handled).toEqual([id]);
    expect(await receiptResults(a, bToA)).toEqual(["processed"]);
    expect((await b.store.listLedger()).map((e) => e.id)).toEqual([id]);
  });

  it("7 a crash between the processed-id write and the handler loses nothing: the next client on the store handles the message", async () => {
    const { alice, bob, a, aToB } = pair();
    const store = memoryStore();
    const first = offlineClient(bob, { store });
    first.on("message", () => new Promise<never>(() => {})); // the process dies inside the handler
    const id = await a.send(bob.npub, "note", {});
    void first.handleDirectFrame(aToB[0]);
    await new Promise((r) => setTimeout(r, 0));
    // The app restarts on the same store; the relay (which got no ack) delivers its copy again.
    const second = offlineClient(bob, { store });
    const handled: string[] = [];
    second.on("message", (m: InnerMessage) => void handled.push(m.id));
    const back: string[] = [];
    second.addDirectChannel(alice.npub, { send: (f) => void back.push(f) });
    await second.handleDirectFrame(aToB[0]);
    expect(handled).toEqual([id]);
    expect(back).toHaveLength(1);
  });

  it("7 a processed record without a result (an older client's mark before its handler) is handled again", async () => {
    const { a, b, aToB } = pair();
    const id = await a.send(b.npub, "note", {});
    await b.store.addProcessed(a.npub, id, Date.now());
    const handled: string[] = [];
    b.on("message", (m: InnerMessage) => void handled.push(m.id));
    await b.handleDirectFrame(aToB[0]);
    expect(handled).toEqual([id]);
  });

  it("8.2 stop retrying before processed ids can expire: an outbox message older than the bound is given up", async () => {
    const store = memoryStore();
    const handed: string[] = [];
    const expired: string[] = [];
    const retry = new OutboxRetry(
      store,
      { retryMs: 1, maxRetryMs: 1 },
      (i) => {
        handed.push(i.id);
        return true;
      },
      (i) => {
        expired.push(i.id);
      },
    );
    const env = { type: "peer_envelope" as const, envelope_version: 3, id: "x", from_user_id: "a", to_user_id: "b", ciphertext: "AA==" };
    const now = Date.now();
    await store.putOutbox({
      id: "old",
      to_user_id: "b",
      envelope: { ...env, id: "old" },
      created_at: now - CLIENT_LIMITS.outbox_max_age_ms - 1,
      attempts: 3,
      last_attempt_at: 0,
    });
    await store.putOutbox({
      id: "young",
      to_user_id: "b",
      envelope: { ...env, id: "young" },
      created_at: now,
      attempts: 0,
      last_attempt_at: 0,
    });
    await retry.flush(true, now);
    expect(handed).toEqual(["young"]);
    expect(expired).toEqual(["old"]);
    expect((await store.listOutbox()).map((i) => i.id)).toEqual(["young"]);
    // The bound leaves the relay's 30-day copy to expire well before the 90-day processed set forgets.
    expect(CLIENT_LIMITS.outbox_max_age_ms + 30 * 86_400_000).toBeLessThan(CLIENT_LIMITS.processed_ttl_ms);
  });
});

describe("default persistent store", () => {
  it("default persistent store: in Node a client with no store keeps its outbox in a file, and memory only when asked", async () => {
    await withStoreDir(async (dir) => {
      const user = newUser();
      const peer = newUser();
      const first = new TallyClient({ relayUrl: "ws://unused", secretKey: user.secretKey });
      const id = await first.send(peer.npub, "note", { n: 1 });
      expect(readdirSync(dir).filter((f) => !f.endsWith(".lock"))).toEqual([`${user.npub}.log`]);
      first.close(); // as a restart: the next client of this user takes the same store
      const again = new TallyClient({ relayUrl: "ws://unused", secretKey: user.secretKey });
      expect((await again.store.listOutbox()).map((i) => i.id)).toEqual([id]);
      expect((await again.store.listLedger()).map((e) => e.id)).toEqual([id]);
      const mem = new TallyClient({ relayUrl: "ws://unused", secretKey: user.secretKey, store: "memory" });
      expect(await mem.store.listOutbox()).toEqual([]);
    });
  });
});

describe("13.5 the self mesh without the relay", () => {
  it("13.5 broadcast to every connected self-peer by whichever path works: with no relay and a self channel open, a new entry reaches the other device", async () => {
    const alice = newUser();
    const bob = newUser();
    const d1 = offlineClient(alice);
    const d2 = offlineClient(alice);
    connectInMemory(d1, d2);
    const id = await d1.send(bob.npub, "note", { offline: true });
    await waitFor(async () => d2.store.hasLedger(alice.npub, id), { what: "broadcast over the self channel" });
  });

  it("13.5 mark only what was sent: an entry no path carried is broadcast once a self channel works", async () => {
    const alice = newUser();
    const bob = newUser();
    const d1 = offlineClient(alice);
    const d2 = offlineClient(alice);
    let working = false;
    d1.addDirectChannel(alice.npub, {
      send: (f) => {
        if (!working) throw new Error("channel not open yet");
        queueMicrotask(() => void d2.handleDirectFrame(f, alice.npub));
      },
    });
    const first = await d1.send(bob.npub, "note", { n: 1 }); // the send fails: not marked
    working = true;
    // A later append re-offers nothing by itself, but the entry was not marked broadcast:
    d1.sync.onLedgerAppend((await d1.store.listLedger()).find((e) => e.id === first)!);
    await waitFor(async () => d2.store.hasLedger(alice.npub, first), { what: "the unsent entry" });
  });
});

describe("smaller rules: plaintext receipts, self hellos on any channel, answers that never complete", () => {
  it("3.2 a plaintext receipt is taken only with the channel's peer: without fromUserId it is dropped and said so", async () => {
    const { a, b } = pair();
    const id = await a.send(b.npub, "note", {});
    const dropped: string[] = [];
    a.on("dropped", (reason) => void dropped.push(reason));
    await a.handleDirectFrame(plaintextReceipt(b.npub, a.npub, id));
    expect(dropped).toEqual(["plaintext_receipt_without_peer"]);
    expect((await a.store.listOutbox()).map((i) => i.id)).toEqual([id]);
  });

  it("13.6 immediately after a self-peer data channel opens, both devices exchange a sync_hello: also for a channel the app registers itself", async () => {
    const alice = newUser();
    const bob = newUser();
    const d1 = offlineClient(alice);
    const d2 = offlineClient(alice);
    const id = await d1.send(bob.npub, "note", { before: "the channel" }); // no channel yet: d2 does not have it
    expect(await d2.store.hasLedger(alice.npub, id)).toBe(false);
    connectInMemory(d1, d2); // the app's own channel (addDirectChannel), not the WebRTC mesh
    await waitFor(async () => d2.store.hasLedger(alice.npub, id), { what: "the entry by initial self-sync" });
  });

  it("12.6 an answer in several parts whose last part never comes is given up and asked for again", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = offlineClient(alice, { sync: { isFriend: () => true, answerTimeoutMs: 100 } });
    const toBob: string[] = [];
    a.addDirectChannel(bob.npub, { send: (f) => void toBob.push(f) });
    const part0 = { entries: [], set: "s1", part: 0, parts: 2 };
    await a.handleDirectFrame(sealedFrame(bob, innerMessage(bob.npub, alice.npub, "p0", "sync_data", part0)), bob.npub);
    const hellos = () =>
      toBob.map((f) => openEnvelope(JSON.parse(f), bob.secretKey)).filter((o) => o.ok && o.inner.type === "sync_hello").length;
    await waitFor(() => hellos() > 0, { what: "a new hello after the timeout", timeout: 3_000 });
  });
});

describe("1 every open client is a device", () => {
  it("1 each device dedups against its own processed set: two clients of one user with the default store in one folder get two stores, owner-only", async () => {
    await withStoreDir(async (dir) => {
      const user = newUser();
      const peer = newUser();
      const c1 = new TallyClient({ relayUrl: "ws://unused", secretKey: user.secretKey });
      const c2 = new TallyClient({ relayUrl: "ws://unused", secretKey: user.secretKey });
      const msg = new TallyClient({ relayUrl: "ws://unused", secretKey: peer.secretKey, store: "memory" });
      const frames: string[] = [];
      msg.addDirectChannel(user.npub, { send: (f) => void frames.push(f) });
      await msg.send(user.npub, "note", {});
      const handled: string[] = [];
      c1.on("message", () => void handled.push("c1"));
      c2.on("message", () => void handled.push("c2"));
      await c1.handleDirectFrame(frames[0]);
      await c2.handleDirectFrame(frames[0]);
      expect(handled).toEqual(["c1", "c2"]);
      const logs = readdirSync(dir)
        .filter((f) => f.endsWith(".log"))
        .sort();
      expect(logs).toEqual([`${user.npub}.1.log`, `${user.npub}.log`]);
      for (const f of logs) expect(statSync(join(dir, f)).mode & 0o777).toBe(0o600);
      c1.close();
      c2.close();
    });
  });
});
