// Tally signaling between devices (the Tally protocol sections 9 and 13): who meets whom (peer_connect),
// webrtc_signal routed to one device, and peer_disconnect to the devices that were introduced.
// Presence goes only to users with an envelope exchange (docs/tally.md): each of the two users'
// objects checks its own part, that its user wrote to the other (the asker's before it calls, the
// asked one's before it answers), so neither keeps a note of what it received. Introductions are
// kept in tally-contacts.ts. The TallyUser object holds the sockets and the RPC entry points.
import { TALLY_LIMITS } from "../../shared/limits";
import { utf8ByteLength } from "../../shared/encoding";
import { npubDecode, npubEncode } from "../../shared/tally/keys";
import { signalFrame, type ServerMessage } from "../../shared/tally/messages";
import type { ErrorCode } from "../../shared/errors";
import type { TallyContacts } from "./tally-contacts";

/** Another user's object, as signaling calls it. */
export interface PeerUser {
  introduce(fromHex: string, fromDevice: string): Promise<string[]>;
  signal(fromHex: string, fromDevice: string, toDevice: string | null, json: string): Promise<boolean>;
  peerGone(fromHex: string, fromDevice: string, toDevices: string[]): Promise<void>;
}

interface SignalingHost {
  /** This object's user (64 hex). */
  me(): string;
  /** The registered devices, but `except`. */
  devices(except?: string): Array<{ ws: WebSocket; deviceId: string }>;
  send(ws: WebSocket, msg: ServerMessage): boolean;
  sendRaw(ws: WebSocket, data: string): boolean;
  sendError(ws: WebSocket, code: ErrorCode, message: string): void;
  peer(hex: string): PeerUser;
}

/** The one answer to a webrtc_signal that reached no device: the same for an offline user and a stranger. */
const UNAVAILABLE = "no such online device of that user";

export class TallySignaling {
  /**
   * connect_peer calls whose introduction is at the peer's object: a peer device that leaves
   * meanwhile is noted here, so it is not introduced after its departure was announced.
   */
  private readonly inFlight = new Set<{ peerHex: string; gone: Set<string> }>();

  constructor(
    private readonly host: SignalingHost,
    private readonly contacts: TallyContacts,
  ) {}

  /** A device registered: it and the user's other devices meet (13.1). */
  registered(ws: WebSocket, deviceId: string, others: Array<{ ws: WebSocket; deviceId: string }>): void {
    const npub = npubEncode(this.host.me());
    for (const other of others) {
      this.host.send(ws, { type: "peer_connect", peer_user_id: npub, peer_device_id: other.deviceId });
      this.host.send(other.ws, { type: "peer_connect", peer_user_id: npub, peer_device_id: deviceId });
    }
  }

  async connectPeer(ws: WebSocket, peerHex: string, myDevice: string): Promise<void> {
    const me = this.host.me();
    if (peerHex === me) return this.registered(ws, myDevice, this.host.devices(myDevice));
    // Presence only to users with an envelope exchange (decision in docs/tally.md): otherwise no
    // answer, as if the user were offline. The asker's part here, the peer's in introduce().
    if (!(await this.contacts.wroteToNoted(peerHex))) return;
    const flight = { peerHex, gone: new Set<string>() };
    this.inFlight.add(flight);
    let theirDevices: string[];
    try {
      theirDevices = await this.host.peer(peerHex).introduce(me, myDevice);
    } finally {
      this.inFlight.delete(flight);
    }
    // The asker's device left during the call: its departure (left()) found no introduction to
    // announce, so the devices that were just told of it hear it gone now, and nothing is kept.
    if (!this.host.devices().some((d) => d.deviceId === myDevice)) {
      if (theirDevices.length > 0) await this.host.peer(peerHex).peerGone(me, myDevice, theirDevices);
      return;
    }
    const peerNpub = npubEncode(peerHex);
    for (const d of theirDevices) {
      if (flight.gone.has(d)) continue; // left during the call: already announced gone
      this.contacts.addIntroduction(myDevice, peerHex, d);
      this.host.send(ws, { type: "peer_connect", peer_user_id: peerNpub, peer_device_id: d });
    }
  }

  /**
   * Another user's device asks to meet this user's devices; returns their device ids. None, and
   * nothing said to them, unless this user wrote to the asker (its part of the exchange).
   */
  async introduce(fromHex: string, fromDevice: string): Promise<string[]> {
    if (!(await this.contacts.wroteToNoted(fromHex))) return [];
    const fromNpub = npubEncode(fromHex);
    const ids: string[] = [];
    for (const d of this.host.devices()) {
      this.contacts.addIntroduction(d.deviceId, fromHex, fromDevice);
      this.host.send(d.ws, { type: "peer_connect", peer_user_id: fromNpub, peer_device_id: fromDevice });
      ids.push(d.deviceId);
    }
    return ids;
  }

  async webrtcSignal(ws: WebSocket, peerNpub: string, peerDevice: string | undefined, signal: unknown, myDevice: string): Promise<void> {
    const json = JSON.stringify(signal);
    const bytes = utf8ByteLength(json);
    if (bytes > TALLY_LIMITS.max_signal_bytes) {
      return this.host.sendError(ws, "signal_too_large", `signal is ${bytes} bytes; at most ${TALLY_LIMITS.max_signal_bytes}`);
    }
    const me = this.host.me();
    const peerHex = npubDecode(peerNpub);
    // Signals go between own devices and to users with an envelope exchange, as connect_peer's
    // introductions (docs/tally.md, "Signaling"). To anyone else nothing is sent and the answer is
    // the one an offline user gets, so a stranger cannot learn whether an npub has a device online.
    let ok = false;
    if (peerHex === me) ok = await this.deliverSignal(me, myDevice, peerDevice, json);
    else if (await this.contacts.wroteToNoted(peerHex)) ok = await this.host.peer(peerHex).signal(me, myDevice, peerDevice ?? null, json);
    if (!ok) this.host.sendError(ws, "peer_unavailable", UNAVAILABLE);
  }

  /**
   * A webrtc_signal for one of this user's devices; false when there is no such device, or when
   * it comes from another user this user never wrote to (its part of the exchange).
   */
  async deliverSignal(fromHex: string, fromDevice: string, toDevice: string | undefined, json: string): Promise<boolean> {
    const own = fromHex === this.host.me();
    if (!own && !(await this.contacts.wroteToNoted(fromHex))) return false;
    let target: WebSocket | undefined;
    if (toDevice !== undefined) target = this.host.devices().find((d) => d.deviceId === toDevice)?.ws;
    else {
      // Without a device id: the peer's only device, if it has exactly one (other than the sender).
      const candidates = this.host.devices(own ? fromDevice : undefined);
      if (candidates.length === 1) target = candidates[0].ws;
    }
    if (!target || (own && toDevice === fromDevice)) return false;
    return this.host.sendRaw(target, signalFrame(npubEncode(fromHex), fromDevice, json));
  }

  /** One of this user's devices left: the user's other devices and the introduced ones hear it. */
  async left(gone: string): Promise<void> {
    const me = this.host.me();
    const myNpub = npubEncode(me);
    for (const other of this.host.devices(gone)) {
      this.host.send(other.ws, { type: "peer_disconnect", peer_user_id: myNpub, peer_device_id: gone });
    }
    const byPeer = this.contacts.takeIntroductions(gone);
    await Promise.allSettled([...byPeer].map(([peerHex, devices]) => this.host.peer(peerHex).peerGone(me, gone, devices)));
  }

  /** A device of another user that was introduced to some of ours has gone. */
  peerGone(fromHex: string, fromDevice: string, toDevices: string[]): void {
    for (const f of this.inFlight) if (f.peerHex === fromHex) f.gone.add(fromDevice);
    const fromNpub = npubEncode(fromHex);
    for (const id of toDevices) {
      this.contacts.forgetIntroduction(id, fromHex, fromDevice);
      const ws = this.host.devices().find((d) => d.deviceId === id)?.ws;
      if (ws) this.host.send(ws, { type: "peer_disconnect", peer_user_id: fromNpub, peer_device_id: fromDevice });
    }
  }
}
