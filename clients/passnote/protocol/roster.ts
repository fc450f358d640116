// Device identities and the roster (the Passnote protocol, "The layer stack" and "Session handshake"). With
// device identities (the default) the group shares three secrets and one public key:
//   rosterKey  32 bytes; seals plain frames (kind 0x00) and names the relay room. Every device
//              that ever joined keeps it, so it proves membership of nothing.
//   groupKey   32 bytes, the current key generation; enters every session root. keyTag is its tag.
//   owner      the Ed25519 public key of the device that founded the group: it alone signs roster
//              records (admissions and revocations).
// and every device holds its own Ed25519 key (the "device's Ed25519 roster key"), whose public
// half the roster lists.
//
// Profile decisions where the Passnote protocol is silent:
// - deviceId = hex of the first 16 bytes of SHA-256(device public key): a roster record can
//   never rebind a device id to another key.
// - The roster is the collection ROSTER_COLLECTION; one record per device: key = deviceId,
//   value = { pub: base64url(32 bytes), revoked: bool, sig: base64url(64 bytes) }, never deleted,
//   no crdt_type. sig = Ed25519(owner) over "passnote-roster-v2" ‖ str(deviceId) ‖ pub ‖
//   revoked (1 byte) ‖ str(hlc), so neither the flag nor the HLC can be changed or re-stamped.
//   Plain frames carry the roster, and anyone holding the roster key can send them, so a record
//   that does not verify under the owner's key is dropped before it is merged. Records merge by
//   last-writer-wins like every other (the owner's clock is monotonic, so a revocation is newer
//   than the admission it replaces, and a replayed admission loses).
// - keyTag = HKDF-SHA256(groupKey, salt empty, info "passnote-key-tag-v2", 8 bytes).
import * as z from "zod";
import { ed25519 } from "@noble/curves/ed25519.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { base64urlDecode, base64urlEncode, bytesToHex, randomBytes, utf8Encode } from "../../../shared/encoding";
import { Writer } from "./codec";
import type { WireRecord } from "./wire";

/** The roster's collection name, reserved: applications cannot write to it. */
export const ROSTER_COLLECTION = "_roster";
export const ROSTER_RECORD_CONTEXT = "passnote-roster-v2";
export const KEY_TAG_INFO = "passnote-key-tag-v2";
export const KEY_TAG_BYTES = 8;
export const DEVICE_ID_BYTES = 16;

/** What every device of a group holds (given to a new device when it is paired). */
export interface GroupCredentials {
  rosterKey: Uint8Array;
  groupKey: Uint8Array;
  /** The founding device's Ed25519 public key: the only key roster records are signed with. */
  owner: Uint8Array;
}

/** A device's identity in identity mode: the group's credentials and its own Ed25519 secret. */
export interface DeviceIdentity {
  group: GroupCredentials;
  /** This device's Ed25519 secret key (32-byte seed). */
  deviceKey: Uint8Array;
}

export interface RosterEntry {
  device: string;
  pub: Uint8Array;
  revoked: boolean;
}

const b64 = (bytes: number) =>
  z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/)
    .length(Math.ceil((bytes * 4) / 3));

/** The value of a roster record. */
export const rosterValueSchema = z.strictObject({ pub: b64(32), revoked: z.boolean(), sig: b64(64) });

export function newDeviceKey(): Uint8Array {
  return randomBytes(32);
}

export function devicePublicKey(deviceKey: Uint8Array): Uint8Array {
  return ed25519.getPublicKey(deviceKey);
}

export function deviceIdOf(pub: Uint8Array): string {
  return bytesToHex(sha256(pub).subarray(0, DEVICE_ID_BYTES));
}

export function keyTagOf(groupKey: Uint8Array): Uint8Array {
  return hkdf(sha256, groupKey, new Uint8Array(0), utf8Encode(KEY_TAG_INFO), KEY_TAG_BYTES);
}

/** Founds a group: fresh keys, and the founder's device key, whose public half is the owner. */
export function foundGroup(): DeviceIdentity {
  const deviceKey = newDeviceKey();
  return { deviceKey, group: { rosterKey: randomBytes(32), groupKey: randomBytes(32), owner: devicePublicKey(deviceKey) } };
}

function signedBytes(device: string, pub: Uint8Array, revoked: boolean, hlc: string): Uint8Array {
  return new Writer()
    .raw(utf8Encode(ROSTER_RECORD_CONTEXT))
    .string(device)
    .raw(pub)
    .byte(revoked ? 1 : 0)
    .string(hlc)
    .finish();
}

/** A roster record admitting (revoked = false) or revoking a device, signed with the owner's key. */
export function signRosterRecord(ownerKey: Uint8Array, pub: Uint8Array, revoked: boolean, hlc: string): WireRecord {
  const device = deviceIdOf(pub);
  const sig = ed25519.sign(signedBytes(device, pub, revoked, hlc), ownerKey);
  return { key: device, value: { pub: base64urlEncode(pub), revoked, sig: base64urlEncode(sig) }, is_deleted: false, hlc };
}

/** The entry a roster record states, or null unless it is well-formed and signed by the owner. Never throws. */
export function verifyRosterRecord(owner: Uint8Array, r: WireRecord): RosterEntry | null {
  if (r.is_deleted || r.crdt_type !== undefined) return null;
  const parsed = rosterValueSchema.safeParse(r.value);
  if (!parsed.success) return null;
  try {
    const pub = base64urlDecode(parsed.data.pub);
    const sig = base64urlDecode(parsed.data.sig);
    if (pub.length !== 32 || sig.length !== 64 || deviceIdOf(pub) !== r.key) return null;
    if (!ed25519.verify(sig, signedBytes(r.key, pub, parsed.data.revoked, r.hlc), owner)) return null;
    return { device: r.key, pub, revoked: parsed.data.revoked };
  } catch {
    return null;
  }
}
