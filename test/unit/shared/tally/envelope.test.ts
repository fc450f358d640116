import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { v2 as ntNip44 } from "nostr-tools/nip44";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { hex } from "@scure/base";
import {
  ENVELOPE_VERSION,
  conversationKey,
  legacyV2Key,
  openEnvelope,
  openEnvelopeWith,
  peerEnvelopeSchema,
  sealEnvelope,
  sealLegacyV2,
  type PeerEnvelope,
} from "../../../../shared/tally/envelope";
import { encrypt as nip44Encrypt, getConversationKey } from "../../../../shared/tally/nip44";
import { signInner, signInnerLegacy } from "../../../../shared/tally/proof";
import { secretKeySigner, type TallySigner } from "../../../../shared/tally/signer";
import { generateSecretKey, getPublicKeyHex, npubEncode } from "../../../../shared/tally/keys";
import { base64Decode, base64Encode, concatBytes, randomBytes } from "../../../../shared/encoding";

function user() {
  const sk = generateSecretKey();
  const pubHex = getPublicKeyHex(sk);
  return { sk, pubHex, npub: npubEncode(pubHex) };
}
const alice = user();
const bob = user();
const carol = user();

function inner(from = alice, to = bob, over: Record<string, unknown> = {}) {
  return {
    id: "msg-" + hex.encode(randomBytes(8)),
    type: "transaction_created",
    from_user_id: from.npub,
    to_user_id: to.npub,
    created_at: "2026-03-01T12:00:00.000Z",
    payload: { amount: 7, memo: "coffee ☕" },
    ...over,
  };
}

/** Encrypts an arbitrary plaintext as a v3 envelope from `sender` with the given header. */
function rawV3(
  sender: { sk: Uint8Array },
  recipientHex: string,
  header: Omit<PeerEnvelope, "ciphertext" | "type" | "envelope_version">,
  plaintext: string,
) {
  return {
    type: "peer_envelope",
    envelope_version: 3,
    ...header,
    ciphertext: nip44Encrypt(plaintext, getConversationKey(sender.sk, recipientHex)),
  };
}

describe("§4/§5 envelopes", () => {
  it("§4: sealEnvelope produces a version-3 envelope with the inner routing fields", () => {
    const signed = signInner(inner(), alice.sk);
    const env = sealEnvelope(signed, alice.sk);
    expect(ENVELOPE_VERSION).toBe(3);
    expect(env).toMatchObject({
      type: "peer_envelope",
      envelope_version: 3,
      id: signed.id,
      from_user_id: alice.npub,
      to_user_id: bob.npub,
    });
    expect(Object.keys(env).sort()).toEqual(["ciphertext", "envelope_version", "from_user_id", "id", "to_user_id", "type"]);
    expect(peerEnvelopeSchema.safeParse(env).success).toBe(true);
    expect(JSON.stringify(env)).not.toContain("coffee");
  });

  it("§5.3: the ciphertext is plain NIP-44 v2 between sender and recipient (decrypts with nostr-tools)", () => {
    const signed = signInner(inner(), alice.sk);
    const env = sealEnvelope(signed, alice.sk);
    const ck = ntNip44.utils.getConversationKey(bob.sk, alice.pubHex);
    expect(JSON.parse(ntNip44.decrypt(env.ciphertext, ck))).toEqual(signed);
  });

  it("§5.3: the recipient opens a sealed envelope and gets the signed inner message back", () => {
    const signed = signInner(inner(alice, bob, { x_unknown: [1, "two"] }), alice.sk);
    const r = openEnvelope(JSON.parse(JSON.stringify(sealEnvelope(signed, alice.sk))), bob.sk);
    expect(r).toEqual({ ok: true, inner: JSON.parse(JSON.stringify(signed)) });
  });

  it("§5.3: a NIP-07-style sender (nostr-tools nip44) produces envelopes the recipient opens", () => {
    const signed = signInner(inner(), alice.sk);
    const ck = ntNip44.utils.getConversationKey(alice.sk, bob.pubHex);
    const env = {
      type: "peer_envelope",
      envelope_version: 3,
      id: signed.id,
      from_user_id: alice.npub,
      to_user_id: bob.npub,
      ciphertext: ntNip44.encrypt(JSON.stringify(signed), ck),
    };
    expect(openEnvelope(env, bob.sk)).toMatchObject({ ok: true });
  });

  it("§13.2: a self-addressed envelope opens on another device of the same user", () => {
    const signed = signInner(inner(alice, alice, { type: "sync_hello", payload: { known_ids: [] } }), alice.sk);
    const env = sealEnvelope(signed, alice.sk);
    expect(env.from_user_id).toBe(env.to_user_id);
    expect(openEnvelope(env, alice.sk)).toMatchObject({ ok: true, inner: { type: "sync_hello" } });
    expect(openEnvelope(env, bob.sk)).toEqual({ ok: false, reason: "decrypt_failed" });
  });

  it("§3.3: an inner message with a legacy signature is accepted inside a v3 envelope", () => {
    const signed = signInnerLegacy(inner(), alice.sk);
    expect(openEnvelope(sealEnvelope(signed, alice.sk), bob.sk)).toMatchObject({ ok: true });
  });

  it("§4: unknown fields added to the envelope (queued_at) are ignored by the receiver", () => {
    const env = { ...sealEnvelope(signInner(inner(), alice.sk), alice.sk), queued_at: "2026-03-01T12:00:00Z" };
    expect(openEnvelope(env, bob.sk)).toMatchObject({ ok: true });
  });

  it("sealEnvelope refuses a from_user_id that is not the sealer's, a bad recipient, a bad id, and oversize messages", () => {
    const signed = signInner(inner(), alice.sk);
    expect(() => sealEnvelope(signed, bob.sk)).toThrow();
    expect(() => sealEnvelope({ ...signed, to_user_id: bob.pubHex }, alice.sk)).toThrow();
    expect(() => sealEnvelope({ ...signed, id: "" }, alice.sk)).toThrow();
    expect(() => sealEnvelope({ ...signed, id: "x".repeat(129) }, alice.sk)).toThrow();
    const big = signInner(inner(alice, bob, { payload: { blob: "a".repeat(70_000) } }), alice.sk);
    expect(() => sealEnvelope(big, alice.sk)).toThrow();
  });
});

describe("§4 versions", () => {
  const signed = signInner(inner(), alice.sk);
  const env = sealEnvelope(signed, alice.sk);

  it("§4: version 1 is rejected", () => {
    expect(openEnvelope({ ...env, envelope_version: 1 }, bob.sk)).toEqual({ ok: false, reason: "unknown_version" });
  });

  it("§5.4: any version other than 2 or 3 is rejected, including missing and non-numeric ones", () => {
    for (const v of [0, 4, 99, -3, 3.5, "3", null, undefined]) {
      expect(openEnvelope({ ...env, envelope_version: v }, bob.sk)).toEqual({ ok: false, reason: "unknown_version" });
    }
  });

  it("§4: version 2 envelopes still decrypt", () => {
    const v2 = sealLegacyV2(signed, alice.sk);
    expect(v2.envelope_version).toBe(2);
    expect(openEnvelope(v2, bob.sk)).toEqual({ ok: true, inner: JSON.parse(JSON.stringify(signed)) });
  });

  it("§5.1-5.3 v2: the format is AES-256-GCM under SHA-256(ECDH x) with base64(iv ‖ ct ‖ tag) (checked with WebCrypto)", async () => {
    const v2 = sealLegacyV2(signed, alice.sk);
    const shared = secp256k1.getSharedSecret(bob.sk, hex.decode("02" + alice.pubHex)).subarray(1, 33);
    const keyBytes = new Uint8Array(await crypto.subtle.digest("SHA-256", new Uint8Array(shared)));
    const key = await crypto.subtle.importKey("raw", keyBytes, "AES-GCM", false, ["encrypt", "decrypt"]);
    const data = base64Decode(v2.ciphertext);
    const pt = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: new Uint8Array(data.subarray(0, 12)) },
      key,
      new Uint8Array(data.subarray(12)),
    );
    expect(JSON.parse(new TextDecoder().decode(pt))).toEqual(signed);

    // and a v2 envelope produced by WebCrypto (as an old client would) opens
    const iv = new Uint8Array(randomBytes(12));
    const ct = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, new TextEncoder().encode(JSON.stringify(signed))));
    const old = { ...v2, ciphertext: base64Encode(concatBytes(iv, ct)) };
    expect(openEnvelope(old, bob.sk)).toMatchObject({ ok: true });
  });

  it("§4: version 2 with a v3 ciphertext, or v3 with a v2 ciphertext, fails to decrypt", () => {
    const v2 = sealLegacyV2(signed, alice.sk);
    expect(openEnvelope({ ...env, envelope_version: 2 }, bob.sk)).toEqual({ ok: false, reason: "decrypt_failed" });
    expect(openEnvelope({ ...v2, envelope_version: 3 }, bob.sk)).toEqual({ ok: false, reason: "decrypt_failed" });
  });
});

describe("§5.3 receiver checks", () => {
  it("§5.3 step 2: an envelope that does not decrypt under (me, from_user_id) is dropped", () => {
    const env = sealEnvelope(signInner(inner(alice, bob), alice.sk), alice.sk);
    expect(openEnvelope(env, carol.sk)).toEqual({ ok: false, reason: "decrypt_failed" });
    // the relay-visible from_user_id is rewritten: the key no longer matches
    expect(openEnvelope({ ...env, from_user_id: carol.npub }, bob.sk)).toEqual({ ok: false, reason: "decrypt_failed" });
  });

  it("§5.3 step 3: a plaintext that is not a JSON object is dropped", () => {
    const h = { id: "m1", from_user_id: alice.npub, to_user_id: bob.npub };
    for (const pt of ["not json", "[1,2,3]", "null", "42", '"str"', '{"id":']) {
      expect(openEnvelope(rawV3(alice, bob.pubHex, h, pt), bob.sk)).toEqual({ ok: false, reason: "bad_json" });
    }
  });

  it("§5.3 step 4: envelope whose id differs from the inner message is dropped", () => {
    const env = sealEnvelope(signInner(inner(), alice.sk), alice.sk);
    expect(openEnvelope({ ...env, id: env.id + "-replay" }, bob.sk)).toEqual({ ok: false, reason: "id_mismatch" });
  });

  it("§5.3 step 4: envelope whose from_user_id differs from the inner message is dropped", () => {
    // Carol re-encrypts a message signed by Alice and sends it to Bob under her own name.
    const signed = signInner(inner(alice, bob), alice.sk);
    const env = rawV3(carol, bob.pubHex, { id: signed.id, from_user_id: carol.npub, to_user_id: bob.npub }, JSON.stringify(signed));
    expect(openEnvelope(env, bob.sk)).toEqual({ ok: false, reason: "from_mismatch" });
  });

  it("§5.3 step 4: envelope whose to_user_id differs from the inner message is dropped", () => {
    const signed = signInner(inner(alice, bob), alice.sk);
    const env = sealEnvelope(signed, alice.sk);
    expect(openEnvelope({ ...env, to_user_id: carol.npub }, bob.sk)).toEqual({ ok: false, reason: "to_mismatch" });
  });

  it("§5.3 step 5: an inner message addressed to someone else is dropped", () => {
    // Alice encrypts to Bob's key, but the (consistent) inner and envelope name Carol.
    const signed = signInner(inner(alice, carol), alice.sk);
    const env = rawV3(alice, bob.pubHex, { id: signed.id, from_user_id: alice.npub, to_user_id: carol.npub }, JSON.stringify(signed));
    expect(openEnvelope(env, bob.sk)).toEqual({ ok: false, reason: "not_for_me" });
  });

  it("§5.3 step 6: an inner message without a valid authorship proof is dropped", () => {
    const unsigned = inner();
    const h = { id: unsigned.id, from_user_id: alice.npub, to_user_id: bob.npub };
    expect(openEnvelope(rawV3(alice, bob.pubHex, h, JSON.stringify(unsigned)), bob.sk)).toEqual({ ok: false, reason: "bad_proof" });
    const signed = signInner(unsigned, alice.sk);
    const tampered = { ...signed, payload: { amount: 7000 } };
    expect(openEnvelope(rawV3(alice, bob.pubHex, h, JSON.stringify(tampered)), bob.sk)).toEqual({ ok: false, reason: "bad_proof" });
  });

  it("§5.3: envelopes that fail the schema are malformed", () => {
    const env = sealEnvelope(signInner(inner(), alice.sk), alice.sk);
    const bad: unknown[] = [
      null,
      [],
      "peer_envelope",
      { ...env, type: "other" },
      { ...env, from_user_id: alice.pubHex },
      { ...env, to_user_id: "npub1" },
      { ...env, id: "" },
      { ...env, ciphertext: "" },
      { ...env, ciphertext: 5 },
    ];
    for (const b of bad) {
      const r = openEnvelope(b, bob.sk);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(["malformed", "unknown_version"]).toContain(r.reason);
    }
    expect(openEnvelope({ ...env, type: "other" }, bob.sk)).toEqual({ ok: false, reason: "malformed" });
  });
});

describe("peerEnvelopeSchema (relay validation)", () => {
  const env = sealEnvelope(signInner(inner(), alice.sk), alice.sk);

  it("accepts a sealed envelope and keeps unknown fields", () => {
    const r = peerEnvelopeSchema.safeParse({ ...env, queued_at: "2026-03-01T00:00:00Z", hint: { a: 1 } });
    expect(r.success).toBe(true);
    if (r.success) expect(r.data).toMatchObject({ queued_at: "2026-03-01T00:00:00Z", hint: { a: 1 } });
  });

  it("accepts any integer version (the relay does not interpret it) and ids of 1..128 characters", () => {
    expect(peerEnvelopeSchema.safeParse({ ...env, envelope_version: 2 }).success).toBe(true);
    expect(peerEnvelopeSchema.safeParse({ ...env, envelope_version: 7 }).success).toBe(true);
    expect(peerEnvelopeSchema.safeParse({ ...env, id: "x" }).success).toBe(true);
    expect(peerEnvelopeSchema.safeParse({ ...env, id: "x".repeat(128) }).success).toBe(true);
  });

  it("rejects bad types, ids, npubs and ciphertexts", () => {
    const bad: unknown[] = [
      { ...env, type: "envelope" },
      { ...env, envelope_version: 3.5 },
      { ...env, envelope_version: "3" },
      { ...env, id: "" },
      { ...env, id: "x".repeat(129) },
      { ...env, id: 5 },
      { ...env, from_user_id: alice.pubHex },
      { ...env, to_user_id: env.to_user_id.toUpperCase() },
      { ...env, to_user_id: undefined },
      { ...env, ciphertext: "" },
      { ...env, ciphertext: "abc" }, // not padded to a multiple of 4
      { ...env, ciphertext: "ab-_" }, // base64url alphabet
      { ...env, ciphertext: env.ciphertext + " " },
    ];
    for (const b of bad) expect(peerEnvelopeSchema.safeParse(b).success).toBe(false);
  });
});

describe("openEnvelope never throws (fuzz)", () => {
  const signed = signInner(inner(), alice.sk);
  const env = sealEnvelope(signed, alice.sk);
  const envV2 = sealLegacyV2(signed, alice.sk);

  it("arbitrary values and JSON values", () => {
    fc.assert(
      fc.property(fc.oneof(fc.anything(), fc.jsonValue()), (v) => {
        const r = openEnvelope(v, bob.sk);
        expect(r.ok).toBe(false);
        if (!r.ok) expect(typeof r.reason).toBe("string");
      }),
      { numRuns: 300 },
    );
  });

  it("valid headers with random ciphertext strings and random base64 bytes", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: "binary", maxLength: 400 }),
          fc.uint8Array({ maxLength: 400 }).map((b) => base64Encode(b)),
        ),
        fc.constantFrom(2, 3),
        (ciphertext, envelope_version) => {
          const r = openEnvelope({ ...env, envelope_version, ciphertext }, bob.sk);
          expect(r.ok).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("corrupted real envelopes: one character of the ciphertext changed, or a field replaced", () => {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";
    fc.assert(
      fc.property(fc.constantFrom(env, envV2), fc.nat(), fc.constantFrom(...alphabet), (e, i, c) => {
        const idx = i % e.ciphertext.length;
        fc.pre(e.ciphertext[idx] !== c);
        const ciphertext = e.ciphertext.slice(0, idx) + c + e.ciphertext.slice(idx + 1);
        expect(openEnvelope({ ...e, ciphertext }, bob.sk).ok).toBe(false);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.constantFrom("type", "envelope_version", "id", "from_user_id", "to_user_id", "ciphertext"), fc.anything(), (k, v) => {
        fc.pre(v !== (env as Record<string, unknown>)[k]);
        expect(openEnvelope({ ...env, [k]: v }, bob.sk).ok).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it("truncated ciphertexts", () => {
    for (const e of [env, envV2]) {
      for (let n = 0; n < e.ciphertext.length; n += 3) {
        expect(openEnvelope({ ...e, ciphertext: e.ciphertext.slice(0, n) }, bob.sk).ok).toBe(false);
      }
    }
  });

  it("a throwing getter or a bad secret key yields a failure, not an exception", () => {
    const hostile = { ...env };
    Object.defineProperty(hostile, "ciphertext", {
      enumerable: true,
      get() {
        throw new Error("boom");
      },
    });
    expect(openEnvelope(hostile, bob.sk).ok).toBe(false);
    expect(openEnvelope(env, new Uint8Array(32)).ok).toBe(false);
    expect(openEnvelope(env, "nope" as unknown as Uint8Array).ok).toBe(false);
  });
});

describe("openEnvelopeWith never throws and agrees with openEnvelope (fuzz)", () => {
  const signed = signInner(inner(), alice.sk);
  const env = sealEnvelope(signed, alice.sk);
  const keySigner = secretKeySigner(bob.sk);
  // A signer over another NIP-44 implementation, as a browser extension's would be.
  const foreign: TallySigner = {
    getPublicKey: async () => bob.pubHex,
    signEvent: async () => {
      throw new Error("not used");
    },
    nip44Encrypt: async (peer, text) => ntNip44.encrypt(text, ntNip44.utils.getConversationKey(bob.sk, peer)),
    nip44Decrypt: async (peer, payload) => ntNip44.decrypt(payload, ntNip44.utils.getConversationKey(bob.sk, peer)),
  };

  it("arbitrary values, random ciphertexts and corrupted real envelopes give the same verdict through either signer", async () => {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.anything(),
          fc.jsonValue(),
          fc.string({ unit: "binary", maxLength: 400 }).map((ciphertext) => ({ ...env, ciphertext })),
          fc.tuple(fc.nat(), fc.constantFrom(...alphabet)).map(([i, c]) => {
            const idx = i % env.ciphertext.length;
            return { ...env, ciphertext: env.ciphertext.slice(0, idx) + c + env.ciphertext.slice(idx + 1) };
          }),
        ),
        async (v) => {
          const sync = openEnvelope(v, bob.sk);
          const withKey = await openEnvelopeWith(v, keySigner, bob.pubHex);
          const withForeign = await openEnvelopeWith(v, foreign, bob.pubHex);
          expect(withKey.ok).toBe(sync.ok);
          expect(withForeign.ok).toBe(sync.ok);
          if (!sync.ok && !withKey.ok) expect(withKey.reason).toBe(sync.reason);
          if (!withForeign.ok) expect(withForeign.reason).not.toBe("signer_failed"); // a plain error is a bad envelope, not a signer failure
        },
      ),
      { numRuns: 300 },
    );
    expect(await openEnvelopeWith(env, foreign, bob.pubHex)).toMatchObject({ ok: true });
  });
});

describe("§5.2 key cache", () => {
  it("5.2 cache the v2 ECDH key per peer: the derived key is computed once per peer and reused", () => {
    const me = generateSecretKey();
    const [p1, p2] = [generateSecretKey(), generateSecretKey()].map(getPublicKeyHex);
    const first = legacyV2Key(me, p1);
    expect(legacyV2Key(me, p1)).toBe(first); // the same cached bytes, no second scalar multiplication
    expect(legacyV2Key(me, p2)).not.toBe(first);
    expect(legacyV2Key(generateSecretKey(), p1)).not.toBe(first); // per secret key too
    expect(conversationKey(me, p1)).toBe(conversationKey(me, p1));
  });
});
