// JSON Canonicalization Scheme (RFC 8785): the one canonical form every Minca signature and
// sealing label is computed over. ECMAScript's own number and string serialisation is the one
// RFC 8785 specifies, so this module only sorts members and refuses what has no canonical form.

export class JcsError extends Error {}

/** The canonical JSON text of `value`. Object members whose value is undefined are left out. */
export function canonicalize(value: unknown): string {
  switch (typeof value) {
    case "string":
      if (/\p{Surrogate}/u.test(value.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ""))) {
        throw new JcsError("lone surrogate in string");
      }
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new JcsError("number is not finite");
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "object": {
      if (value === null) return "null";
      if (Array.isArray(value)) {
        return `[${value
          .map((v) => {
            if (v === undefined) throw new JcsError("undefined in array");
            return canonicalize(v);
          })
          .join(",")}]`;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) throw new JcsError("only plain objects have a canonical form");
      const obj = value as Record<string, unknown>;
      // Default string order compares UTF-16 code units, as RFC 8785 section 3.2.3 requires.
      const keys = Object.keys(obj)
        .filter((k) => obj[k] !== undefined)
        .sort();
      return `{${keys.map((k) => `${canonicalize(k)}:${canonicalize(obj[k])}`).join(",")}}`;
    }
    default:
      throw new JcsError(`${typeof value} has no JSON form`);
  }
}
