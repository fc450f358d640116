// What the Passnote identity-mode tests share (identity*.test.ts): a member joining over the
// in-memory bus with its frames recorded, two members with an open session, plain frames decoded.
import { MemoryBus } from "../../clients/passnote/memory-bus";
import { PassnotePeer, type PassnotePeerOptions } from "../../clients/passnote/peer";
import type { DeviceIdentity } from "../../clients/passnote/protocol/roster";
import type { Message } from "../../clients/passnote/protocol/wire";
import { dropSends, newGroup, pubOf, recorder, tapSends, viewReceived } from "./passnote";
import { waitFor } from "./wait";

export const PLAIN_TYPES = new Set(["handshake", "ratchet-hello", "hello", "poke", "state", "delta", "reconcile"]);

export async function join(
  bus: MemoryBus,
  identity: DeviceIdentity,
  node: string,
  opts: Partial<PassnotePeerOptions> = {},
  drop?: (to: string, frame: Uint8Array) => boolean,
) {
  const t = await bus.connect();
  const received = recorder(t).frames;
  if (drop) dropSends(t, drop);
  const sent = tapSends(t);
  const peer = new PassnotePeer({ transport: t, identity, node, ...opts });
  return { t, peer, received, sent };
}

export type Member = Awaited<ReturnType<typeof join>>;

/** Owner alice and member bob (admitted before either connects), with an open session. */
export async function twoMembers(opts: Partial<PassnotePeerOptions> = {}) {
  const bus = new MemoryBus();
  const { owner, devices } = newGroup(1);
  const a = await join(bus, owner, "alice", opts);
  a.peer.admit(pubOf(devices[0]));
  const b = await join(bus, devices[0], "bob", opts);
  await waitFor(() => hasSession(a, b) && hasSession(b, a), { what: "sessions" });
  return { bus, owner, bob: devices[0], a, b };
}

export const hasSession = (x: Member, y: Member) => x.peer.engine.peerInfo(y.t.self!)?.session === true;

/** Everything in a list of sealed frames that travelled in plain frames, decoded with the roster key. */
export function plainOf(rosterKey: Uint8Array, frames: Array<[string, Uint8Array]>): Message[] {
  return viewReceived(rosterKey, frames).plain;
}
