// JSON Canonicalization Scheme (RFC 8785): the one canonical form every Minca signature and
// sealing label is computed over. ECMAScript's own number and string serialisation is the one
// RFC 8785 specifies, so this module only sorts members and refuses what has no canonical form.

export class JcsError extends Error {}

/** Any surrogate code unit: a string without one cannot hold a lone one (the common case, checked first). */
const SURROGATE = /[\uD800-\uDFFF]/;

/** The canonical JSON text of `value`. Object members whose value is undefined are left out. */
export function canonicalize(value: unknown): string {
  switch (typeof value) {
    case "string":
      return stringText(value);
    case "number":
      if (!Number.isFinite(value)) throw new JcsError("number is not finite");
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "object": {
      if (value === null) return "null";
      if (Array.isArray(value)) {
        let out = "[";
        for (let i = 0; i < value.length; i++) {
          const v = value[i];
          if (v === undefined) throw new JcsError("undefined in array");
          out += i === 0 ? canonicalize(v) : `,${canonicalize(v)}`;
        }
        return `${out}]`;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) throw new JcsError("only plain objects have a canonical form");
      const obj = value as Record<string, unknown>;
      // Default string order compares UTF-16 code units, as RFC 8785 section 3.2.3 requires.
      const keys = Object.keys(obj).sort();
      let out = "{";
      for (const k of keys) {
        const v = obj[k];
        if (v === undefined) continue;
        out += `${out.length === 1 ? "" : ","}${stringText(k)}:${canonicalize(v)}`;
      }
      return `${out}}`;
    }
    default:
      throw new JcsError(`${typeof value} has no JSON form`);
  }
}

function stringText(value: string): string {
  if (SURROGATE.test(value) && /\p{Surrogate}/u.test(value.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ""))) {
    throw new JcsError("lone surrogate in string");
  }
  return JSON.stringify(value);
}
