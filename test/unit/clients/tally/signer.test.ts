// Signers (shared/tally/signer.ts): a client whose key is in a NIP-07 provider (a browser
// extension's window.nostr) works without the secret key, asks the provider for nothing else,
// keeps the outbox's write-before-send order with signing now async, and treats a provider that
// fails as "not yet", never as a bad envelope to drop.
import { afterEach, describe, expect, it } from "vitest";
import {
  KeyValueTallyStore,
  MapKeyValue,
  memoryStore,
  nip07Signer,
  secretKeySigner,
  SignerError,
  TallyClient,
  type InnerMessage,
  type KeyValue,
} from "../../../../clients/tally/index";
import { sealEnvelope } from "../../../../shared/tally/envelope";
import { signInner, verifyInner } from "../../../../shared/tally/proof";
import { finalizeEvent } from "../../../../shared/nostr/event";
import { newUser } from "../../../helpers/tally";
import { innerMessage, offlineClient } from "../../../helpers/tally-frames";
import { fakeRelay, queuedIds, type FakeRelay } from "../../../helpers/tally-fake-relay";
import { NIP07_METHODS, testProvider } from "../../../helpers/nip07";
import { waitFor } from "../../../helpers/wait";

const relays: FakeRelay[] = [];
const clients: TallyClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const r of relays.splice(0)) await r.close();
});

async function relay(): Promise<FakeRelay> {
  const r = await fakeRelay();
  relays.push(r);
  return r;
}

/** A frame the relay hands the client: `from`'s sealed message to `to`. */
function relayed(from: ReturnType<typeof newUser>, to: string, id: string, type = "note", payload: unknown = {}) {
  const inner = innerMessage(from.npub, to, id, type, payload);
  return sealEnvelope(signInner(inner, from.secretKey), from.secretKey);
}

describe("a NIP-07 signer: the key stays in the provider", () => {
  it("the client never asks the provider for anything but getPublicKey, signEvent and nip44.encrypt / decrypt", async () => {
    const alice = newUser();
    const bob = newUser();
    const p = testProvider(alice.secretKey);
    const r = await relay();
    const a = await TallyClient.create({ relayUrl: r.url, signer: nip07Signer(p.provider), store: memoryStore() });
    clients.push(a);
    expect(a.npub).toBe(alice.npub);
    await a.connect(); // register: the challenge answered with signEvent
    // Sending (proof, seal), receiving (open), the receipt's seal, and the peer's receipt opened.
    const b = offlineClient(bob);
    const aToB: string[] = [];
    const bToA: string[] = [];
    a.addDirectChannel(bob.npub, { send: (f) => void aToB.push(f) });
    b.addDirectChannel(alice.npub, { send: (f) => void bToA.push(f) });
    const seenByB: InnerMessage[] = [];
    b.on("message", (m) => void seenByB.push(m));
    const tracked = await a.sendTracked(bob.npub, "note", { n: 1 });
    await waitFor(() => aToB.length > 0, { what: "a's envelope on the channel" });
    await b.handleDirectFrame(aToB[0]);
    expect(seenByB.map((m) => m.payload)).toEqual([{ n: 1 }]);
    expect(verifyInner(seenByB[0])).toBe(true);
    for (const f of bToA.splice(0)) await a.handleDirectFrame(f, bob.npub);
    expect(await tracked.receipt).toMatchObject({ result: "processed" });
    const seenByA: InnerMessage[] = [];
    a.on("message", (m) => void seenByA.push(m));
    await b.send(alice.npub, "note", { n: 2 });
    await a.handleDirectFrame(bToA.splice(0)[0], bob.npub);
    expect(seenByA.map((m) => m.payload)).toEqual([{ n: 2 }]);
    await a.idle();

    const used = new Set(p.reads);
    expect([...used].filter((k) => !NIP07_METHODS.includes(k))).toEqual([]);
    expect(new Set(p.calls)).toEqual(new Set(["getPublicKey", "signEvent", "nip44.encrypt", "nip44.decrypt"]));
    expect(p.calls.filter((c) => c === "getPublicKey")).toHaveLength(1); // asked once
  });

  it("signing is async and nothing is reordered: sends made at once reach the relay in the order called, however long each signature takes", async () => {
    const alice = newUser();
    const p = testProvider(alice.secretKey, (n) => (n % 2 === 0 ? 30 : 0)); // every other answer slow
    const r = await relay();
    const a = await TallyClient.create({ relayUrl: r.url, signer: nip07Signer(p.provider), store: memoryStore() });
    clients.push(a);
    await a.connect();
    const to = newUser().npub;
    const ids = ["m1", "m2", "m3", "m4", "m5"];
    await Promise.all(ids.map((id) => a.send(to, "note", {}, { id })));
    await waitFor(() => queuedIds(r).length === ids.length, { what: "every message on the relay" });
    expect(queuedIds(r)).toEqual(ids);
  });

  it("write before send holds with an async signer: a crash between the outbox write and the send loses nothing", async () => {
    const alice = newUser();
    const inner = new MapKeyValue();
    // The process dies right after the outbox write: that write is kept, nothing after it runs.
    let crashed = false;
    const dying: KeyValue = {
      get: (k) => inner.get(k),
      keys: (pre) => inner.keys(pre),
      delete: (k) => inner.delete(k),
      set: async (k, v) => {
        if (crashed) return new Promise<never>(() => {});
        await inner.set(k, v);
        if (k.startsWith("outbox/")) {
          crashed = true;
          return new Promise<never>(() => {});
        }
      },
    };
    const r = await relay();
    const first = await TallyClient.create({
      relayUrl: r.url,
      signer: nip07Signer(testProvider(alice.secretKey).provider),
      store: new KeyValueTallyStore(dying),
    });
    await first.connect();
    void first.send(newUser().npub, "note", {}, { id: "kept" });
    await waitFor(() => crashed, { what: "the outbox write" });
    expect(queuedIds(r)).toEqual([]); // signed, sealed and stored, never sent
    first.close();
    // The app restarts on the same store: the stored message goes out.
    const second = await TallyClient.create({
      relayUrl: r.url,
      signer: nip07Signer(testProvider(alice.secretKey).provider),
      store: new KeyValueTallyStore(inner),
    });
    clients.push(second);
    await second.connect();
    await waitFor(() => queuedIds(r).includes("kept"), { what: "the stored message on the relay" });
  });

  it("a provider that fails is not a verdict: the envelope is kept (no ack, not dropped) and opened once the provider works again", async () => {
    const alice = newUser();
    const bob = newUser();
    const p = testProvider(alice.secretKey);
    const r = await relay();
    const a = await TallyClient.create({ relayUrl: r.url, signer: nip07Signer(p.provider), store: memoryStore(), handlerRetryMs: 20 });
    clients.push(a);
    await a.connect();
    const failures: string[] = [];
    const dropped: string[] = [];
    const handled: string[] = [];
    a.on("signer_failed", (what) => void failures.push(what));
    a.on("dropped", (reason) => void dropped.push(reason));
    a.on("message", (m) => void handled.push(m.id));
    p.locked = true;
    r.connections[0].send(JSON.stringify(relayed(bob, alice.npub, "locked-1")));
    await waitFor(() => failures.includes("open"), { what: "the signer failure" });
    expect(r.frames.filter((f) => f.type === "ack")).toEqual([]);
    p.locked = false;
    await waitFor(() => handled.includes("locked-1"), { what: "the message, once the provider is unlocked" });
    await waitFor(() => r.frames.some((f) => f.type === "ack" && f.id === "locked-1"), { what: "its ack" });
    expect(dropped).toEqual([]);
  });

  it("a provider's answers are checked: an event by another key, or not the template asked for, is a SignerError", async () => {
    const me = newUser();
    const other = newUser();
    const template = { kind: 1, created_at: 1_700_000_000, tags: [["t", "x"]], content: "c" };
    const base = testProvider(me.secretKey).provider;
    const wrongKey = nip07Signer({ ...base, getPublicKey: base.getPublicKey, signEvent: async (t) => finalizeEvent(t, other.secretKey) });
    await expect(wrongKey.signEvent(template)).rejects.toBeInstanceOf(SignerError);
    const wrongContent = nip07Signer({
      ...base,
      getPublicKey: base.getPublicKey,
      signEvent: async (t) => finalizeEvent({ ...t, content: "other" }, me.secretKey),
    });
    await expect(wrongContent.signEvent(template)).rejects.toBeInstanceOf(SignerError);
    const noNip44 = nip07Signer({ getPublicKey: base.getPublicKey, signEvent: base.signEvent });
    await expect(noNip44.nip44Encrypt(other.hex, "x")).rejects.toBeInstanceOf(SignerError);
    const badPayload = nip07Signer({
      ...base,
      getPublicKey: base.getPublicKey,
      signEvent: base.signEvent,
      nip44: { encrypt: async () => "not a payload", decrypt: async () => "" },
    });
    await expect(badPayload.nip44Encrypt(other.hex, "x")).rejects.toBeInstanceOf(SignerError);
    // The key signer and the provider seal to the same thing: each opens the other's.
    const keySigner = secretKeySigner(me.secretKey);
    const viaProvider = nip07Signer(base);
    const sealed = await keySigner.nip44Encrypt(other.hex, "hello");
    expect(await secretKeySigner(other.secretKey).nip44Decrypt(me.hex, sealed)).toBe("hello");
    expect(await viaProvider.nip44Decrypt(other.hex, await secretKeySigner(other.secretKey).nip44Encrypt(me.hex, "back"))).toBe("back");
  });

  it("with a signer, new TallyClient needs its publicKey; secretKey and signer together are refused", () => {
    const me = newUser();
    const signer = secretKeySigner(me.secretKey);
    expect(() => new TallyClient({ relayUrl: "ws://unused", signer, store: memoryStore() })).toThrow(/publicKey/);
    expect(() => new TallyClient({ relayUrl: "ws://unused", signer, secretKey: me.secretKey, store: memoryStore() })).toThrow(/not both/);
    expect(new TallyClient({ relayUrl: "ws://unused", signer, publicKey: me.hex, store: memoryStore() }).npub).toBe(me.npub);
  });
});
