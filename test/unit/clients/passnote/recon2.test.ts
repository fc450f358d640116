// recon2's negotiation between reference peers over the in-memory bus (docs/passnote.md "Range
// reconciliation, recon2"): a peer with recon2 offers recon1 and recon2; two such peers use
// recon2; any other pair keeps recon1, byte for byte as before.
import { describe, expect, it } from "vitest";
import { MemoryBus } from "../../../../clients/passnote/memory-bus";
import { PassnotePeer, type PassnotePeerOptions } from "../../../../clients/passnote/peer";
import { bytesToHex } from "../../../../shared/encoding";
import { formatHlc } from "../../../../clients/passnote/protocol/hlc";
import { MemoryStore } from "../../../../clients/passnote/protocol/records";
import { ROSTER_COLLECTION } from "../../../../clients/passnote/protocol/roster";
import { openingProbe2 } from "../../../../clients/passnote/protocol/reconcile2";
import { sealFrame, sealPlain } from "../../../../clients/passnote/protocol/seal";
import { decodeMessage, encodeMessage, MESSAGE_TAG, PRIVATE_TAGS, type Message } from "../../../../clients/passnote/protocol/wire";
import { openFrame } from "../../../../clients/passnote/protocol/seal";
import type { Transport } from "../../../../clients/passnote/transport";
import {
  collectionsNamed,
  fillDifferent,
  groupKey,
  newGroup,
  pubOf,
  sameRecords,
  tapSends,
  tapped,
  viewReceived,
} from "../../../helpers/passnote";
import { waitFor } from "../../../helpers/wait";
import { settle } from "../../../helpers/passnote-settle";

/**
 * Two passphrase-mode peers over one bus. The peer with the lower transport id (the one that
 * opens the reconciliation) gets store `lower` and options `lowerOpts`, so a run is repeatable.
 */
async function pair(
  lowerOpts: Partial<PassnotePeerOptions>,
  higherOpts: Partial<PassnotePeerOptions>,
  data = { common: 2000, differences: 20 },
) {
  const bus = new MemoryBus();
  const key = groupKey();
  const [t1, t2] = [await bus.connect(), await bus.connect()];
  const [tl, th] = t1.self! < t2.self! ? [t1, t2] : [t2, t1];
  const [sl, sh] = [new MemoryStore(), new MemoryStore()];
  fillDifferent(sl, sh, data);
  const sentL = tapped(tl, key);
  const sentH = tapped(th, key);
  const lower = new PassnotePeer({ transport: tl, key, node: "low", store: sl, ...lowerOpts });
  const higher = new PassnotePeer({ transport: th, key, node: "high", store: sh, ...higherOpts });
  await waitFor(() => sameRecords(lower.store, higher.store), { what: "convergence" });
  await settle([lower, higher]);
  return { key, lower, higher, sentL, sentH };
}

const frames = (p: PassnotePeer, type: string) => p.engine.sent.frames[type] ?? 0;
const capsOf = (sent: Message[]) => (sent.find((m) => m.type === "handshake") as Extract<Message, { type: "handshake" }>).capabilities;

describe("recon2: negotiation", () => {
  it("a peer with recon2 offers both recon1 and recon2; two such peers reconcile with recon2", async () => {
    const { lower, higher, sentL } = await pair({ recon2: true }, { recon2: true });
    expect(capsOf(sentL).filter((c) => c.includes("recon"))).toEqual(["recon1", "x-edge-relay/recon2", "recon2"]);
    expect(frames(lower, "reconcile2")).toBeGreaterThan(0);
    expect(frames(higher, "reconcile2")).toBeGreaterThan(0);
    expect(frames(lower, "reconcile") + frames(higher, "reconcile")).toBe(0);
  });

  it("when one side lacks recon2 the pair falls back to recon1, whichever side opens", async () => {
    for (const [lowerOpts, higherOpts] of [
      [{ recon2: true }, {}],
      [{}, { recon2: true }],
    ]) {
      const { lower, higher } = await pair(lowerOpts, higherOpts);
      expect(frames(lower, "reconcile")).toBeGreaterThan(0);
      expect(frames(lower, "reconcile2") + frames(higher, "reconcile2")).toBe(0);
    }
  });

  it("recon1 is unchanged: a recon2 peer facing a recon1 peer sends the same reconcile and delta frames, byte for byte, as a recon1 peer", async () => {
    const wire = (sent: Message[]) =>
      sent.filter((m) => m.type === "reconcile" || m.type === "delta").map((m) => bytesToHex(encodeMessage(m)));
    const withRecon2 = await pair({ recon2: true }, {});
    const without = await pair({}, {});
    expect(wire(withRecon2.sentL).length).toBeGreaterThan(1);
    expect(wire(withRecon2.sentL)).toEqual(wire(without.sentL));
    expect(wire(withRecon2.sentH)).toEqual(wire(without.sentH));
  });

  it("a reconcile2 message from a peer that did not agree recon2 is ignored", async () => {
    const { key, lower, higher } = await pair({ recon2: true }, {}, { common: 10, differences: 0 });
    await waitFor(() => frames(lower, "reconcile") > 0, { what: "the recon1 opening" }); // the pair settled, with recon1
    await settle([lower, higher]);
    higher.store.merge("notes", { key: "late", value: 1, is_deleted: false, hlc: formatHlc({ wall: 5, counter: 0, node: "h" }) });
    // An empty side's recon2 probe would make a recon2 responder ship everything; this one answers nothing.
    const before = { ...higher.engine.sent.frames };
    await higher.engine.receive(lower.transport.self!, sealFrame(key, encodeMessage(openingProbe2(new MemoryStore(), "notes"))));
    await settle([lower, higher]);
    expect(higher.engine.sent.frames).toEqual(before);
    expect(lower.get("notes", "late")).toBeUndefined();
  });
});

describe("recon2: an extension's name and tag no protocol version will take", () => {
  it("the extension uses a vendor-prefixed capability (x-edge-relay/recon2) and a tag from the private range 0xF0-0xFF", async () => {
    expect(MESSAGE_TAG.reconcile2).toBeGreaterThanOrEqual(PRIVATE_TAGS.first);
    expect(MESSAGE_TAG.reconcile2).toBeLessThanOrEqual(PRIVATE_TAGS.last);
    const { key, lower } = await pair({ recon2: true }, { recon2: true });
    expect(frames(lower, "reconcile2")).toBeGreaterThan(0);
    const probe = encodeMessage(openingProbe2(new MemoryStore(), "notes"));
    expect(probe[2]).toBe(0xf0);
    expect(decodeMessage(probe)?.type).toBe("reconcile2");
    void key;
  });

  it("the old name and tag are still read for one release: a peer that offers only recon2 and speaks tag 8 reconciles with recon2, and gets tag 8", async () => {
    const bus = new MemoryBus();
    const key = groupKey();
    const [t1, t2] = [await bus.connect(), await bus.connect()];
    const [sNew, sOld] = [new MemoryStore(), new MemoryStore()];
    fillDifferent(sNew, sOld, { common: 2000, differences: 20 });
    // The previous release, as seen on the wire: capability "recon2" only, reconcile2 under tag 8.
    const legacy = (t: Transport) => {
      const send = t.send.bind(t);
      t.send = (to, sealed) => {
        const frame = openFrame(key, sealed)!;
        const m = decodeMessage(frame)!;
        if (m.type === "handshake")
          return send(to, sealFrame(key, encodeMessage({ ...m, capabilities: m.capabilities.filter((c) => c !== "x-edge-relay/recon2") })));
        if (m.type === "reconcile2") frame[2] = 8;
        return send(to, sealFrame(key, frame));
      };
    };
    legacy(t2);
    const tagsToOld: number[] = [];
    const send1 = t1.send.bind(t1);
    t1.send = (to, sealed) => {
      tagsToOld.push(openFrame(key, sealed)![2]);
      return send1(to, sealed);
    };
    const fresh = new PassnotePeer({ transport: t1, key, node: "new", store: sNew, recon2: true });
    const old = new PassnotePeer({ transport: t2, key, node: "old", store: sOld, recon2: true });
    await waitFor(() => sameRecords(fresh.store, old.store), { what: "convergence" });
    expect(frames(fresh, "reconcile2") + frames(old, "reconcile2")).toBeGreaterThan(0);
    expect(frames(fresh, "reconcile") + frames(old, "reconcile")).toBe(0);
    expect(tagsToOld).not.toContain(0xf0);
    fresh.detach();
    old.detach();
  });
});

describe("recon2: identity mode", () => {
  it("two members with recon2 reconcile the roster in plain frames and user collections in their session, all with recon2", async () => {
    const bus = new MemoryBus();
    const { owner, devices } = newGroup(1);
    const ta = await bus.connect();
    const sentA = tapSends(ta);
    const a = new PassnotePeer({ transport: ta, identity: owner, node: "alice", recon2: true });
    a.admit(pubOf(devices[0]));
    a.put("notes", "n1", 1);
    const tb = await bus.connect();
    const sentB = tapSends(tb);
    const b = new PassnotePeer({ transport: tb, identity: devices[0], node: "bob", recon2: true });
    b.put("photos", "p1", 2);
    await waitFor(() => b.get("notes", "n1") === 1 && a.get("photos", "p1") === 2, { what: "sync" });
    await settle([a, b]);
    const plain = [...viewReceived(owner.group.rosterKey, sentA).plain, ...viewReceived(owner.group.rosterKey, sentB).plain];
    expect(plain.some((m) => m.type === "reconcile2")).toBe(true);
    expect(plain.some((m) => m.type === "reconcile")).toBe(false);
    expect([...collectionsNamed(plain)]).toEqual([ROSTER_COLLECTION]);
    expect(sameRecords(a.store, b.store, ROSTER_COLLECTION)).toBe(true);
    // A plain reconcile2 about a user collection is ignored, like a plain reconcile.
    const before = a.engine.sent.frames.delta ?? 0;
    await a.engine.receive(
      tb.self!,
      sealPlain(owner.group.rosterKey, encodeMessage({ type: "reconcile2", collection: "notes", ranges: [] })),
    );
    const probe = openingProbe2(new MemoryStore(), "notes");
    await a.engine.receive(tb.self!, sealPlain(owner.group.rosterKey, encodeMessage(probe)));
    await settle([a, b]);
    expect(a.engine.sent.frames.delta ?? 0).toBe(before);
  });
});
