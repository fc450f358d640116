import { describe, expect, it } from "vitest";
import vectors from "../../../../fixtures/minca-code.vectors.json";
import { utf8Decode } from "../../../../../shared/encoding";
import { newP256Key } from "../../../../../shared/minca/es256";
import { checkKeyProof, keyProofBytes, signKeyProof, type KeyProofStatement } from "../../../../../clients/minca/protocol/key-proof";

describe("the Minca protocol section 2.4: key proofs", () => {
  it("signs exactly the bytes of both of the Minca protocol's examples", () => {
    for (const v of vectors.key_proof) {
      expect(utf8Decode(keyProofBytes(v.statement as KeyProofStatement))).toBe(v.bytes);
    }
  });

  it("over a code: the proof names the home's origin, and is refused at any other, or as an app's", async () => {
    const key = await newP256Key();
    const proof = await signKeyProof(key, { via: "code", recordsOnly: true, origin: "https://home.example" });
    const base = { audience: key.did, via: "code" as const, recordsOnly: true, origin: "https://home.example" };
    expect(await checkKeyProof(proof, base)).toBe(true);
    expect(await checkKeyProof(proof, { ...base, origin: "https://evil.example" })).toBe(false);
    expect(await checkKeyProof(proof, { ...base, recordsOnly: false })).toBe(false);
    expect(await checkKeyProof(proof, { audience: key.did, via: "popup", recordsOnly: true })).toBe(false);
    const other = await newP256Key();
    expect(await checkKeyProof(proof, { ...base, audience: other.did })).toBe(false);
  });

  it("a proof via a code without an origin cannot be made", () => {
    expect(() => keyProofBytes({ audience: vectors.dids[0], via: "code", recordsOnly: true })).toThrow();
  });
});
