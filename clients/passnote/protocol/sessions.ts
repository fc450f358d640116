// Identity mode, as the engine runs it (the Passnote protocol, "Session handshake"; the bytes are session.ts):
// send a ratchet-hello with a fresh ephemeral key once the version is agreed, accept a peer's
// hello only under the checks of the Passnote protocol (or hold it until its device's roster record arrives),
// open the session, ask a peer to re-send its hello when its frames cannot be opened
// (rate-limited), and end sessions with devices the roster no longer lists.
import { PASSNOTE_LIMITS as L } from "../../../shared/limits";
import { bytesToHex, equalBytes } from "../../../shared/encoding";
import type { EngineCore, PeerState } from "./engine-core";
import {
  deriveSession,
  newEphemeral,
  openSession,
  signRatchetHello,
  verifyRatchetHello,
  wipeEphemeral,
  type RatchetHello,
  type Session,
} from "./session";

/** Sends a ratchet-hello with a fresh ephemeral key (dropping any session with the peer). */
export function sendRatchetHello(core: EngineCore, peer: string, state: PeerState): void {
  const self = core.opts.selfId();
  const id = core.identity;
  if (!id || self === undefined) return;
  state.session = undefined;
  state.answered = undefined;
  wipeEphemeral(state.mine); // superseded: an unused secret is wiped, never just dropped
  state.mine = newEphemeral();
  state.helloAt = core.clock.physical();
  const hello = signRatchetHello(id.deviceKey, { from: self, to: peer, device: id.deviceId, keyTag: id.keyTag, ephemeral: state.mine.pub });
  void core.send(peer, hello, "plain");
}

/** "accept", "hold" (the device's roster record has not arrived), or why the hello is refused. */
function checkHello(core: EngineCore, peer: string, h: RatchetHello): string {
  if (h.to !== core.opts.selfId()) return "not addressed to this node";
  if (h.from !== peer) return "not from the transport peer it names";
  if (!equalBytes(h.keyTag, core.identity!.keyTag)) return "another key generation";
  const entry = core.rosterEntry(h.device);
  if (!entry) return "hold";
  if (entry.revoked) return "revoked device";
  if (!verifyRatchetHello(entry.pub, h)) return "bad signature";
  return "accept";
}

export function onRatchetHello(core: EngineCore, peer: string, state: PeerState, h: RatchetHello): void {
  const verdict = checkHello(core, peer, h);
  if (verdict === "hold") {
    state.held = h;
    return;
  }
  if (verdict !== "accept") {
    core.emit("helloRefused", peer, verdict);
    return;
  }
  const eph = bytesToHex(h.ephemeral);
  if (state.seenEphemerals.includes(eph)) return; // a replayed hello changes nothing
  // A new hello while a session exists (or after our key was used): the peer started afresh or
  // asks us to re-send ours. Answer with a fresh one, and derive no session yet: this side's key
  // stays unused until the peer's next move says which session it holds (openAnswered). Answers
  // are rate-limited like requests, so a stale hello (replayed from beyond the remembered ones)
  // cannot start an endless exchange of answers; the next request after the interval re-keys.
  const now = core.clock.physical();
  const answer = !!state.session || !state.mine?.secret;
  // Half the request interval, so that a peer's next request (rate-limited by the full interval
  // on its own clock) is never refused for arriving a little early.
  if (answer && now - state.lastAnswer < rehelloInterval(core) / 2) {
    core.emit("helloRefused", peer, "answered too recently");
    return;
  }
  state.seenEphemerals.push(eph);
  if (state.seenEphemerals.length > L.ratchet_hellos_remembered) state.seenEphemerals.shift();
  state.held = undefined;
  state.peerDevice = h.device;
  if (answer) {
    // On a re-key, frames the peer sealed under the session this one replaces may still be in
    // flight: they cannot be opened, and asking for a re-hello over them would re-key again, and
    // again. An answer counts as a fresh request, so the next one waits a whole interval.
    if (state.session) state.lastRehello = now;
    state.lastAnswer = now;
    sendRatchetHello(core, peer, state);
    // The peer either held an unused key when it sent this hello (it derives the session from our
    // answer; its next ratcheted frame opens under our key and this hello's) or it held none (it
    // answers our answer, and that hello pairs with our unused key). Neither needs a copy of a
    // secret: ours stays unused, and is wiped the moment either session exists.
    if (state.mine?.secret) state.answered = h.ephemeral;
    return;
  }
  const session = openSession({
    groupKey: core.identity!.group.groupKey,
    mine: state.mine!,
    theirs: h.ephemeral,
    selfId: core.opts.selfId()!,
    peerId: peer,
  });
  if (!session) {
    core.emit("helloRefused", peer, "degenerate ephemeral key");
    return;
  }
  established(core, peer, state, session);
}

/** A session with the peer exists: this side's ephemeral secret is already wiped. */
function established(core: EngineCore, peer: string, state: PeerState, session: Session): void {
  state.session = session;
  state.answered = undefined;
  // Both sides ask for the other's state once their session exists: the later of the two hellos
  // always finds the other side's session open. (The protocol first, then the app's listeners.)
  void core.send(peer, { type: "hello", node: core.node }, "session");
  core.emit("session", peer, state.peerDevice!);
}

/**
 * A ratcheted frame from a peer this side answered, before any session: if it opens under this
 * side's unused key and the answered hello's key, that is the session (the secret is wiped now)
 * and the frame is returned; otherwise (a frame of an older session, say) nothing changes.
 */
export function openAnswered(core: EngineCore, peer: string, state: PeerState, sealed: Uint8Array): Uint8Array | null {
  if (state.session || !state.answered || !state.mine?.secret) return null;
  const candidate = deriveSession({
    groupKey: core.identity!.group.groupKey,
    mine: state.mine,
    theirs: state.answered,
    selfId: core.opts.selfId()!,
    peerId: peer,
  });
  const r = candidate?.open(sealed);
  if (!candidate || r?.status !== "ok") return null;
  wipeEphemeral(state.mine);
  established(core, peer, state, candidate);
  return r.frame;
}

/**
 * A ratcheted frame that this side cannot open: ask the peer to re-send its hello, by sending a
 * fresh one of ours (at most once per rehello interval per peer).
 */
export function requestRehello(core: EngineCore, peer: string, state: PeerState): void {
  const now = core.clock.physical();
  if (now - state.lastRehello < rehelloInterval(core)) return;
  state.lastRehello = now;
  sendRatchetHello(core, peer, state);
  core.emit("rehello", peer);
}

/**
 * A pair where this side holds no session with an agreed peer heals here: the peer may hold one
 * (our hello was lost, or its answer was), so this side offers a fresh hello, which the peer
 * answers with one of its own. Run by repair() (`force`: a frame was refused, it may have been our
 * hello) and by anti-entropy once our hello has gone unanswered for a whole rehello interval; both
 * are rate-limited like every request.
 */
export function repairSession(core: EngineCore, peer: string, state: PeerState, force: boolean): void {
  if (!core.identity || state.session || state.version === undefined || state.incompatible) return;
  if (!force && core.clock.physical() - state.helloAt < rehelloInterval(core)) return;
  requestRehello(core, peer, state);
}

/** Whether the peer's device (from its accepted hello, or else its handshake) is a non-revoked member. */
export function isMember(core: EngineCore, state: PeerState): boolean {
  const device = state.peerDevice ?? state.handshakeDevice;
  const entry = device ? core.rosterEntry(device) : null;
  return !!entry && !entry.revoked;
}

/**
 * Everything held for a peer is being dropped (the peer left, restarted, or the engine stopped):
 * its unused ephemeral secrets are wiped, not left to the garbage collector.
 */
export function forgetEphemerals(state: PeerState): void {
  wipeEphemeral(state.mine);
  state.answered = undefined;
}

function rehelloInterval(core: EngineCore): number {
  return core.opts.rehelloIntervalMs ?? L.rehello_interval_ms;
}

/** The roster changed: end sessions with devices no longer listed as members, re-check held hellos. */
export function rosterChanged(core: EngineCore): void {
  const ended: Array<[string, string]> = [];
  for (const [peer, s] of core.peers) {
    if (s.peerDevice && (s.session || s.mine)) {
      const entry = core.rosterEntry(s.peerDevice);
      if (!entry || entry.revoked) {
        // A revoked device's hellos are refused from now on, so this side's keys for it are of no
        // further use: wiped, whether a session was open or a fresh hello was waiting for an answer.
        const had = !!s.session;
        s.session = undefined;
        forgetEphemerals(s);
        s.mine = undefined;
        if (had) ended.push([peer, s.peerDevice]);
      }
    }
    if (s.held) {
      const h = s.held;
      s.held = undefined;
      onRatchetHello(core, peer, s, h);
    }
    // Frames sealed to a session we do not hold, from a device now listed (and no held hello
    // that opens it): ask for its hello.
    if (s.unopened && !s.session && isMember(core, s)) {
      s.unopened = false;
      requestRehello(core, peer, s);
    }
  }
  // The app hears of ended sessions once every peer has been dealt with.
  for (const [peer, device] of ended) core.emit("sessionEnded", peer, device);
}
