// Byte-level building blocks of Passnote frames (the Passnote protocol, "Frame encoding"): a writer and a
// strict reader, varints by arithmetic (no shifts, so 64-bit values survive JavaScript), and the
// compact tagged value encoding of record values (null, bool, int, double, string, list, map).
import { PASSNOTE_LIMITS } from "../../../shared/limits";
import { isWellFormedUnicode, utf8DecodeExact, utf8Encode } from "../../../shared/encoding";

/**
 * A double whose value is a whole number (2.0, -0 excluded): a plain JavaScript number of that
 * value would travel as an int, so the decoder hands it out wrapped, and the writer sends a
 * Double as a double whatever its value. A peer that relays a record thus keeps the type its
 * author gave (a typed peer reading 2.0 gets a double, not an int); an application writes
 * `new Double(2)` to send a whole number as a double.
 */
export class Double {
  constructor(readonly value: number) {
    if (typeof value !== "number") throw new TypeError("a Double holds a number");
  }
  valueOf(): number {
    return this.value;
  }
  toJSON(): number {
    return this.value;
  }
}

/**
 * A record value as the application sees it. Ints beyond 2^53 decode as bigint; a double decodes
 * as a number, or as a Double when its value is whole (so that it is re-encoded as a double).
 */
export type Value = null | boolean | number | bigint | string | Double | Value[] | { [key: string]: Value };

/** Whether a number written plainly would travel as an int (a safe integer, -0 excluded). */
function travelsAsInt(v: number): boolean {
  return Number.isSafeInteger(v) && !Object.is(v, -0);
}

/** Thrown by Reader on malformed input; decoders catch it and answer null. */
export class DecodeError extends Error {}

const VALUE_TAG = { null: 0, false: 1, true: 2, int: 3, double: 4, string: 5, list: 6, map: 7 } as const;

const TWO_64 = 1n << 64n;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

export class Writer {
  private buf = new Uint8Array(256);
  private n = 0;

  private room(k: number): void {
    if (this.n + k <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.n + k) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.n));
    this.buf = next;
  }

  byte(b: number): this {
    this.room(1);
    this.buf[this.n++] = b & 0xff;
    return this;
  }

  raw(bytes: Uint8Array): this {
    this.room(bytes.length);
    this.buf.set(bytes, this.n);
    this.n += bytes.length;
    return this;
  }

  /** Unsigned LEB128 of a non-negative safe integer or a bigint below 2^64, by division. */
  varint(v: number | bigint): this {
    if (typeof v === "number") {
      if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`varint out of range: ${v}`);
      while (v >= 128) {
        this.byte((v % 128) + 128);
        v = Math.floor(v / 128);
      }
      return this.byte(v);
    }
    if (v < 0n || v >= TWO_64) throw new RangeError(`varint out of range: ${v}`);
    while (v >= 128n) {
      this.byte(Number(v % 128n) + 128);
      v = v / 128n;
    }
    return this.byte(Number(v));
  }

  bytes(b: Uint8Array): this {
    return this.varint(b.length).raw(b);
  }

  /** A string as UTF-8. A lone surrogate would arrive as U+FFFD, so it is refused (RangeError). */
  string(s: string): this {
    if (!isWellFormedUnicode(s)) throw new RangeError("a string with a lone surrogate cannot travel exactly: refused");
    return this.bytes(utf8Encode(s));
  }

  f64(x: number): this {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, x, true);
    return this.raw(b);
  }

  value(v: Value, depth = 0): this {
    if (depth > PASSNOTE_LIMITS.max_value_depth) throw new RangeError("value nested too deeply");
    if (v === null) return this.byte(VALUE_TAG.null);
    if (v === true) return this.byte(VALUE_TAG.true);
    if (v === false) return this.byte(VALUE_TAG.false);
    if (typeof v === "bigint") {
      if (v < INT64_MIN || v > INT64_MAX) throw new RangeError("int outside 64 bits");
      return this.byte(VALUE_TAG.int).varint(v >= 0n ? v * 2n : -v * 2n - 1n);
    }
    if (typeof v === "number") {
      if (travelsAsInt(v)) return this.value(BigInt(v), depth);
      return this.byte(VALUE_TAG.double).f64(v);
    }
    if (v instanceof Double) return this.byte(VALUE_TAG.double).f64(v.value);
    if (typeof v === "string") return this.byte(VALUE_TAG.string).string(v);
    if (Array.isArray(v)) {
      this.byte(VALUE_TAG.list).varint(v.length);
      for (const item of v) this.value(item, depth + 1);
      return this;
    }
    if (typeof v === "object") {
      const keys = Object.keys(v);
      this.byte(VALUE_TAG.map).varint(keys.length);
      for (const k of keys) this.string(k).value(v[k], depth + 1);
      return this;
    }
    throw new TypeError(`not a Passnote value: ${typeof v}`);
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.n);
  }
}

export class Reader {
  private pos = 0;
  constructor(private readonly buf: Uint8Array) {}

  get remaining(): number {
    return this.buf.length - this.pos;
  }

  done(): boolean {
    return this.pos === this.buf.length;
  }

  byte(): number {
    if (this.pos >= this.buf.length) throw new DecodeError("truncated");
    return this.buf[this.pos++];
  }

  raw(n: number): Uint8Array {
    if (n > this.remaining) throw new DecodeError("truncated");
    const out = this.buf.slice(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** A varint as a bigint below 2^64; overlong (non-minimal) encodings are malformed. */
  varint64(): bigint {
    let v = 0n;
    let mul = 1n;
    for (let i = 0; i < 10; i++) {
      const b = this.byte();
      v += BigInt(b % 128) * mul;
      if (b < 128) {
        if (b === 0 && i > 0) throw new DecodeError("overlong varint");
        if (v >= TWO_64) throw new DecodeError("varint beyond 64 bits");
        return v;
      }
      mul *= 128n;
    }
    throw new DecodeError("varint too long");
  }

  /** A varint that must be a safe integer (lengths, counts, times). */
  varint(max = Number.MAX_SAFE_INTEGER): number {
    const v = this.varint64();
    if (v > BigInt(max)) throw new DecodeError("varint out of range");
    return Number(v);
  }

  /** A count of items that each take at least one byte: never more than the bytes left. */
  count(max: number): number {
    const n = this.varint(max);
    if (n > this.remaining) throw new DecodeError("count exceeds input");
    return n;
  }

  bytes(max = Number.MAX_SAFE_INTEGER): Uint8Array {
    const n = this.varint(max);
    return this.raw(n);
  }

  /** Skips n bytes unread. */
  skip(n: number): void {
    if (n > this.remaining) throw new DecodeError("truncated");
    this.pos += n;
  }

  string(maxBytes = Number.MAX_SAFE_INTEGER): string {
    return this.utf8(this.varint(maxBytes));
  }

  /** The next n bytes as UTF-8, exactly (a leading U+FEFF is part of the string). */
  utf8(n: number): string {
    const b = this.raw(n);
    try {
      return utf8DecodeExact(b);
    } catch {
      throw new DecodeError("invalid utf-8");
    }
  }

  /** The next n bytes as UTF-8, or null (the bytes consumed all the same) when they are not valid UTF-8. */
  utf8OrNull(n: number): string | null {
    if (n > this.remaining) throw new DecodeError("truncated");
    try {
      return this.utf8(n);
    } catch {
      return null; // the bytes were read: only their decoding failed
    }
  }

  f64(): number {
    const b = this.raw(8);
    return new DataView(b.buffer, b.byteOffset, 8).getFloat64(0, true);
  }

  value(depth = 0): Value {
    if (depth > PASSNOTE_LIMITS.max_value_depth) throw new DecodeError("value nested too deeply");
    const tag = this.byte();
    switch (tag) {
      case VALUE_TAG.null:
        return null;
      case VALUE_TAG.false:
        return false;
      case VALUE_TAG.true:
        return true;
      case VALUE_TAG.int: {
        const z = this.varint64();
        const v = z % 2n === 0n ? z / 2n : -(z + 1n) / 2n;
        return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
      }
      case VALUE_TAG.double: {
        const d = this.f64();
        return travelsAsInt(d) ? new Double(d) : d;
      }
      case VALUE_TAG.string:
        return this.string();
      case VALUE_TAG.list: {
        const n = this.count(Number.MAX_SAFE_INTEGER);
        const out: Value[] = [];
        for (let i = 0; i < n; i++) out.push(this.value(depth + 1));
        return out;
      }
      case VALUE_TAG.map: {
        const n = this.count(Math.floor(this.remaining / 2));
        const entries: Array<[string, Value]> = [];
        const seen = new Set<string>();
        for (let i = 0; i < n; i++) {
          const k = this.string();
          if (seen.has(k)) throw new DecodeError("duplicate map key");
          seen.add(k);
          entries.push([k, this.value(depth + 1)]);
        }
        // fromEntries defines own properties, so a "__proto__" key stays a plain key.
        return Object.fromEntries(entries);
      }
      default:
        throw new DecodeError(`unknown value tag ${tag}`);
    }
  }
}

/** Encodes one tagged value. */
export function encodeValue(v: Value): Uint8Array {
  return new Writer().value(v).finish();
}

/** Decodes one tagged value filling `bytes` exactly; null when malformed (never throws). */
export function decodeValue(bytes: Uint8Array): { value: Value } | null {
  try {
    const r = new Reader(bytes);
    const value = r.value();
    return r.done() ? { value } : null;
  } catch {
    return null;
  }
}
