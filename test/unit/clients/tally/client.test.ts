// The client's receiving rules over an in-memory direct channel (no relay involved).
import { describe, expect, it } from "vitest";
import type { InnerMessage } from "../../../../clients/tally/index";
import { openEnvelope, sealEnvelope, sealLegacyV2 } from "../../../../shared/tally/envelope";
import { signInner } from "../../../../shared/tally/proof";
import { directPair, newUser } from "../../../helpers/tally";
import { innerMessage, offlineClient, sealedFrame } from "../../../helpers/tally-frames";

function pair() {
  const p = directPair();
  const got: InnerMessage[] = [];
  p.b.on("message", (m) => void got.push(m));
  return { ...p, got };
}

const parse = (f: string) => JSON.parse(f);

describe("Tally client: receiving", () => {
  it("5.3: a message is applied once and answered with a receipt; the receipt empties the sender's outbox", async () => {
    const { a, b, aToB, bToA, got } = pair();
    const id = await a.send(b.npub, "note", { n: 1 });
    expect(aToB).toHaveLength(1);
    await b.handleDirectFrame(aToB[0]);
    expect(got.map((m) => [m.id, m.payload])).toEqual([[id, { n: 1 }]]);
    expect(bToA).toHaveLength(1);
    const receipts: string[] = [];
    a.on("receipt", (mid) => void receipts.push(mid));
    await a.handleDirectFrame(bToA[0]);
    expect(receipts).toEqual([id]);
    expect(await a.store.listOutbox()).toEqual([]);
  });

  it("8.1: a receipt never generates a receipt", async () => {
    const { a, b, aToB, bToA } = pair();
    await a.send(b.npub, "note", {});
    await b.handleDirectFrame(aToB[0]);
    await a.handleDirectFrame(bToA[0]);
    expect(aToB).toHaveLength(1); // a sent nothing back for the receipt
  });

  it("7: a duplicate is dropped but still receipted, so a stuck sender can progress", async () => {
    const { a, b, aToB, bToA, got } = pair();
    await a.send(b.npub, "note", {});
    await b.handleDirectFrame(aToB[0]);
    await b.handleDirectFrame(aToB[0]);
    expect(got).toHaveLength(1);
    expect(bToA).toHaveLength(2);
  });

  it("7: the copy of a message that came by a second path is reported as a duplicate, with its path", async () => {
    const { a, b, aToB, got } = pair();
    const dups: Array<[string, string]> = [];
    b.on("duplicate", (m, via) => void dups.push([m.id, via]));
    const id = await a.send(b.npub, "note", {});
    await b.handleDirectFrame(aToB[0]);
    await b.receiveEnvelope(JSON.parse(aToB[0]), "relay");
    expect(got.map((m) => m.id)).toEqual([id]);
    expect(dups).toEqual([[id, "relay"]]);
  });

  it("7: two copies arriving at once by two paths run the handler once (the processed check and its write are not interleaved)", async () => {
    const { a, b, aToB, got } = pair();
    const id = await a.send(b.npub, "note", {});
    let inHandler = 0;
    b.on("message", async () => {
      inHandler++;
      await new Promise((r) => setTimeout(r, 0)); // a handler that awaits: the second copy arrives meanwhile
    });
    await Promise.all([b.handleDirectFrame(aToB[0]), b.receiveEnvelope(JSON.parse(aToB[0]), "relay")]);
    expect(got.map((m) => m.id)).toEqual([id]);
    expect(inHandler).toBe(1);
  });

  it("5.3: an envelope whose claims were altered is dropped without a receipt", async () => {
    const { a, b, aToB, bToA, got } = pair();
    const dropped: string[] = [];
    b.on("dropped", (r) => void dropped.push(r));
    await a.send(b.npub, "note", {});
    const env = parse(aToB[0]);
    await b.handleDirectFrame(JSON.stringify({ ...env, id: "other-id" }));
    expect(got).toEqual([]);
    expect(bToA).toEqual([]);
    expect(dropped).toEqual(["id_mismatch"]);
  });

  it("5.3 step 6: a message signed by someone else than its from_user_id is dropped", async () => {
    const { alice, b, got } = pair();
    const mallory = newUser();
    // Mallory seals with alice's claimed identity but her own proof: the proof fails.
    const inner = innerMessage(alice.npub, b.npub, "f1", "note");
    const signedByMallory = signInner({ ...inner, from_user_id: mallory.npub }, mallory.secretKey);
    const forged = { ...signedByMallory, from_user_id: alice.npub };
    const env = sealEnvelope(forged as never, alice.secretKey);
    await b.handleDirectFrame(JSON.stringify(env));
    expect(got).toEqual([]);
  });

  it("4: a version 2 envelope (AES-256-GCM) still decrypts", async () => {
    const { alice, b, got } = pair();
    const inner = innerMessage(alice.npub, b.npub, "v2", "note", { old: true });
    const env = sealLegacyV2(signInner(inner, alice.secretKey), alice.secretKey);
    await b.handleDirectFrame(JSON.stringify(env));
    expect(got.map((m) => m.id)).toEqual(["v2"]);
  });

  it("13.7: a self-addressed sync message from another own device is handled once and never receipted", async () => {
    const user = newUser();
    const d1 = offlineClient(user);
    const d2 = offlineClient(user);
    const seen: InnerMessage[] = [];
    d2.on("self", (m) => void seen.push(m));
    const back: string[] = [];
    d2.addDirectChannel(user.npub, { send: (f) => void back.push(f) });
    const frame = sealedFrame(user, innerMessage(d1.npub, d1.npub, "s1", "sync_hello", { known_ids: [] }));
    await d2.handleDirectFrame(frame);
    await d2.handleDirectFrame(frame);
    expect(seen.map((m) => m.id)).toEqual(["s1"]);
    // What went back is the channel's own opening hello (13.6), never a receipt (13.7).
    const types = back.map((f) => openEnvelope(JSON.parse(f), user.secretKey)).map((o) => (o.ok ? o.inner.type : "?"));
    expect(types.filter((t) => t !== "sync_hello")).toEqual([]);
  });

  it("13.8: only sync_hello and sync_data are accepted on the self path", async () => {
    const user = newUser();
    const d2 = offlineClient(user);
    const seen: InnerMessage[] = [];
    d2.on("self", (m) => void seen.push(m));
    d2.on("message", (m) => void seen.push(m));
    await d2.handleDirectFrame(sealedFrame(user, innerMessage(d2.npub, d2.npub, "s2", "transaction_created")));
    expect(seen).toEqual([]);
  });
});
