// Canonical JSON for Tally authorship digests (the Tally protocol §3.3 "Digest construction").
//
// Rules: object keys sorted by UTF-16 code unit (the default JS sort) at every depth; no whitespace;
// arrays in order; strings and numbers written exactly as JSON.stringify writes them. It agrees
// with JSON.stringify wherever the value survives a JSON round trip, so
// canonicalJson(JSON.parse(JSON.stringify(x))) === canonicalJson(x), which is what lets a receiver
// recompute the digest a sender signed:
//   - object keys whose value is undefined are omitted; undefined in an array is written null;
//   - a value with a toJSON method (e.g. Date) is replaced by what toJSON returns.
// It throws (TypeError) where JSON.stringify would lose or change information silently or fail:
// NaN and ±Infinity, bigint, functions and symbols, cycles.
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8Encode } from "../encoding";

export function canonicalJson(value: unknown): string {
  return write(value, new Set(), "");
}

function write(value: unknown, stack: Set<object>, key: string): string {
  if (value !== null && typeof value === "object" && typeof (value as { toJSON?: unknown }).toJSON === "function") {
    value = (value as { toJSON: (k: string) => unknown }).toJSON(key);
  }
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
    case "boolean":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("canonicalJson: non-finite number");
      return JSON.stringify(value);
    case "object":
      break;
    default:
      throw new TypeError(`canonicalJson: cannot encode ${typeof value}`);
  }
  const obj = value as object;
  if (stack.has(obj)) throw new TypeError("canonicalJson: cyclic structure");
  stack.add(obj);
  let out: string;
  if (Array.isArray(obj)) {
    out = "[" + obj.map((v, i) => (v === undefined ? "null" : write(v, stack, String(i)))).join(",") + "]";
  } else {
    const rec = obj as Record<string, unknown>;
    const parts: string[] = [];
    for (const k of Object.keys(rec).sort()) {
      const v = rec[k];
      if (v === undefined) continue;
      parts.push(JSON.stringify(k) + ":" + write(v, stack, k));
    }
    out = "{" + parts.join(",") + "}";
  }
  stack.delete(obj);
  return out;
}

/** Hex SHA-256 of canonicalJson(inner without the keys "signature" and "proof"). */
export function innerDigestHex(inner: Record<string, unknown>): string {
  const { signature: _signature, proof: _proof, ...rest } = inner;
  return bytesToHex(sha256(utf8Encode(canonicalJson(rest))));
}
