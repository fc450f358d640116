// Reading JSON a client sent over HTTP (a POST body, an invite inside one). Every way it can be
// wrong is an answer, never a throw: the nesting depth is bounded on the raw text before it is
// parsed (a deep value overflows the stack of every recursive step after JSON.parse: schemas,
// canonical JSON, the structured clone of an RPC call), and a string or member name holding a
// lone surrogate is refused (RFC 7493, I-JSON: such a string has no UTF-8 form, so it cannot be
// hashed, signed or stored exactly). Pure; iterative, so no input overflows the stack here either.
import { isWellFormedUnicode } from "./encoding";
import { COMMON_LIMITS } from "./limits";

type ClientJson = { ok: true; value: unknown } | { ok: false; reason: string };

/** Whether arrays and objects in JSON text nest deeper than `max` (strings skipped; the text need not be valid). */
export function jsonNestsDeeper(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // skip the string: up to the next quote not escaped
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/**
 * Whether JSON text could parse to a string holding a surrogate at all: a surrogate code unit in
 * the text itself, or a \u escape of one (\uD800 to \uDFFF, any case). Text with neither (nearly
 * every client's) needs no walk of the parsed value; a false "maybe" (an escaped backslash before
 * a "uD8") only costs the walk.
 */
const SURROGATE_OR_ESCAPE = /[\uD800-\uDFFF]|\\u[dD][89a-fA-F]/;
function mayHoldSurrogate(text: string): boolean {
  return SURROGATE_OR_ESCAPE.test(text);
}

/** A string or member name anywhere in `value` that is not well-formed Unicode, or null. */
function loneSurrogateIn(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") {
      if (!isWellFormedUnicode(v)) return true;
    } else if (Array.isArray(v)) {
      for (const x of v) stack.push(x);
    } else if (v !== null && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) {
        if (!isWellFormedUnicode(k)) return true;
        stack.push(x);
      }
    }
  }
  return false;
}

/** Parses client JSON within COMMON_LIMITS.max_json_depth, refusing lone surrogates. */
export function parseClientJson(text: string, maxDepth: number = COMMON_LIMITS.max_json_depth): ClientJson {
  if (jsonNestsDeeper(text, maxDepth)) return { ok: false, reason: `JSON nests deeper than ${maxDepth} levels` };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: "not JSON" };
  }
  if (mayHoldSurrogate(text) && loneSurrogateIn(value)) return { ok: false, reason: "a string holds a lone surrogate (not I-JSON)" };
  return { ok: true, value };
}
