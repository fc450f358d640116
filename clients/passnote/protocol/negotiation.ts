// The connection handshake as the engine runs it (the Passnote protocol, "Connection handshake"; the message
// and its rules are handshake.ts): reply once, restart on a new inst token, agree the highest
// common version or report PeerIncompatible, then open the exchange.
//
// Profile decision (the Passnote protocol is silent): after the version is agreed, the side with the lower
// transport peer id sends hello (the pull; both sides do without recon1); the other side can ask
// for it with poke (forceSync).
import { CAP_DIGEST, CAP_RECON, CAP_RECON2, CAP_RECON2_LEGACY, instToken, negotiateVersion } from "./handshake";
import type { EngineCore, PeerState } from "./engine-core";
import { deviceIdOf } from "./roster";
import { forgetEphemerals, sendRatchetHello } from "./sessions";
import type { MessageOf } from "./wire";

export function onHandshake(core: EngineCore, peer: string, state: PeerState, h: MessageOf<"handshake">): void {
  const token = instToken(h);
  // Any token not seen before from a peer that already spoke means a restart (the protocol says so): also the
  // first token after token-less handshakes.
  const verdict = token === undefined ? undefined : state.tokens.observe(token);
  const restart = verdict === "restart" || (verdict === "first" && state.tokenless);
  if (token === undefined) state.tokenless = true;
  if (restart) {
    // The peer restarted: drop its session, negotiated version and pending work, renegotiate.
    const tokens = state.tokens;
    state.window.close();
    forgetEphemerals(state); // the old connection's unused ephemeral secret is wiped
    state = { ...core.fresh(peer), tokens, inbound: state.inbound };
    core.peers.set(peer, state);
    core.emit("restarted", peer);
  }
  // The device the handshake names: a member whose frames we cannot open is asked for its hello.
  if (core.identity && h.deviceKey.length === 32) state.handshakeDevice = deviceIdOf(h.deviceKey);
  if (!state.replied) {
    state.replied = true;
    core.sendHandshake(peer, state); // none when a repair already sent the second
  }
  if (state.version !== undefined || state.incompatible) return;
  const v = negotiateVersion(core.versions, h.versions);
  if (v === null) {
    state.incompatible = true;
    core.emit("incompatible", peer, h.versions);
    return;
  }
  state.version = v;
  state.caps = new Set(h.capabilities);
  // Identity mode: offer a session with a fresh ephemeral key for this connection.
  if (core.identity) sendRatchetHello(core, peer, state);
  // With recon1 on both sides one pull suffices (leaves ship both ways); without it each side pulls.
  const self = core.opts.selfId();
  if (!usesRecon(core, state) || (self !== undefined && self < peer)) void core.send(peer, { type: "hello", node: core.node });
  core.emit("agreed", peer, v);
}

/** Whether range reconciliation runs with this peer (recon1 offered by both sides). */
export function usesRecon(core: EngineCore, state: PeerState): boolean {
  return state.caps.has(CAP_RECON) && core.recon;
}

/** Whether it runs as recon2 (offered by both sides, with recon1): then recon2 replaces recon1. */
export function usesRecon2(core: EngineCore, state: PeerState): boolean {
  return usesRecon(core, state) && (state.caps.has(CAP_RECON2) || state.caps.has(CAP_RECON2_LEGACY)) && !!core.opts.recon2;
}

/** Whether the anti-entropy pass opens with a digest (both sides offer x-edge-relay/digest). */
export function usesDigest(core: EngineCore, state: PeerState): boolean {
  return state.caps.has(CAP_DIGEST) && core.digest;
}
