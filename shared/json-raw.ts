// Finding a member of a JSON object as the exact text it was sent in, so that a relay can store
// and forward a nested object byte for byte (the Tally protocol section 6.2: the relay MUST NOT modify
// envelopes; a parse and re-serialise would rewrite number forms, escapes and large integers).
// The input must already be known to be valid JSON (JSON.parse succeeded on it).

function skipWs(s: string, i: number): number {
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
    else break;
  }
  return i;
}

/** The index after the string that opens at s[i] (a quote). */
export function skipString(s: string, i: number): number {
  // The next quote is found natively (indexOf), not one character at a time: envelopes and
  // versions are mostly long base64 strings. A quote ends the string unless an odd run of
  // backslashes stands before it; a run cannot reach back past `from`, which follows the opening
  // quote or an escaped one.
  let from = i + 1;
  for (;;) {
    const q = s.indexOf('"', from);
    if (q < 0) throw new Error("unterminated string");
    let b = q;
    while (b > from && s.charCodeAt(b - 1) === 0x5c) b--;
    if ((q - b) % 2 === 0) return q + 1;
    from = q + 1;
  }
}

function hasEscape(s: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (s.charCodeAt(i) === 0x5c) return true;
  return false;
}

function skipValue(s: string, i: number): number {
  i = skipWs(s, i);
  const c = s[i];
  if (c === '"') return skipString(s, i);
  if (c === "{" || c === "[") {
    let depth = 0;
    while (i < s.length) {
      const d = s[i];
      if (d === '"') {
        i = skipString(s, i);
        continue;
      }
      if (d === "{" || d === "[") depth++;
      else if (d === "}" || d === "]") {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    throw new Error("unterminated container");
  }
  while (i < s.length && !",}] \t\r\n".includes(s[i])) i++;
  return i;
}

/**
 * The raw text of member `key` of the top-level object in `json`, or undefined when the top
 * level is not an object or has no such member. With duplicate keys, the last one wins, as in
 * JSON.parse.
 */
export function rawMember(json: string, key: string): string | undefined {
  let i = skipWs(json, 0);
  if (json[i] !== "{") return undefined;
  i++;
  let found: string | undefined;
  for (;;) {
    i = skipWs(json, i);
    if (json[i] === "}") return found;
    if (json[i] !== '"') return found;
    const keyEnd = skipString(json, i);
    // A key without escapes is its text between the quotes; only escaped keys need decoding.
    const name = hasEscape(json, i + 1, keyEnd - 1) ? (JSON.parse(json.slice(i, keyEnd)) as string) : json.slice(i + 1, keyEnd - 1);
    i = skipWs(json, keyEnd);
    if (json[i] !== ":") return found;
    const start = skipWs(json, i + 1);
    const end = skipValue(json, start);
    if (name === key) found = json.slice(start, end);
    i = skipWs(json, end);
    if (json[i] === ",") i++;
  }
}

/**
 * Adds member `key` with `value` to the raw text of a JSON object, leaving every other byte as
 * it was. When the object already has that member, it is returned unchanged.
 */
export function withRawMember(rawObject: string, key: string, value: unknown, existing: boolean): string {
  if (existing) return rawObject;
  const end = rawObject.lastIndexOf("}");
  const body = rawObject.slice(0, end);
  const empty = /\{\s*$/.test(body);
  return `${body}${empty ? "" : ","}${JSON.stringify(key)}:${JSON.stringify(value)}}`;
}

/**
 * The raw text of each element of the top-level array in `json` (already known to be valid
 * JSON), or undefined when the top level is not an array: a host stores each version exactly as
 * it arrived.
 */
export function rawElements(json: string): string[] | undefined {
  let i = skipWs(json, 0);
  if (json[i] !== "[") return undefined;
  i++;
  const out: string[] = [];
  for (;;) {
    i = skipWs(json, i);
    if (json[i] === "]" || i >= json.length) return out;
    const end = skipValue(json, i);
    out.push(json.slice(i, end));
    i = skipWs(json, end);
    if (json[i] === ",") i++;
  }
}

/**
 * A member of JSON text that a parsed value lost or that a schema would drop or rename, or null:
 * a `__proto__` member anywhere (JSON.parse keeps it as a plain key, but object code and schema
 * layers that copy by assignment drop it), or a member name repeated within one object (JSON.parse
 * keeps only the last). Checked against the raw text: its members (the colons outside strings)
 * must be exactly the parsed value's. Iterative, so no nesting depth overflows the stack.
 * `raw` must be the text `value` was parsed from.
 */
export function lostMember(raw: string, value: unknown): string | null {
  let inRaw = 0;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === 0x22) i = skipString(raw, i) - 1;
    else if (c === 0x3a) inRaw++;
  }
  let parsed = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== "object") continue;
    if (Array.isArray(v)) {
      for (const x of v) stack.push(x);
      continue;
    }
    for (const k of Object.keys(v)) {
      if (k === "__proto__") return "a member named __proto__";
      parsed++;
      stack.push((v as Record<string, unknown>)[k]);
    }
  }
  return parsed === inRaw ? null : "a member name repeated within one object";
}
