// The Passnote protocol, "Session handshake": the ratchet-hello signature, the session root, the low and high
// send chains, one-use message keys, the wiped ephemeral secret, and a fail-closed opener (fuzzed).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { ed25519, x25519 } from "@noble/curves/ed25519.js";
import { expand, hkdf } from "@noble/hashes/hkdf.js";
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { concatBytes, randomBytes, utf8Encode } from "../../../../../shared/encoding";
import { KIND_RATCHET } from "../../../../../clients/passnote/protocol/seal";
import {
  Session,
  helloSignedBytes,
  newEphemeral,
  openSession,
  ratchetCounter,
  sessionRoot,
  signRatchetHello,
  verifyRatchetHello,
} from "../../../../../clients/passnote/protocol/session";

const str = (s: string) => concatBytes(Uint8Array.of(s.length), utf8Encode(s));

/** Two sides of one session, derived as each side would. */
function pairOfSessions(groupKey = randomBytes(32)) {
  const a = newEphemeral();
  const b = newEphemeral();
  const aPub = a.pub;
  const bPub = b.pub;
  const sa = openSession({ groupKey, mine: a, theirs: bPub, selfId: "1111111111111111", peerId: "2222222222222222" })!;
  const sb = openSession({ groupKey, mine: b, theirs: aPub, selfId: "2222222222222222", peerId: "1111111111111111" })!;
  return { sa, sb, a, b };
}

describe("the Passnote protocol: ratchet-hello", () => {
  const device = randomBytes(32);
  const fields = {
    from: "1111111111111111",
    to: "2222222222222222",
    device: "dev-1",
    keyTag: Uint8Array.of(1, 2, 3),
    ephemeral: randomBytes(32),
  };

  it('the Ed25519 signature covers "passnote-ratchet-hello-v2" ‖ from ‖ to ‖ deviceId ‖ keyTag ‖ ephemeral', () => {
    const expected = concatBytes(
      utf8Encode("passnote-ratchet-hello-v2"),
      str(fields.from),
      str(fields.to),
      str(fields.device),
      Uint8Array.of(3, 1, 2, 3),
      fields.ephemeral,
    );
    expect(helloSignedBytes(fields)).toEqual(expected);
    const hello = signRatchetHello(device, fields);
    expect(ed25519.verify(hello.signature, expected, ed25519.getPublicKey(device))).toBe(true);
    expect(verifyRatchetHello(ed25519.getPublicKey(device), hello)).toBe(true);
  });

  it("changing any signed field, or another device's key, fails verification", () => {
    const hello = signRatchetHello(device, fields);
    const pub = ed25519.getPublicKey(device);
    for (const changed of [
      { ...hello, from: "3333333333333333" },
      { ...hello, to: "3333333333333333" },
      { ...hello, device: "dev-2" },
      { ...hello, keyTag: Uint8Array.of(1, 2, 4) },
      { ...hello, ephemeral: randomBytes(32) },
      { ...hello, signature: randomBytes(64) },
    ]) {
      expect(verifyRatchetHello(pub, changed)).toBe(false);
    }
    expect(verifyRatchetHello(ed25519.getPublicKey(randomBytes(32)), hello)).toBe(false);
    expect(verifyRatchetHello(new Uint8Array(3), hello)).toBe(false);
  });
});

describe("the Passnote protocol: the session root and chains", () => {
  it('root = HKDF-SHA256(groupKey ‖ X25519(ephemeral, peerEphemeral), info "passnote-ratchet-root-v2" ‖ sorted node ids ‖ sorted ephemerals)', () => {
    const groupKey = randomBytes(32);
    const a = x25519.keygen();
    const b = x25519.keygen();
    const shared = x25519.getSharedSecret(a.secretKey, b.publicKey);
    const [eLo, eHi] = [a.publicKey, b.publicKey].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    const info = concatBytes(utf8Encode("passnote-ratchet-root-v2"), str("aaaa"), str("bbbb"), eLo, eHi);
    const expected = hkdf(sha256, concatBytes(groupKey, shared), new Uint8Array(0), info, 32);
    expect(sessionRoot(groupKey, shared, ["bbbb", "aaaa"], [b.publicKey, a.publicKey])).toEqual(expected);
    expect(sessionRoot(groupKey, x25519.getSharedSecret(b.secretKey, a.publicKey), ["aaaa", "bbbb"], [a.publicKey, b.publicKey])).toEqual(
      expected,
    );
  });

  it("the side with the lower node id sends on the low chain: message key 0 = HMAC(chain_low, 0x01), frame = 0x01 ‖ counter ‖ AEAD", () => {
    const root = randomBytes(32);
    const s = new Session(root.slice(), "1111111111111111", "2222222222222222");
    const sealed = s.seal(utf8Encode("frame"));
    expect(sealed[0]).toBe(KIND_RATCHET);
    expect(ratchetCounter(sealed)).toBe(0);
    const low = expand(sha256, root, utf8Encode("passnote-ratchet-chain-low-v2"), 32);
    const mk0 = hmac(sha256, low, Uint8Array.of(1));
    const opened = xchacha20poly1305(mk0, new Uint8Array(24), sealed.subarray(0, 9)).decrypt(sealed.subarray(9));
    expect(opened).toEqual(utf8Encode("frame"));
    const low1 = hmac(sha256, low, Uint8Array.of(2));
    const second = s.seal(utf8Encode("again"));
    expect(
      xchacha20poly1305(hmac(sha256, low1, Uint8Array.of(1)), new Uint8Array(24), second.subarray(0, 9)).decrypt(second.subarray(9)),
    ).toEqual(utf8Encode("again"));
  });

  it("both sides derive the same session: each side's send chain is the other's receive chain, not its own", () => {
    const { sa, sb } = pairOfSessions();
    const f = sa.seal(utf8Encode("to b"));
    expect(sb.open(f)).toEqual({ status: "ok", frame: utf8Encode("to b") });
    expect(sa.open(sb.seal(utf8Encode("to a")))).toEqual({ status: "ok", frame: utf8Encode("to a") });
    expect(sa.open(sa.seal(utf8Encode("own"))).status).toBe("unopenable");
  });

  it("another group key (key generation) gives another session: nothing opens", () => {
    const a = newEphemeral();
    const b = newEphemeral();
    const [aPub, bPub] = [a.pub, b.pub];
    const sa = openSession({ groupKey: randomBytes(32), mine: a, theirs: bPub, selfId: "1", peerId: "2" })!;
    const sb = openSession({ groupKey: randomBytes(32), mine: b, theirs: aPub, selfId: "2", peerId: "1" })!;
    expect(sb.open(sa.seal(utf8Encode("x"))).status).toBe("unopenable");
  });

  it("each side wipes its ephemeral private key once the session exists", () => {
    const mine = newEphemeral();
    const secret = mine.secret!;
    openSession({ groupKey: randomBytes(32), mine, theirs: newEphemeral().pub, selfId: "1", peerId: "2" });
    expect(mine.secret).toBeUndefined();
    expect(secret.every((b) => b === 0)).toBe(true);
    expect(openSession({ groupKey: randomBytes(32), mine, theirs: newEphemeral().pub, selfId: "1", peerId: "2" })).toBeNull();
  });
});

describe("the Passnote protocol: one-use message keys", () => {
  it("every frame uses a new key: the same frame sealed twice differs, and each opens once", () => {
    const { sa, sb } = pairOfSessions();
    const f1 = sa.seal(utf8Encode("same"));
    const f2 = sa.seal(utf8Encode("same"));
    expect(f1.subarray(9)).not.toEqual(f2.subarray(9));
    expect(sb.open(f1).status).toBe("ok");
    expect(sb.open(f2).status).toBe("ok");
    expect(sb.open(f1).status).toBe("stale");
    expect(sb.open(f2).status).toBe("stale");
  });

  it("a replayed frame is dropped; a frame another overtook is dropped; the frame ahead opens and the skipped key is gone", () => {
    const { sa, sb } = pairOfSessions();
    const f = [0, 1, 2].map((i) => sa.seal(Uint8Array.of(i)));
    expect(sb.open(f[1])).toEqual({ status: "ok", frame: Uint8Array.of(1) });
    expect(sb.open(f[0]).status).toBe("stale");
    expect(sb.open(f[1]).status).toBe("stale");
    expect(sb.open(f[2])).toEqual({ status: "ok", frame: Uint8Array.of(2) });
    expect(sb.expected).toBe(3);
  });

  it("a forged or corrupted frame does not open and does not move the chain", () => {
    const { sa, sb } = pairOfSessions();
    const f = sa.seal(utf8Encode("real"));
    const bad = f.slice();
    bad[bad.length - 1] ^= 1;
    expect(sb.open(bad).status).toBe("unopenable");
    expect(sb.expected).toBe(0);
    expect(sb.open(f).status).toBe("ok");
  });

  it("a counter more than ratchet_max_skip ahead is not tried", () => {
    const a = newEphemeral();
    const b = newEphemeral();
    const g = randomBytes(32);
    const [aPub, bPub] = [a.pub, b.pub];
    const sa = openSession({ groupKey: g, mine: a, theirs: bPub, selfId: "1", peerId: "2" })!;
    const sb = openSession({ groupKey: g, mine: b, theirs: aPub, selfId: "2", peerId: "1" })!;
    (sb as any).maxSkip = 3;
    for (let i = 0; i < 4; i++) sa.seal(Uint8Array.of(i));
    expect(sb.open(sa.seal(Uint8Array.of(9))).status).toBe("unopenable");
  });

  it("the opener is fail-closed (fuzz, fixed seed): random and mutated bytes never throw and never open", () => {
    const { sa, sb } = pairOfSessions();
    const real = sa.seal(utf8Encode("hello"));
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 200 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 4 }),
        (junk, flips) => {
          const withKind = concatBytes(Uint8Array.of(KIND_RATCHET), junk);
          for (const bytes of [junk, withKind]) {
            let r: ReturnType<Session["open"]> | undefined;
            expect(() => (r = sb.open(bytes))).not.toThrow();
            expect(r!.status).not.toBe("ok");
          }
          const m = real.slice();
          for (const [i, x] of flips) m[9 + (i % (m.length - 9))] ^= x; // corrupt the ciphertext or tag
          expect(sb.open(m).status).not.toBe("ok");
        },
      ),
      { seed: 51, numRuns: 300 },
    );
    expect(sb.open(real).status).toBe("ok");
  });
});
