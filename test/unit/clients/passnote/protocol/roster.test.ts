// The roster (profile where the Passnote protocol is silent): device ids, the owner-signed record, keyTag,
// and a fail-closed record verifier (fuzzed).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ed25519 } from "@noble/curves/ed25519.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, concatBytes, randomBytes, utf8Encode, base64urlDecode } from "../../../../../shared/encoding";
import { formatHlc } from "../../../../../clients/passnote/protocol/hlc";
import {
  deviceIdOf,
  devicePublicKey,
  foundGroup,
  keyTagOf,
  newDeviceKey,
  signRosterRecord,
  verifyRosterRecord,
} from "../../../../../clients/passnote/protocol/roster";
import type { Value } from "../../../../../clients/passnote/protocol/codec";

const hlc = formatHlc({ wall: 1_733_140_000_000, counter: 1, node: "alice" });
const str = (s: string) => concatBytes(Uint8Array.of(s.length), utf8Encode(s));

describe("roster (profile): device records", () => {
  const { deviceKey: ownerKey, group } = foundGroup();
  const pub = devicePublicKey(newDeviceKey());

  it("deviceId = hex of the first 16 bytes of SHA-256(device public key)", () => {
    expect(deviceIdOf(pub)).toBe(bytesToHex(sha256(pub).subarray(0, 16)));
    expect(group.owner).toEqual(devicePublicKey(ownerKey));
  });

  it('a record is { pub, revoked, sig }, sig = Ed25519(owner) over "passnote-roster-v2" ‖ deviceId ‖ pub ‖ revoked ‖ hlc', () => {
    const r = signRosterRecord(ownerKey, pub, false, hlc);
    expect(r).toMatchObject({ key: deviceIdOf(pub), is_deleted: false, hlc, value: { revoked: false } });
    const v = r.value as { pub: string; sig: string };
    expect(base64urlDecode(v.pub)).toEqual(pub);
    const signed = concatBytes(utf8Encode("passnote-roster-v2"), str(deviceIdOf(pub)), pub, Uint8Array.of(0), str(hlc));
    expect(ed25519.verify(base64urlDecode(v.sig), signed, group.owner)).toBe(true);
    expect(verifyRosterRecord(group.owner, r)).toEqual({ device: deviceIdOf(pub), pub, revoked: false });
    expect(verifyRosterRecord(group.owner, signRosterRecord(ownerKey, pub, true, hlc))?.revoked).toBe(true);
  });

  it("a record signed by anyone but the owner, or changed in any field, is refused", () => {
    const good = signRosterRecord(ownerKey, pub, false, hlc);
    const v = good.value as Record<string, Value>;
    const other = devicePublicKey(newDeviceKey());
    for (const bad of [
      signRosterRecord(newDeviceKey(), pub, false, hlc), // another signer
      { ...good, hlc: formatHlc({ wall: 1_733_140_000_001, counter: 1, node: "alice" }) }, // re-stamped
      { ...good, value: { ...v, revoked: true } }, // flag flipped
      { ...good, key: deviceIdOf(other) }, // rebound to another id
      { ...good, is_deleted: true },
      { ...good, crdt_type: "lww" },
      { ...good, value: { ...v, extra: 1 } },
      { ...good, value: "not a map" },
    ]) {
      expect(verifyRosterRecord(group.owner, bad)).toBeNull();
    }
  });

  it("keyTag = HKDF-SHA256(groupKey, salt empty, 'passnote-key-tag-v2', 8 bytes); another generation, another tag", () => {
    const g = randomBytes(32);
    expect(keyTagOf(g)).toEqual(hkdf(sha256, g, new Uint8Array(0), utf8Encode("passnote-key-tag-v2"), 8));
    expect(keyTagOf(randomBytes(32))).not.toEqual(keyTagOf(g));
  });

  it("the record verifier is fail-closed (fuzz, fixed seed): any value never throws and never verifies", () => {
    const valueArb: fc.Arbitrary<Value> = fc.oneof(
      fc.constant(null),
      fc.string(),
      fc.integer(),
      fc.dictionary(
        fc.constantFrom("pub", "revoked", "sig", "x"),
        fc.oneof(
          fc.string(),
          fc.boolean(),
          fc.constant(null),
          fc.uint8Array({ minLength: 32, maxLength: 64 }).map((b) => Buffer.from(b).toString("base64url")),
        ),
      ),
    );
    fc.assert(
      fc.property(valueArb, fc.string(), fc.boolean(), (value, key, del) => {
        let out: unknown = "unset";
        expect(() => (out = verifyRosterRecord(group.owner, { key, value, is_deleted: del, hlc }))).not.toThrow();
        expect(out).toBeNull();
      }),
      { seed: 61, numRuns: 500 },
    );
  });
});
