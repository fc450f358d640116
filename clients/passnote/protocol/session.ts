// Ratchet sessions (the Passnote protocol, "Session handshake" and "The layer stack", kind 0x01). Per
// connection each side offers a fresh X25519 ephemeral key in a ratchet-hello signed with its
// device key over "passnote-ratchet-hello-v2" ‖ from ‖ to ‖ deviceId ‖ keyTag ‖ ephemeral. Once
// both hellos are in, the session root is
//   HKDF-SHA256(ikm = groupKey ‖ X25519(ephemeral, peerEphemeral), salt = empty,
//               info = "passnote-ratchet-root-v2" ‖ sorted node ids ‖ sorted ephemeral keys)
// and the low and high send chains derive from it; the side with the lower node id sends on the
// low chain. Every frame uses a one-use message key and advances its chain.
//
// Profile decisions (the Passnote protocol names the parts, not their bytes):
// - from / to are transport peer ids (the relay's 16-hex ids), so a receiver can check that a
//   hello comes from the transport peer it names. In the signature and the root's info every
//   string is str (varint length ‖ UTF-8); keyTag is bytes (varint length ‖ bytes).
// - chain_low = HKDF-Expand(root, "passnote-ratchet-chain-low-v2", 32), chain_high likewise with
//   "-high-"; per frame: message key = HMAC-SHA256(chain, 0x01), next chain = HMAC-SHA256(chain, 0x02).
// - Ratcheted frame: 0x01 ‖ counter (8 bytes, big-endian) ‖ XChaCha20-Poly1305(message key,
//   nonce = 24 zero bytes (the key is used once), frame, aad = 0x01 ‖ counter). A counter below
//   the next expected one (a replay, or a frame another overtook) is dropped. A counter ahead
//   (frames sealed before this side had the session, and dropped then) opens if it is at most
//   ratchet_max_skip ahead; the keys skipped over are discarded, never kept.
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { ed25519, x25519 } from "@noble/curves/ed25519.js";
import { hkdf, expand } from "@noble/hashes/hkdf.js";
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { concatBytes, utf8Encode } from "../../../shared/encoding";
import { PASSNOTE_LIMITS } from "../../../shared/limits";
import { Writer } from "./codec";
import { KIND_RATCHET } from "./seal";
import type { MessageOf } from "./wire";

const RATCHET_HELLO_CONTEXT = "passnote-ratchet-hello-v2";
const RATCHET_ROOT_INFO = "passnote-ratchet-root-v2";
const COUNTER_BYTES = 8;
const ZERO_NONCE = new Uint8Array(24);
const TAG_BYTES = 16;

export type RatchetHello = MessageOf<"ratchet-hello">;

/** This side's ephemeral key for one connection; `secret` is wiped once the session exists. */
export interface Ephemeral {
  pub: Uint8Array;
  secret?: Uint8Array;
}

/** Wipes an ephemeral's secret (fill(0)) and forgets it: it is never used after this. */
export function wipeEphemeral(e: Ephemeral | undefined): void {
  if (!e?.secret) return;
  e.secret.fill(0);
  e.secret = undefined;
}

export function newEphemeral(): Ephemeral {
  const { secretKey, publicKey } = x25519.keygen();
  return { pub: publicKey, secret: secretKey };
}

/** The bytes a ratchet-hello's signature covers. */
export function helloSignedBytes(h: Omit<RatchetHello, "type" | "signature">): Uint8Array {
  return new Writer()
    .raw(utf8Encode(RATCHET_HELLO_CONTEXT))
    .string(h.from)
    .string(h.to)
    .string(h.device)
    .bytes(h.keyTag)
    .raw(h.ephemeral)
    .finish();
}

export function signRatchetHello(deviceKey: Uint8Array, h: Omit<RatchetHello, "type" | "signature">): RatchetHello {
  return { type: "ratchet-hello", ...h, signature: ed25519.sign(helloSignedBytes(h), deviceKey) };
}

/** Whether the hello's signature verifies under `pub`. Never throws. */
export function verifyRatchetHello(pub: Uint8Array, h: RatchetHello): boolean {
  try {
    return ed25519.verify(h.signature, helloSignedBytes(h), pub);
  } catch {
    return false;
  }
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/** HKDF-SHA256(groupKey ‖ shared, info = label ‖ sorted node ids ‖ sorted ephemerals). */
export function sessionRoot(
  groupKey: Uint8Array,
  shared: Uint8Array,
  ids: [string, string],
  ephemerals: [Uint8Array, Uint8Array],
): Uint8Array {
  const [idLo, idHi] = [...ids].sort();
  const [eLo, eHi] = [...ephemerals].sort(compareBytes);
  const info = new Writer().raw(utf8Encode(RATCHET_ROOT_INFO)).string(idLo).string(idHi).raw(eLo).raw(eHi).finish();
  return hkdf(sha256, concatBytes(groupKey, shared), new Uint8Array(0), info, 32);
}

export function chainKeys(root: Uint8Array): { low: Uint8Array; high: Uint8Array } {
  return {
    low: expand(sha256, root, utf8Encode("passnote-ratchet-chain-low-v2"), 32),
    high: expand(sha256, root, utf8Encode("passnote-ratchet-chain-high-v2"), 32),
  };
}

/** One direction of a session: a chain key and the counter of the next frame. */
class Chain {
  constructor(
    private key: Uint8Array,
    public counter = 0,
  ) {}

  /** The message key for the current counter, without advancing. */
  messageKey(): Uint8Array {
    return hmac(sha256, this.key, Uint8Array.of(1));
  }

  /** The chain `steps` frames further on (this one is left as it is). */
  ahead(steps: number): Chain {
    let key = this.key.slice();
    for (let i = 0; i < steps; i++) {
      const next = hmac(sha256, key, Uint8Array.of(2));
      key.fill(0);
      key = next;
    }
    return new Chain(key, this.counter + steps);
  }

  /** Moves to the next counter; the old chain key is overwritten, so its message key is gone. */
  advance(): void {
    this.replaceWith(this.ahead(1));
  }

  replaceWith(other: Chain): void {
    this.key.fill(0);
    this.key = other.key;
    this.counter = other.counter;
  }
}

function counterBytes(n: number): Uint8Array {
  const b = new Uint8Array(COUNTER_BYTES);
  new DataView(b.buffer).setBigUint64(0, BigInt(n));
  return b;
}

type OpenResult = { status: "ok"; frame: Uint8Array } | { status: "stale" | "unopenable" };

/** An open session with one peer: a send chain and a receive chain. */
export class Session {
  private readonly sendChain: Chain;
  private readonly recvChain: Chain;

  constructor(
    root: Uint8Array,
    selfId: string,
    peerId: string,
    private readonly maxSkip: number = PASSNOTE_LIMITS.ratchet_max_skip,
  ) {
    const { low, high } = chainKeys(root);
    root.fill(0);
    const lowIsMine = selfId < peerId;
    this.sendChain = new Chain(lowIsMine ? low : high);
    this.recvChain = new Chain(lowIsMine ? high : low);
  }

  /** The counter the next received frame must carry (at least). */
  get expected(): number {
    return this.recvChain.counter;
  }

  /** 0x01 ‖ counter ‖ ciphertext under a one-use message key. */
  seal(frame: Uint8Array): Uint8Array {
    const header = concatBytes(Uint8Array.of(KIND_RATCHET), counterBytes(this.sendChain.counter));
    const mk = this.sendChain.messageKey();
    const ct = xchacha20poly1305(mk, ZERO_NONCE, header).encrypt(frame);
    mk.fill(0);
    this.sendChain.advance();
    return concatBytes(header, ct);
  }

  /**
   * Opens a frame. "stale" for a counter below the next expected one (a replay, or a frame that
   * another overtook); "unopenable" for anything else that fails (a forgery, another session, a
   * counter more than maxSkip ahead). A frame ahead of the expected counter opens, and the keys
   * skipped over are discarded, never kept. Only "ok" changes the chain. Never throws.
   */
  open(sealed: Uint8Array): OpenResult {
    const n = ratchetCounter(sealed);
    if (n === null || sealed.length < 1 + COUNTER_BYTES + TAG_BYTES) return { status: "unopenable" };
    if (n < this.recvChain.counter) return { status: "stale" };
    if (n - this.recvChain.counter > this.maxSkip) return { status: "unopenable" };
    const chain = this.recvChain.ahead(n - this.recvChain.counter);
    const mk = chain.messageKey();
    try {
      const frame = xchacha20poly1305(mk, ZERO_NONCE, sealed.subarray(0, 1 + COUNTER_BYTES)).decrypt(sealed.subarray(1 + COUNTER_BYTES));
      chain.advance();
      this.recvChain.replaceWith(chain);
      return { status: "ok", frame };
    } catch {
      return { status: "unopenable" };
    } finally {
      mk.fill(0);
    }
  }
}

/** The counter of a ratcheted frame, or null when it is not one. */
export function ratchetCounter(sealed: Uint8Array): number | null {
  if (!(sealed instanceof Uint8Array) || sealed.length < 1 + COUNTER_BYTES || sealed[0] !== KIND_RATCHET) return null;
  const n = new DataView(sealed.buffer, sealed.byteOffset + 1, COUNTER_BYTES).getBigUint64(0);
  return n > BigInt(Number.MAX_SAFE_INTEGER) ? null : Number(n);
}

interface SessionKeys {
  groupKey: Uint8Array;
  mine: Ephemeral;
  theirs: Uint8Array;
  selfId: string;
  peerId: string;
}

/**
 * The session two ephemerals give, leaving this side's secret as it is (a candidate: the caller
 * wipes the secret once it keeps a session). Null when the shared secret is degenerate.
 */
export function deriveSession(opts: SessionKeys): Session | null {
  const { mine } = opts;
  if (!mine.secret) return null;
  let shared: Uint8Array;
  try {
    shared = x25519.getSharedSecret(mine.secret, opts.theirs);
  } catch {
    return null;
  }
  const root = sessionRoot(opts.groupKey, shared, [opts.selfId, opts.peerId], [mine.pub, opts.theirs]);
  shared.fill(0);
  return new Session(root, opts.selfId, opts.peerId);
}

/**
 * Derives the session once both ephemerals are known, and wipes this side's ephemeral secret
 * (also when the peer's key is degenerate: then null).
 */
export function openSession(opts: SessionKeys): Session | null {
  try {
    return deriveSession(opts);
  } finally {
    wipeEphemeral(opts.mine);
  }
}
