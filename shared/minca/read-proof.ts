// Read proofs (docs/hosting.md): a private space's log is answered only to a request signed with its
// read key — Ed25519 over UTF-8("minca/space-read/v1") ‖ 0 ‖ UTF-8(space id) ‖ 0 ‖ UTF-8(time),
// sent as `Authorization: MincaRead <base64url sig>` with `Minca-Time: <unix seconds>`.
import { ed25519 } from "@noble/curves/ed25519.js";
import { base64urlDecode, base64urlEncode, concatBytes, utf8Encode } from "../encoding";
import { MINCA_HOST_LIMITS } from "../limits";
import { ed25519FromDidKey } from "./did-key";

const READ_LABEL = "minca/space-read/v1";
export const READ_SCHEME = "MincaRead";
export const TIME_HEADER = "Minca-Time";

export function readProofBytes(space: string, time: string): Uint8Array {
  return concatBytes(utf8Encode(READ_LABEL), Uint8Array.of(0), utf8Encode(space), Uint8Array.of(0), utf8Encode(time));
}

/** The two headers of a read proof, signed with the space's read seed. */
export function readProofHeaders(readSeed: Uint8Array, space: string, nowSeconds = Math.floor(Date.now() / 1000)): Record<string, string> {
  const time = String(nowSeconds);
  return { Authorization: `${READ_SCHEME} ${base64urlEncode(ed25519.sign(readProofBytes(space, time), readSeed))}`, [TIME_HEADER]: time };
}

export type ReadProofCheck = "ok" | "missing" | "invalid";

/**
 * Judges a request's read proof against the read keys that may read the space: missing when it
 * carries none (401), invalid when the time is malformed or off by more than the skew, or the
 * signature is not by one of the keys (403).
 */
export function checkReadProof(
  headers: { authorization: string | null; time: string | null },
  space: string,
  readKeys: readonly string[],
  nowSeconds: number,
): ReadProofCheck {
  if (!headers.authorization) return "missing";
  const m = /^MincaRead ([A-Za-z0-9_-]{86})$/.exec(headers.authorization.trim());
  const time = headers.time?.trim() ?? "";
  if (!m || !/^\d{1,15}$/.test(time)) return "invalid";
  if (Math.abs(Number(time) - nowSeconds) > MINCA_HOST_LIMITS.read_proof_skew_seconds) return "invalid";
  let sig: Uint8Array;
  try {
    sig = base64urlDecode(m[1]);
  } catch {
    return "invalid";
  }
  const msg = readProofBytes(space, time);
  for (const did of readKeys) {
    try {
      if (ed25519.verify(sig, msg, ed25519FromDidKey(did))) return "ok";
    } catch {
      // a malformed key reads nothing
    }
  }
  return "invalid";
}
