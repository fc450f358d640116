import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { finalizeEvent as ntFinalizeEvent, verifyEvent as ntVerifyEvent } from "nostr-tools/pure";
import { schnorr } from "@noble/curves/secp256k1.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { hex } from "@scure/base";
import {
  LEGACY_PROOF_TYPE,
  PROOF_EVENT_KIND,
  PROOF_TYPE,
  signInner,
  signInnerLegacy,
  verifyInner,
  verifyLedgerEntry,
} from "../../../../shared/tally/proof";
import { canonicalJson, innerDigestHex } from "../../../../shared/tally/canonical";
import { generateSecretKey, getPublicKeyHex, npubEncode } from "../../../../shared/tally/keys";

const aliceSk = generateSecretKey();
const alice = npubEncode(getPublicKeyHex(aliceSk));
const bobSk = generateSecretKey();
const bob = npubEncode(getPublicKeyHex(bobSk));

function message(over: Record<string, unknown> = {}) {
  return {
    id: "01HZX3K9Q4",
    type: "transaction_created",
    from_user_id: alice,
    to_user_id: bob,
    created_at: "2026-03-01T12:00:00.000Z",
    payload: { amount: 42, currency: "EUR", memo: "pizza 🍕" },
    ...over,
  };
}

describe("§3.3 authorship proofs", () => {
  it("constants", () => {
    expect(PROOF_EVENT_KIND).toBe(177700);
    expect(PROOF_TYPE).toBe("tally-nostr-event-v1");
    expect(LEGACY_PROOF_TYPE).toBe("tally-canonical-schnorr-v1");
  });

  it("§3.3: signInner attaches a kind-177700 Nostr event committing to the digest, valid per nostr-tools", () => {
    const inner = message();
    const signed = signInner(inner, aliceSk, 1_760_000_000);
    expect(signed.proof.type).toBe(PROOF_TYPE);
    const ev = signed.proof.event;
    expect(ev.kind).toBe(177700);
    expect(ev.pubkey).toBe(getPublicKeyHex(aliceSk));
    expect(ev.content).toBe(innerDigestHex(inner));
    expect(ev.tags).toEqual([["t", "tally-proof"]]);
    expect(ev.created_at).toBe(1_760_000_000);
    expect(ntVerifyEvent({ ...ev })).toBe(true);
    expect(verifyInner(signed)).toBe(true);
    // the original fields are untouched
    expect({ ...signed, proof: undefined }).toEqual({ ...inner, proof: undefined });
  });

  it("§3.3: the proof survives JSON serialization (what the envelope carries)", () => {
    const signed = signInner(message(), aliceSk);
    expect(verifyInner(JSON.parse(JSON.stringify(signed)))).toBe(true);
  });

  it("§3: unknown fields are covered by the proof and must be preserved to verify", () => {
    const signed = signInner(message({ x_future: { a: [1, 2] } }), aliceSk);
    expect(verifyInner(signed)).toBe(true);
    const { x_future: _dropped, ...stripped } = signed as Record<string, unknown>;
    expect(verifyInner(stripped)).toBe(false);
    expect(verifyInner({ ...signed, x_added: 1 })).toBe(false);
  });

  it("§3.3: a tampered payload fails the proof", () => {
    const signed = signInner(message(), aliceSk);
    expect(verifyInner({ ...signed, payload: { ...signed.payload, amount: 43 } })).toBe(false);
    expect(verifyInner({ ...signed, to_user_id: alice })).toBe(false);
    expect(verifyInner({ ...signed, created_at: "2026-03-01T12:00:01.000Z" })).toBe(false);
  });

  it("§3.3: a proof is checked against from_user_id — claiming another author fails", () => {
    const signed = signInner(message(), aliceSk);
    expect(verifyInner({ ...signed, from_user_id: bob })).toBe(false);
    // Bob re-signs a message claiming to be from Alice: the event is valid, but not Alice's.
    const forged = { ...message(), proof: signInner(message({ from_user_id: bob }), bobSk).proof };
    expect(ntVerifyEvent({ ...forged.proof.event })).toBe(true);
    expect(verifyInner(forged)).toBe(false);
  });

  it("signInner refuses to sign for a from_user_id that is not the signer's", () => {
    expect(() => signInner(message({ from_user_id: bob }), aliceSk)).toThrow();
    expect(() => signInnerLegacy(message({ from_user_id: bob }), aliceSk)).toThrow();
  });

  it("§3.3: a proof event with the wrong kind, content or type is rejected", () => {
    const inner = message();
    const digest = innerDigestHex(inner);
    const mk = (kind: number, tags: string[][], content: string, type: string = PROOF_TYPE) => ({
      ...inner,
      proof: { type, event: ntFinalizeEvent({ kind, created_at: 1_760_000_000, tags, content }, aliceSk) },
    });
    expect(verifyInner(mk(177700, [["t", "tally-proof"]], digest))).toBe(true);
    expect(verifyInner(mk(1, [["t", "tally-proof"]], digest))).toBe(false);
    expect(verifyInner(mk(177700, [["t", "tally-proof"]], digest.toUpperCase()))).toBe(false);
    expect(verifyInner(mk(177700, [["t", "tally-proof"]], digest, LEGACY_PROOF_TYPE))).toBe(false);
    const broken = mk(177700, [["t", "tally-proof"]], digest);
    broken.proof.event = { ...broken.proof.event, sig: "00".repeat(64) };
    expect(verifyInner(broken)).toBe(false);
  });

  it("§3.3 accept every proof the Tally protocol accepts: a kind 177700 proof event with no tally-proof tag (or other tags) verifies", () => {
    const inner = message();
    const digest = innerDigestHex(inner);
    const mk = (tags: string[][]) => ({
      ...inner,
      proof: { type: PROOF_TYPE, event: ntFinalizeEvent({ kind: 177700, created_at: 1_760_000_000, tags, content: digest }, aliceSk) },
    });
    expect(verifyInner(mk([]))).toBe(true);
    expect(verifyInner(mk([["client", "other-app"]]))).toBe(true);
  });

  it("§3.3: a proof made by an external signer (nostr-tools finalizeEvent, as NIP-07 would) is accepted", () => {
    const inner = message({ type: "friend_accept", payload: {} });
    const event = ntFinalizeEvent(
      { kind: 177700, created_at: 1_760_000_123, tags: [["t", "tally-proof"]], content: innerDigestHex(inner) },
      aliceSk,
    );
    expect(verifyInner({ ...inner, proof: { type: "tally-nostr-event-v1", event } })).toBe(true);
  });

  it("§3.3: legacy tally-canonical-schnorr-v1 proof is accepted on receipt", () => {
    const signed = signInnerLegacy(message(), aliceSk);
    expect(signed.signature).toMatch(/^[0-9a-f]{128}$/);
    // independent check: a BIP-340 signature over the 32 digest bytes of the canonical JSON
    const digest = sha256(new TextEncoder().encode(canonicalJson(message())));
    expect(schnorr.verify(hex.decode(signed.signature), digest, hex.decode(getPublicKeyHex(aliceSk)))).toBe(true);
    expect(verifyInner(signed)).toBe(true);
    expect(verifyInner(JSON.parse(JSON.stringify(signed)))).toBe(true);
  });

  it('§3.3: legacy signature computed with signature set to "" is also accepted', () => {
    const inner = message();
    const digest = sha256(new TextEncoder().encode(canonicalJson({ ...inner, signature: "" })));
    const signature = hex.encode(schnorr.sign(digest, aliceSk));
    expect(verifyInner({ ...inner, signature })).toBe(true);
    expect(verifyInner({ ...inner, amount: 1, signature })).toBe(false);
  });

  it("§3.3: a tampered legacy message, or a legacy signature by another key, fails", () => {
    const signed = signInnerLegacy(message(), aliceSk);
    expect(verifyInner({ ...signed, payload: { amount: 1 } })).toBe(false);
    expect(verifyInner({ ...signed, signature: signed.signature.toUpperCase() })).toBe(false);
    const bobs = signInnerLegacy(message({ from_user_id: bob }), bobSk);
    expect(verifyInner({ ...message(), signature: bobs.signature })).toBe(false);
  });

  it("§3.3: when a proof is present it decides; a valid legacy signature does not rescue a broken proof", () => {
    const legacy = signInnerLegacy(message(), aliceSk);
    expect(verifyInner({ ...legacy, proof: { type: PROOF_TYPE, event: null } })).toBe(false);
    const both = signInner(legacy, aliceSk);
    expect(verifyInner(both)).toBe(true);
  });

  it("§3.3: a message without any proof, or with a non-npub author, is rejected", () => {
    expect(verifyInner(message())).toBe(false);
    const signed = signInner(message(), aliceSk);
    expect(verifyInner({ ...signed, from_user_id: getPublicKeyHex(aliceSk) })).toBe(false);
  });

  it("verifyInner never throws on arbitrary values", () => {
    const signed = signInner(message(), aliceSk);
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (a, b) => {
        expect(verifyInner(a)).toBe(false);
        expect(verifyInner({ ...signed, proof: a })).toBe(false);
        expect(verifyInner({ ...signed, proof: { type: PROOF_TYPE, event: b } })).toBe(false);
        expect(verifyLedgerEntry(a)).toBe(false);
      }),
      { numRuns: 200 },
    );
  });
});

describe("§12.6 ledger entries", () => {
  function toLedgerEntry(signed: Record<string, unknown>) {
    const { created_at, ...rest } = signed;
    return { ...rest, originated_at: created_at, timestamp: "2026-03-01T12:00:05.123Z" };
  }

  it("§3.3/§12.6: a ledger entry verifies by substituting originated_at for created_at and dropping timestamp", () => {
    const entry = toLedgerEntry(signInner(message(), aliceSk));
    expect(entry).not.toHaveProperty("created_at");
    expect(verifyLedgerEntry(entry)).toBe(true);
    expect(verifyLedgerEntry(JSON.parse(JSON.stringify(entry)))).toBe(true);
    expect(verifyLedgerEntry({ ...entry, timestamp: "2030-01-01T00:00:00Z" })).toBe(true);
  });

  it("§12.6: a legacy-signed ledger entry (signature field) verifies", () => {
    expect(verifyLedgerEntry(toLedgerEntry(signInnerLegacy(message(), aliceSk)))).toBe(true);
  });

  it("§12.7: a forwarded entry with a changed originated_at, payload or author is dropped", () => {
    const entry = toLedgerEntry(signInner(message(), aliceSk));
    expect(verifyLedgerEntry({ ...entry, originated_at: "2026-03-01T12:00:01.000Z" })).toBe(false);
    expect(verifyLedgerEntry({ ...entry, payload: { amount: 4200 } })).toBe(false);
    expect(verifyLedgerEntry({ ...entry, from_user_id: bob })).toBe(false);
    const { originated_at: _o, ...noOrigin } = entry;
    expect(verifyLedgerEntry(noOrigin)).toBe(false);
  });
});
