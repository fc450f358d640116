// Key proofs (the Minca protocol section 2.4): the key an app or program asks a note for signs a statement
// binding its audience, via, recordsOnly and (via a code) the home's origin, so the proof is no
// use for any other kind of connection nor at any other home.
import { utf8Encode } from "../../../shared/encoding";
import { es256SignB64, es256Verify, type P256Key } from "../../../shared/minca/es256";
import { canonicalize } from "../../../shared/minca/jcs";

const KEY_PROOF_LABEL = "minca/connect-key/v1";

type Via = "popup" | "code";

export interface KeyProofStatement {
  audience: string;
  via: Via;
  recordsOnly: boolean;
  /** With via "code": the home's origin. */
  origin?: string;
}

/** The exact bytes a key signs: UTF-8(JCS({audience, origin?, proof, recordsOnly, via})). */
export function keyProofBytes(s: KeyProofStatement): Uint8Array {
  const statement: Record<string, unknown> = {
    audience: s.audience,
    proof: KEY_PROOF_LABEL,
    recordsOnly: s.recordsOnly,
    via: s.via,
  };
  if (s.via === "code") {
    if (typeof s.origin !== "string") throw new Error("a proof via a code names the home's origin");
    statement.origin = s.origin;
  }
  return utf8Encode(canonicalize(statement));
}

export async function signKeyProof(key: P256Key, s: Omit<KeyProofStatement, "audience">): Promise<string> {
  return es256SignB64(key, keyProofBytes({ ...s, audience: key.did }));
}

/** Whether `proof` is the audience key's signature over the statement. */
export async function checkKeyProof(proof: string, s: KeyProofStatement): Promise<boolean> {
  return es256Verify(s.audience, proof, keyProofBytes(s));
}
