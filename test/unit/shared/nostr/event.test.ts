import { describe, expect, it } from "vitest";
import fc from "fast-check";
import * as nt from "nostr-tools/pure";
import { schnorr } from "@noble/curves/secp256k1.js";
import { finalizeEvent, getEventHash, nostrEventSchema, verifyEvent, type NostrEvent } from "../../../../shared/nostr/event";

const sk = schnorr.utils.randomSecretKey();
const template = {
  kind: 1,
  created_at: 1_700_000_000,
  tags: [
    ["p", "ab"],
    ["t", "x"],
  ],
  content: 'hello ☕\n"quoted"',
};

const templateArb = fc.record({
  kind: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  created_at: fc.integer({ min: 0, max: 2 ** 40 }),
  tags: fc.array(fc.array(fc.string({ unit: "binary" }), { maxLength: 4 }), { maxLength: 4 }),
  content: fc.string({ unit: "binary", maxLength: 200 }),
});

describe("NIP-01 events", () => {
  it("NIP-01: id equals nostr-tools' getEventHash for arbitrary events (unicode, control characters)", () => {
    const pubkey = nt.getPublicKey(sk);
    fc.assert(
      fc.property(templateArb, (t) => {
        expect(getEventHash({ ...t, pubkey })).toBe(nt.getEventHash({ ...t, pubkey }));
      }),
      { numRuns: 300 },
    );
  });

  it("NIP-01: finalizeEvent output is accepted by nostr-tools' verifyEvent and by our schema", () => {
    const ev = finalizeEvent(template, sk);
    expect(nostrEventSchema.safeParse(ev).success).toBe(true);
    expect(ev.pubkey).toBe(nt.getPublicKey(sk));
    expect(nt.verifyEvent({ ...ev })).toBe(true);
    expect(verifyEvent(ev)).toBe(true);
  });

  it("NIP-01: events signed by nostr-tools verify here", () => {
    fc.assert(
      fc.property(templateArb, (t) => {
        const ev = nt.finalizeEvent({ ...t, tags: t.tags.map((x) => [...x]) }, sk);
        expect(verifyEvent({ ...ev })).toBe(true);
      }),
      { numRuns: 50 },
    );
  });

  it("NIP-01: a tampered content, kind, tag or created_at fails verification", () => {
    const ev = finalizeEvent(template, sk);
    expect(verifyEvent({ ...ev, content: ev.content + "!" })).toBe(false);
    expect(verifyEvent({ ...ev, kind: 2 })).toBe(false);
    expect(verifyEvent({ ...ev, tags: [["p", "ab"]] })).toBe(false);
    expect(verifyEvent({ ...ev, created_at: ev.created_at + 1 })).toBe(false);
  });

  it("NIP-01: a correct id with a signature from another key fails", () => {
    const ev = finalizeEvent(template, sk);
    const other = finalizeEvent(template, schnorr.utils.randomSecretKey());
    expect(verifyEvent({ ...ev, sig: other.sig })).toBe(false);
    expect(verifyEvent({ ...other, pubkey: ev.pubkey, id: ev.id })).toBe(false);
  });

  it("NIP-01: an id that is not the hash of the event fails even with a matching signature over it", () => {
    const ev = finalizeEvent(template, sk);
    const fakeId = "00".repeat(32);
    const sig = Buffer.from(schnorr.sign(Buffer.from(fakeId, "hex"), sk)).toString("hex");
    expect(verifyEvent({ ...ev, id: fakeId, sig })).toBe(false);
  });

  it("schema: uppercase hex, wrong lengths, negative or fractional numbers and non-string tags are rejected", () => {
    const ev: NostrEvent = finalizeEvent(template, sk);
    const bad: unknown[] = [
      { ...ev, id: ev.id.toUpperCase() },
      { ...ev, pubkey: ev.pubkey.toUpperCase() },
      { ...ev, sig: ev.sig.slice(2) },
      { ...ev, created_at: -1 },
      { ...ev, created_at: 1.5 },
      { ...ev, kind: 2 ** 31 },
      { ...ev, kind: -1 },
      { ...ev, tags: [[1]] },
      { ...ev, tags: ["p"] },
      { ...ev, content: 5 },
      { ...ev, sig: undefined },
    ];
    for (const b of bad) {
      expect(nostrEventSchema.safeParse(b).success).toBe(false);
      expect(verifyEvent(b)).toBe(false);
    }
  });

  it("verifyEvent never throws and rejects arbitrary values", () => {
    fc.assert(
      fc.property(fc.anything(), (v) => {
        expect(verifyEvent(v)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});
