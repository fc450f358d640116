// The connection handshake (the Passnote protocol, "Connection handshake"): both sides send one on connect and
// reply once to the first one they receive; sync runs on the highest common wire version, and no
// overlap is PeerIncompatible. Capabilities are feature flags; unknown names are ignored:
//   recon1        range reconciliation;
//   x-edge-relay/recon2  range reconciliation in few round trips (profile, reconcile2.ts): offered
//                 with recon1; two peers that both offer it use it, any other pair keeps recon1.
//                 Its old name, recon2, is offered and read too for one release (a peer that
//                 offers only the old name gets reconcile2 under its old tag, 8);
//   x-edge-relay/digest  the periodic anti-entropy pass opens with one digest over a channel's
//                 collections (digest.ts); used with peers that offer it, hello with the others;
//   inst:<16 hex> a token minted per open database instance. A token not seen before from a peer
//                 that already sent one means that peer restarted: drop everything held for it and
//                 negotiate afresh. A token already seen changes nothing; the last 8 are remembered.
import { PASSNOTE_LIMITS as L } from "../../../shared/limits";
import { bytesToHex, randomBytes } from "../../../shared/encoding";
import { WIRE_VERSION, type MessageOf } from "./wire";

export const CAP_RECON = "recon1";
/** recon2, this project's extension: a vendor-prefixed name no version of the protocol will take. */
export const CAP_RECON2 = "x-edge-relay/recon2";
/** The anti-entropy pass opens with one digest of a channel's collections (digest.ts). */
export const CAP_DIGEST = "x-edge-relay/digest";
/** recon2's name before the vendor prefix: still offered and read for one release, then dropped. */
export const CAP_RECON2_LEGACY = "recon2";
const INST_RE = /^inst:([0-9a-f]{16})$/;

/** The wire versions this build speaks. Version 1 (Passnote 1.0) is no longer spoken. */
/**
 * Handshakes one side sends on one connection: one on connect and one reply to the first it
 * receives (the wire's "at most two frames each"); repairs never send a third.
 */
export const HANDSHAKES_PER_CONNECTION = 2;

export const SUPPORTED_VERSIONS: readonly number[] = [WIRE_VERSION];

export function newInstToken(): string {
  return bytesToHex(randomBytes(8));
}

export function makeHandshake(opts: {
  versions?: readonly number[];
  inst?: string;
  recon?: boolean;
  recon2?: boolean;
  digest?: boolean;
  deviceKey?: Uint8Array;
}): MessageOf<"handshake"> {
  const capabilities: string[] = [];
  if (opts.recon ?? true) capabilities.push(CAP_RECON);
  if ((opts.recon ?? true) && opts.recon2) capabilities.push(CAP_RECON2, CAP_RECON2_LEGACY);
  if (opts.digest) capabilities.push(CAP_DIGEST);
  if (opts.inst) capabilities.push(`inst:${opts.inst}`);
  return {
    type: "handshake",
    versions: [...(opts.versions ?? SUPPORTED_VERSIONS)],
    capabilities,
    deviceKey: opts.deviceKey ?? new Uint8Array(0),
  };
}

/** The highest version both sides speak, or null (PeerIncompatible). */
export function negotiateVersion(ours: readonly number[], theirs: readonly number[]): number | null {
  let best: number | null = null;
  for (const v of theirs) if (ours.includes(v) && (best === null || v > best)) best = v;
  return best;
}

/** The inst token of a handshake, if it carries a well-formed one. */
export function instToken(h: MessageOf<"handshake">): string | undefined {
  for (const c of h.capabilities) {
    const m = INST_RE.exec(c);
    if (m) return m[1];
  }
  return undefined;
}

/** The inst tokens seen from one transport peer (the last 8). */
export class InstTokens {
  private readonly seen: string[] = [];

  /**
   * Records a token and says what it means: "first" (no token from this peer before), "seen"
   * (a redelivery or replay: nothing changes) or "restart" (the peer restarted).
   */
  observe(token: string): "first" | "seen" | "restart" {
    if (this.seen.includes(token)) return "seen";
    const verdict = this.seen.length === 0 ? "first" : "restart";
    this.seen.push(token);
    if (this.seen.length > L.inst_tokens_remembered) this.seen.shift();
    return verdict;
  }

  get size(): number {
    return this.seen.length;
  }
}
