import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { v2 as ntNip44 } from "nostr-tools/nip44";
import { getPublicKey } from "nostr-tools/pure";
import { hex } from "@scure/base";
import vectors from "../../../fixtures/nip44.vectors.json";
import { Nip44Error, calcPaddedLen, decrypt, encrypt, getConversationKey, getMessageKeys } from "../../../../shared/tally/nip44";
import { base64Encode, randomBytes } from "../../../../shared/encoding";

const V = vectors.v2;
const h = (s: string) => hex.decode(s);
const toHex = (b: Uint8Array) => hex.encode(b);

function expectNip44Error(fn: () => unknown): Nip44Error {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(Nip44Error);
    return e as Nip44Error;
  }
  throw new Error("expected a Nip44Error, nothing was thrown");
}

describe("NIP-44 v2: published valid vectors", () => {
  it("get_conversation_key: every vector", () => {
    expect(V.valid.get_conversation_key.length).toBeGreaterThan(0);
    for (const v of V.valid.get_conversation_key) {
      expect(toHex(getConversationKey(h(v.sec1), v.pub2)), v.sec1).toBe(v.conversation_key);
    }
  });

  it("get_message_keys: every vector", () => {
    const ck = h(V.valid.get_message_keys.conversation_key);
    expect(V.valid.get_message_keys.keys.length).toBeGreaterThan(0);
    for (const v of V.valid.get_message_keys.keys) {
      const k = getMessageKeys(ck, h(v.nonce));
      expect(toHex(k.chacha_key)).toBe(v.chacha_key);
      expect(toHex(k.chacha_nonce)).toBe(v.chacha_nonce);
      expect(toHex(k.hmac_key)).toBe(v.hmac_key);
    }
  });

  it("calc_padded_len: every vector", () => {
    expect(V.valid.calc_padded_len.length).toBeGreaterThan(0);
    for (const [len, padded] of V.valid.calc_padded_len) {
      expect(calcPaddedLen(len), String(len)).toBe(padded);
    }
  });

  it("encrypt_decrypt: conversation key from both sides, exact payload, decryption", () => {
    expect(V.valid.encrypt_decrypt.length).toBeGreaterThan(0);
    for (const v of V.valid.encrypt_decrypt) {
      const pub2 = getPublicKey(h(v.sec2));
      const pub1 = getPublicKey(h(v.sec1));
      expect(toHex(getConversationKey(h(v.sec1), pub2))).toBe(v.conversation_key);
      expect(toHex(getConversationKey(h(v.sec2), pub1))).toBe(v.conversation_key);
      const ck = h(v.conversation_key);
      expect(encrypt(v.plaintext, ck, h(v.nonce))).toBe(v.payload);
      expect(decrypt(v.payload, ck)).toBe(v.plaintext);
    }
  });

  // The vector file's encrypt_decrypt_long_msg entry is 65535 × "ф": 131070 UTF-8 bytes, twice the
  // NIP-44 v2 maximum, and its checksum is empty. A spec-exact implementation must refuse it
  // (nostr-tools 2.25 accepts it only through its non-standard extended-length prefix).
  it("encrypt_decrypt_long_msg: the vector's plaintext exceeds 65535 bytes and is refused", () => {
    expect(V.valid.encrypt_decrypt_long_msg.length).toBeGreaterThan(0);
    for (const v of V.valid.encrypt_decrypt_long_msg) {
      const plaintext = v.letter.repeat(v.repeat);
      const bytes = new TextEncoder().encode(plaintext).length;
      const ck = h(v.conversation_key);
      if (bytes > 65535) {
        expectNip44Error(() => encrypt(plaintext, ck, h(v.nonce)));
      } else {
        const payload = encrypt(plaintext, ck, h(v.nonce));
        expect(payload).toBe(ntNip44.encrypt(plaintext, ck, h(v.nonce)));
        expect(decrypt(payload, ck)).toBe(plaintext);
      }
    }
  });

  it("encrypt_decrypt_long_msg: with the vector's key and nonce, the largest plaintexts (65535 bytes) match nostr-tools and round-trip", () => {
    const v = V.valid.encrypt_decrypt_long_msg[0];
    const ck = h(v.conversation_key);
    const nonce = h(v.nonce);
    for (const plaintext of ["x".repeat(65535), v.letter.repeat(32767) + "x"]) {
      expect(new TextEncoder().encode(plaintext).length).toBe(65535);
      const payload = encrypt(plaintext, ck, nonce);
      expect(payload.length).toBe(87472); // the spec's maximum payload length
      expect(payload).toBe(ntNip44.encrypt(plaintext, ck, nonce));
      expect(decrypt(payload, ck)).toBe(plaintext);
      expect(ntNip44.decrypt(payload, ck)).toBe(plaintext);
    }
  });
});

describe("NIP-44 v2: published invalid vectors", () => {
  it("invalid.encrypt_msg_lengths: every length is refused with Nip44Error", () => {
    const ck = randomBytes(32);
    expect(V.invalid.encrypt_msg_lengths.length).toBeGreaterThan(0);
    for (const len of V.invalid.encrypt_msg_lengths) {
      expectNip44Error(() => encrypt("a".repeat(len), ck));
    }
  });

  it("invalid.decrypt_msg_lengths: payloads of those lengths, and payloads decoding to that many bytes, are refused", () => {
    const ck = randomBytes(32);
    expect(V.invalid.decrypt_msg_lengths.length).toBeGreaterThan(0);
    for (const len of V.invalid.decrypt_msg_lengths) {
      expectNip44Error(() => decrypt("A".repeat(len), ck));
      const data = randomBytes(len);
      if (len > 0) data[0] = 2;
      expectNip44Error(() => decrypt(base64Encode(data), ck));
    }
  });

  it("invalid.get_conversation_key: every vector is refused with Nip44Error", () => {
    expect(V.invalid.get_conversation_key.length).toBeGreaterThan(0);
    for (const v of V.invalid.get_conversation_key) {
      expectNip44Error(() => getConversationKey(h(v.sec1), v.pub2));
    }
  });

  it("invalid.decrypt: every vector is refused with Nip44Error, for the stated reason", () => {
    expect(V.invalid.decrypt.length).toBeGreaterThan(0);
    for (const v of V.invalid.decrypt) {
      const e = expectNip44Error(() => decrypt(v.payload, h(v.conversation_key)));
      const note = v.note.toLowerCase();
      if (note.includes("mac")) expect(e.message).toMatch(/MAC/);
      else if (note.includes("padding")) expect(e.message).toMatch(/padding/);
      else if (note.includes("base64")) expect(e.message).toMatch(/base64/);
      else if (note.includes("version")) expect(e.message).toMatch(/version/);
    }
  });
});

describe("NIP-44 v2: cross-check with nostr-tools (independent implementation)", () => {
  const textArb = fc.string({ unit: "grapheme", minLength: 1, maxLength: 400 });

  it("conversation keys agree for random key pairs, and are symmetric", () => {
    fc.assert(
      fc.property(fc.integer(), () => {
        const a = randomKey();
        const b = randomKey();
        const ours = getConversationKey(a, getPublicKey(b));
        expect(toHex(ours)).toBe(toHex(ntNip44.utils.getConversationKey(a, getPublicKey(b))));
        expect(toHex(ours)).toBe(toHex(getConversationKey(b, getPublicKey(a))));
      }),
      { numRuns: 30 },
    );
  });

  it("our payloads decrypt with nostr-tools and are byte-identical for the same nonce", () => {
    fc.assert(
      fc.property(
        textArb,
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        (pt, ck, nonce) => {
          const payload = encrypt(pt, ck, nonce);
          expect(payload).toBe(ntNip44.encrypt(pt, ck, nonce));
          expect(ntNip44.decrypt(payload, ck)).toBe(pt);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("nostr-tools payloads decrypt here", () => {
    fc.assert(
      fc.property(textArb, fc.uint8Array({ minLength: 32, maxLength: 32 }), (pt, ck) => {
        expect(decrypt(ntNip44.encrypt(pt, ck), ck)).toBe(pt);
      }),
      { numRuns: 300 },
    );
  });

  it("padding lengths agree with nostr-tools for every length up to 65535", () => {
    for (let len = 1; len <= 65535; len++) {
      if (calcPaddedLen(len) !== ntNip44.utils.calcPaddedLen(len)) {
        expect(calcPaddedLen(len), String(len)).toBe(ntNip44.utils.calcPaddedLen(len));
      }
    }
  });

  it("nostr-tools' non-standard extended-length payloads (plaintext > 65535 bytes) are refused", () => {
    const ck = randomBytes(32);
    const payload = ntNip44.encrypt("a".repeat(65536), ck);
    expectNip44Error(() => decrypt(payload, ck));
  });
});

function randomKey(): Uint8Array {
  for (;;) {
    const k = randomBytes(32);
    try {
      getPublicKey(k);
      return k;
    } catch {
      // out of range: draw again
    }
  }
}

describe("NIP-44 v2: decrypt is a decoder of untrusted input", () => {
  const ck = randomBytes(32);
  const valid = encrypt("hello, untrusted world", ck);

  it("random strings are refused with Nip44Error only", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (s) => {
        expectNip44Error(() => decrypt(s, ck));
      }),
      { numRuns: 300 },
    );
  });

  it("random version-2 data of plausible length is refused with Nip44Error only", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 400 }), (bytes) => {
        if (bytes.length > 0) bytes[0] = 2;
        expectNip44Error(() => decrypt(base64Encode(bytes), ck));
      }),
      { numRuns: 300 },
    );
  });

  it("every single-character corruption and every truncation of a real payload is refused", () => {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=#ф";
    fc.assert(
      fc.property(fc.nat(valid.length - 1), fc.constantFrom(...alphabet), (i, c) => {
        fc.pre(valid[i] !== c);
        expectNip44Error(() => decrypt(valid.slice(0, i) + c + valid.slice(i + 1), ck));
      }),
      { numRuns: 300 },
    );
    for (let n = 0; n < valid.length; n++) expectNip44Error(() => decrypt(valid.slice(0, n), ck));
  });

  it("a wrong conversation key fails the MAC; non-key inputs fail with Nip44Error", () => {
    expect(expectNip44Error(() => decrypt(valid, randomBytes(32))).message).toMatch(/MAC/);
    for (const bad of [null, undefined, 42, {}, [], "x".repeat(200)]) {
      expectNip44Error(() => decrypt(bad as unknown as string, ck));
      expectNip44Error(() => decrypt(valid, bad as unknown as Uint8Array));
    }
    expectNip44Error(() => decrypt(valid, randomBytes(31)));
  });

  it("encrypt refuses an empty plaintext, a lone surrogate and bad key or nonce sizes", () => {
    expectNip44Error(() => encrypt("", ck));
    expectNip44Error(() => encrypt("a\uD800b", ck));
    expectNip44Error(() => encrypt("a", randomBytes(16)));
    expectNip44Error(() => encrypt("a", ck, randomBytes(12)));
    expectNip44Error(() => calcPaddedLen(0));
    expectNip44Error(() => calcPaddedLen(1.5));
  });

  it("a fresh random nonce is used for every encryption", () => {
    const a = encrypt("same", ck);
    const b = encrypt("same", ck);
    expect(a).not.toBe(b);
    expect(decrypt(a, ck)).toBe("same");
    expect(decrypt(b, ck)).toBe("same");
  });
});
