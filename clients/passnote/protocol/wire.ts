// The Passnote frame (the Passnote protocol, "Frame encoding" and "Messages"): magic 0xC7 ‖ version ‖ type ‖
// body, version 0x02 for every message but the handshake, which keeps 0x01 so that a 1.0 peer
// can still read which versions this build speaks. One typed union of the seven messages, an
// encoder, and decodeMessage, which is fail-closed: malformed, truncated, unknown-tag,
// wrong-version, trailing-byte or too-deeply-nested input returns null and never throws.
//
// Body layouts (profile: the Passnote protocol names the fields, not their order). str = varint length ‖
// UTF-8; bytes = varint length ‖ bytes; n× = varint count, then the items.
//   1 hello          node: str
//   2 state          n× (collection: str, watermark: str; "" when the sender holds nothing)
//   3 delta          collection: str, n× record (n ≤ 500)
//                    record = key: str, value: tagged value, flags: byte (1 deleted, 2 crdt_type present),
//                             hlc: str, [crdt_type: str]
//   4 poke           (empty)
//   5 ratchet-hello  from: str, to: str, device: str, keyTag: bytes, ephemeral: 32 bytes, sig: 64 bytes
//   6 handshake      n× version: varint, n× capability: str, deviceKey: bytes (empty without identity)
//                    (past 16 versions, 32 capabilities or a capability over 1,024 bytes: the excess is ignored;
//                    so is a version above 255 and a capability that is not valid UTF-8)
//   7 reconcile      collection: str, n× probe (n ≤ 64), n× request
//                    probe = start: varint, end: varint, depth: byte, count: varint, fingerprint: 16 bytes
//                    request = start: varint, end: varint       (ranges are [start, end) in HLC wall ms)
//   0xF0 reconcile2  capability x-edge-relay/recon2 only (profile; tag 8 and capability recon2
//                    before, still read for one release): collection: str, n× range; see reconcile2-wire.ts
//   0xF1 digest      capability x-edge-relay/digest only (profile): digest: 16 bytes; see digest.ts
import { PASSNOTE_LIMITS as L } from "../../../shared/limits";
import { DecodeError, Reader, Writer, type Value } from "./codec";
import { parseHlc } from "./hlc";
import { readReconcile2, writeReconcile2, type Reconcile2 } from "./reconcile2-wire";

export const MAGIC = 0xc7;
export const WIRE_VERSION = 2;
/** The handshake's own version byte. */
const HANDSHAKE_VERSION = 1;
export const FINGERPRINT_BYTES = 16;

/**
 * Message tags 1-7 are the protocol's. This project's own extension messages take tags from a
 * private range, 0xF0-0xFF (240-255), far above any tag the protocol assigns, so a later version
 * of the protocol that defines tag 8, 9... never collides with them; capabilities of extensions
 * carry the vendor prefix "x-edge-relay/" for the same reason.
 */
export const PRIVATE_TAGS = { first: 0xf0, last: 0xff } as const;

export const MESSAGE_TAG = {
  hello: 1,
  state: 2,
  delta: 3,
  poke: 4,
  "ratchet-hello": 5,
  handshake: 6,
  reconcile: 7,
  reconcile2: 0xf0,
  digest: 0xf1,
} as const;

/** Bytes of a digest (the anti-entropy pass's one summary of a channel's collections). */
export const DIGEST_BYTES = 16;

/**
 * The tag reconcile2 had before it moved to the private range, still read (and sent to a peer
 * that offers only the old capability name) for one release.
 */
export const LEGACY_RECONCILE2_TAG = 8;

export interface WireRecord {
  key: string;
  value: Value;
  is_deleted: boolean;
  hlc: string;
  crdt_type?: string;
}

export interface Range {
  start: number;
  end: number;
}

export interface Probe extends Range {
  depth: number;
  count: number;
  fingerprint: Uint8Array;
}

export type Message =
  | { type: "hello"; node: string }
  | { type: "state"; watermarks: Array<{ collection: string; watermark: string }> }
  | { type: "delta"; collection: string; records: WireRecord[] }
  | { type: "poke" }
  | {
      type: "ratchet-hello";
      from: string;
      to: string;
      device: string;
      keyTag: Uint8Array;
      ephemeral: Uint8Array;
      signature: Uint8Array;
    }
  | { type: "handshake"; versions: number[]; capabilities: string[]; deviceKey: Uint8Array }
  | { type: "reconcile"; collection: string; probes: Probe[]; requests: Range[] }
  | Reconcile2
  | { type: "digest"; digest: Uint8Array };

type MessageType = Message["type"];
export type MessageOf<T extends MessageType> = Extract<Message, { type: T }>;

const FLAG_DELETED = 1;
const FLAG_CRDT = 2;

export function encodeRecord(w: Writer, r: WireRecord): Writer {
  w.string(r.key).value(r.value);
  w.byte((r.is_deleted ? FLAG_DELETED : 0) | (r.crdt_type !== undefined ? FLAG_CRDT : 0));
  w.string(r.hlc);
  if (r.crdt_type !== undefined) w.string(r.crdt_type);
  return w;
}

/** Encodes one message as a frame. Throws on values the wire cannot carry (a caller bug). */
export function encodeMessage(m: Message): Uint8Array {
  const w = new Writer()
    .byte(MAGIC)
    .byte(m.type === "handshake" ? HANDSHAKE_VERSION : WIRE_VERSION)
    .byte(MESSAGE_TAG[m.type]);
  switch (m.type) {
    case "hello":
      w.string(m.node);
      break;
    case "state":
      w.varint(m.watermarks.length);
      for (const s of m.watermarks) w.string(s.collection).string(s.watermark);
      break;
    case "delta":
      if (m.records.length > L.delta_max_records) throw new RangeError("delta over 500 records");
      w.string(m.collection).varint(m.records.length);
      for (const r of m.records) encodeRecord(w, r);
      break;
    case "poke":
      break;
    case "ratchet-hello":
      if (m.ephemeral.length !== 32 || m.signature.length !== 64) throw new RangeError("ratchet-hello key sizes");
      w.string(m.from).string(m.to).string(m.device).bytes(m.keyTag).raw(m.ephemeral).raw(m.signature);
      break;
    case "handshake":
      w.varint(m.versions.length);
      for (const v of m.versions) w.varint(v);
      w.varint(m.capabilities.length);
      for (const c of m.capabilities) w.string(c);
      w.bytes(m.deviceKey);
      break;
    case "reconcile":
      if (m.probes.length > L.recon_max_probes) throw new RangeError("reconcile over 64 probes");
      w.string(m.collection).varint(m.probes.length);
      for (const p of m.probes) {
        if (p.fingerprint.length !== FINGERPRINT_BYTES) throw new RangeError("fingerprint size");
        w.varint(p.start).varint(p.end).byte(p.depth).varint(p.count).raw(p.fingerprint);
      }
      w.varint(m.requests.length);
      for (const r of m.requests) w.varint(r.start).varint(r.end);
      break;
    case "reconcile2":
      writeReconcile2(w, m);
      break;
    case "digest":
      if (m.digest.length !== DIGEST_BYTES) throw new RangeError("digest size");
      w.raw(m.digest);
      break;
  }
  return w.finish();
}

const name = (r: Reader) => r.string(L.max_name_bytes);

function readRecord(r: Reader): WireRecord {
  const key = name(r);
  const value = r.value();
  const flags = r.byte();
  if (flags & ~(FLAG_DELETED | FLAG_CRDT)) throw new DecodeError("unknown record flags");
  const hlc = name(r);
  if (!parseHlc(hlc)) throw new DecodeError("malformed hlc");
  const rec: WireRecord = { key, value, is_deleted: (flags & FLAG_DELETED) !== 0, hlc };
  if (flags & FLAG_CRDT) rec.crdt_type = name(r);
  return rec;
}

function readRange(r: Reader): Range {
  const start = r.varint();
  const end = r.varint();
  if (end <= start) throw new DecodeError("empty range");
  return { start, end };
}

function readBody(type: number, r: Reader): Message {
  switch (type) {
    case MESSAGE_TAG.hello:
      return { type: "hello", node: name(r) };
    case MESSAGE_TAG.state: {
      // Any number of entries: a peer built otherwise may name all its collections in one state
      // (each entry takes at least two bytes, so the count is bounded by the message).
      const n = r.count(Number.MAX_SAFE_INTEGER);
      const watermarks = [];
      for (let i = 0; i < n; i++) {
        const collection = name(r);
        const watermark = name(r);
        if (watermark !== "" && !parseHlc(watermark)) throw new DecodeError("malformed watermark");
        watermarks.push({ collection, watermark });
      }
      return { type: "state", watermarks };
    }
    case MESSAGE_TAG.delta: {
      const collection = name(r);
      const n = r.count(L.delta_max_records);
      const records = [];
      for (let i = 0; i < n; i++) records.push(readRecord(r));
      return { type: "delta", collection, records };
    }
    case MESSAGE_TAG.poke:
      return { type: "poke" };
    case MESSAGE_TAG["ratchet-hello"]:
      return {
        type: "ratchet-hello",
        from: name(r),
        to: name(r),
        device: name(r),
        keyTag: r.bytes(64),
        ephemeral: r.raw(32),
        signature: r.raw(64),
      };
    case MESSAGE_TAG.handshake: {
      // The excess is ignored, not the handshake (seed: unknown capabilities are ignored): counts
      // are bounded only by the bytes left; the first 16 versions and the first 32 capabilities of
      // at most 1,024 bytes are kept, and a longer capability is skipped over unread.
      // Items this build cannot use are ignored the same way: a version above 255 (a well-formed
      // varint up to 64 bits) and a capability that is not valid UTF-8.
      const nv = r.count(Number.MAX_SAFE_INTEGER);
      const versions = [];
      for (let i = 0; i < nv; i++) {
        const v = r.varint64();
        if (v <= 255n && versions.length < L.handshake_max_versions) versions.push(Number(v));
      }
      const nc = r.count(Number.MAX_SAFE_INTEGER);
      const capabilities = [];
      for (let i = 0; i < nc; i++) {
        const n = r.varint();
        if (n > L.max_name_bytes || capabilities.length >= L.handshake_max_capabilities) r.skip(n);
        else {
          const c = r.utf8OrNull(n);
          if (c !== null) capabilities.push(c);
        }
      }
      const deviceKey = r.bytes(64);
      return { type: "handshake", versions, capabilities, deviceKey };
    }
    case MESSAGE_TAG.reconcile: {
      const collection = name(r);
      const np = r.count(L.recon_max_probes);
      const probes: Probe[] = [];
      for (let i = 0; i < np; i++) {
        const range = readRange(r);
        const depth = r.byte();
        if (depth > L.recon_max_depth) throw new DecodeError("probe too deep");
        const count = r.varint();
        probes.push({ ...range, depth, count, fingerprint: r.raw(FINGERPRINT_BYTES) });
      }
      const nr = r.count(L.recon_max_requests);
      const requests = [];
      for (let i = 0; i < nr; i++) requests.push(readRange(r));
      return { type: "reconcile", collection, probes, requests };
    }
    case MESSAGE_TAG.reconcile2:
    case LEGACY_RECONCILE2_TAG:
      return readReconcile2(r, name);
    case MESSAGE_TAG.digest:
      return { type: "digest", digest: r.raw(DIGEST_BYTES) };
    default:
      throw new DecodeError(`unknown message tag ${type}`);
  }
}

/** Decodes one frame; null for anything malformed. Never throws. */
export function decodeMessage(frame: Uint8Array): Message | null {
  try {
    if (!(frame instanceof Uint8Array) || frame.length < 3 || frame[0] !== MAGIC) return null;
    const version = frame[1];
    const type = frame[2];
    if (version !== (type === MESSAGE_TAG.handshake ? HANDSHAKE_VERSION : WIRE_VERSION)) return null;
    const r = new Reader(frame.subarray(3));
    const m = readBody(type, r);
    return r.done() ? m : null;
  } catch {
    return null;
  }
}
