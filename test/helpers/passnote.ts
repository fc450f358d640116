// Passnote test helpers: a contract suite every transport runs, group keys, two synced peers,
// datasets with a known number of differences, and for identity mode: founded groups and an
// outsider's view (with the roster key) of everything a peer received or sent.
import { describe, expect, it } from "vitest";
import { BROADCAST } from "../../shared/passnote/room";
import { randomBytes } from "../../shared/encoding";
import type { Transport } from "../../clients/passnote/transport";
import { waitFor } from "./wait";
import { deviceIdOf, devicePublicKey, foundGroup, newDeviceKey, type DeviceIdentity } from "../../clients/passnote/protocol/roster";
import { KIND_RATCHET, openFrame, openPlain } from "../../clients/passnote/protocol/seal";
import { decodeMessage, type Message } from "../../clients/passnote/protocol/wire";

// Datasets live apart from vitest, so that bench/ can use them too.
export { fillDifferent, sameRecords, type Dataset } from "./passnote-data";

export type Connect = () => Promise<Transport>;

/** Records every event of a transport. */
export function recorder(t: Transport) {
  const frames: Array<[string, Uint8Array]> = [];
  const joins: string[] = [];
  const leaves: string[] = [];
  t.subscribe({
    frame: (from, f) => void frames.push([from, f]),
    join: (p) => void joins.push(p),
    leave: (p) => void leaves.push(p),
  });
  return { frames, joins, leaves };
}

/** The transport contract: the expectations both the relay and the in-memory bus must meet. */
export function transportContract(name: string, newRoom: () => Connect): void {
  describe(`transport contract: ${name}`, () => {
    it("welcome gives this side an id and the peers present; the others hear join, then leave on loss", async () => {
      const connect = newRoom();
      const a = await connect();
      const ra = recorder(a);
      expect(a.self).toMatch(/^[0-9a-f]{16}$/);
      expect(a.peers()).toEqual([]);
      const b = await connect();
      expect(b.peers()).toEqual([a.self]);
      await waitFor(() => ra.joins.length === 1, { what: "join" });
      expect(ra.joins).toEqual([b.self]);
      expect(a.peers()).toEqual([b.self]);
      const bId = b.self!;
      b.close();
      await waitFor(() => ra.leaves.length === 1, { what: "leave" });
      expect(ra.leaves).toEqual([bId]);
      expect(a.peers()).toEqual([]);
      a.close();
    });

    it("unicast reaches only the named peer, byte-exact, with the sender's id", async () => {
      const connect = newRoom();
      const a = await connect();
      const b = await connect();
      const c = await connect();
      const rb = recorder(b);
      const rc = recorder(c);
      const frame = randomBytes(1000);
      await a.send(b.self!, frame);
      await waitFor(() => rb.frames.length === 1, { what: "frame" });
      expect(rb.frames[0][0]).toBe(a.self);
      expect(rb.frames[0][1]).toEqual(frame);
      // Frames from one sender arrive in the order sent: once a later frame to c is there, a wrong
      // copy of the first would have arrived before it.
      const mark = Uint8Array.of(0x6d);
      await a.send(c.self!, mark);
      await waitFor(() => rc.frames.length > 0, { what: "the mark" });
      expect(rc.frames).toEqual([[a.self, mark]]);
      for (const t of [a, b, c]) t.close();
    });

    it("broadcast reaches every other peer; frames from one sender arrive in the order sent", async () => {
      const connect = newRoom();
      const a = await connect();
      const b = await connect();
      const c = await connect();
      const rb = recorder(b);
      const rc = recorder(c);
      const ra = recorder(a);
      const sends = [];
      for (let i = 0; i < 50; i++) sends.push(a.send(i % 3 ? BROADCAST : b.self!, Uint8Array.of(i, 0xff)));
      await Promise.all(sends);
      await waitFor(() => rb.frames.length === 50 && rc.frames.length === 33, { what: "frames" });
      expect(rb.frames.map(([, f]) => f[0])).toEqual([...Array(50).keys()]);
      expect(rc.frames.map(([, f]) => f[0])).toEqual([...Array(50).keys()].filter((i) => i % 3));
      expect(ra.frames).toEqual([]);
      for (const t of [a, b, c]) t.close();
    });
  });
}

/** A 32-byte group (passphrase) key. */
export function groupKey(): Uint8Array {
  return randomBytes(32);
}

// ---- identity mode -------------------------------------------------------------------------------

/** A founded group: the owner's identity and `others` more devices (not admitted yet). */
export function newGroup(others = 1): { owner: DeviceIdentity; devices: DeviceIdentity[] } {
  const owner = foundGroup();
  return { owner, devices: Array.from({ length: others }, () => ({ group: owner.group, deviceKey: newDeviceKey() })) };
}

export const pubOf = (d: DeviceIdentity) => devicePublicKey(d.deviceKey);
export const idOf = (d: DeviceIdentity) => deviceIdOf(pubOf(d));

/** What one peer received, seen by someone holding the roster key (an outsider's best view). */
export interface ReceivedView {
  /** Every plain frame, decoded. */
  plain: Message[];
  /** Frames of kind 0x01 (ratcheted). */
  ratcheted: number;
  /** Frames that are neither. */
  other: number;
}

export function viewReceived(rosterKey: Uint8Array, frames: Array<[string, Uint8Array]>): ReceivedView {
  const view: ReceivedView = { plain: [], ratcheted: 0, other: 0 };
  for (const [, f] of frames) {
    const opened = openPlain(rosterKey, f);
    const m = opened && decodeMessage(opened);
    if (m) view.plain.push(m);
    else if (f[0] === KIND_RATCHET) view.ratcheted++;
    else view.other++;
  }
  return view;
}

/** Every collection name a set of messages mentions (state entries, deltas, reconciles). */
export function collectionsNamed(messages: Message[]): Set<string> {
  const names = new Set<string>();
  for (const m of messages) {
    if (m.type === "state") for (const w of m.watermarks) names.add(w.collection);
    if (m.type === "delta" || m.type === "reconcile" || m.type === "reconcile2") names.add(m.collection);
  }
  return names;
}

/** Wraps a transport so that every frame it sends is also kept (to whom, bytes). */
export function tapSends(t: Transport): Array<[string, Uint8Array]> {
  const sent: Array<[string, Uint8Array]> = [];
  const send = t.send.bind(t);
  t.send = (to, frame) => {
    sent.push([to, frame.slice()]);
    return send(to, frame);
  };
  return sent;
}

/** Wraps a transport so that every frame it sends is recorded, opened under the passphrase key and decoded. */
export function tapped(t: Transport, key: Uint8Array): Message[] {
  const sent: Message[] = [];
  const send = t.send.bind(t);
  t.send = (to, frame) => {
    const m = decodeMessage(openFrame(key, frame) ?? new Uint8Array(0));
    if (m) sent.push(m);
    return send(to, frame);
  };
  return sent;
}

/**
 * Wraps a transport so that the frames `drop` picks are lost on the way (as a frame the relay
 * refused): the send resolves, nothing leaves. Returns the lost frames.
 */
export function dropSends(t: Transport, drop: (to: string, frame: Uint8Array) => boolean): Array<[string, Uint8Array]> {
  const lost: Array<[string, Uint8Array]> = [];
  const send = t.send.bind(t);
  t.send = (to, frame) => {
    if (drop(to, frame)) {
      lost.push([to, frame.slice()]);
      return Promise.resolve();
    }
    return send(to, frame);
  };
  return lost;
}

/** The type of a plain frame under the roster key (undefined for a ratcheted or foreign frame). */
export function plainType(rosterKey: Uint8Array, frame: Uint8Array): Message["type"] | undefined {
  const opened = openPlain(rosterKey, frame);
  return (opened && decodeMessage(opened)?.type) || undefined;
}
