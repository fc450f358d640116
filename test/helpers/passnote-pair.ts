// What the reference peer's tests share (peer*.test.ts): two peers over the in-memory bus, their
// sent frames recorded, and whether one has agreed a version with the other.
import { MemoryBus } from "../../clients/passnote/memory-bus";
import { PassnotePeer, type PassnotePeerOptions } from "../../clients/passnote/peer";
import type { Transport } from "../../clients/passnote/transport";
import { groupKey, tapped } from "./passnote";

export async function pair(opts: { a?: Partial<PassnotePeerOptions>; b?: Partial<PassnotePeerOptions>; key?: Uint8Array } = {}) {
  const bus = new MemoryBus();
  const key = opts.key ?? groupKey();
  const ta = await bus.connect();
  const sentA = tapped(ta, key);
  const a = new PassnotePeer({ transport: ta, key, node: "alice", ...opts.a });
  const tb = await bus.connect();
  const sentB = tapped(tb, opts.b?.key ?? key);
  const b = new PassnotePeer({ transport: tb, key, node: "bob", ...opts.b });
  return { bus, key, a, b, ta, tb, sentA, sentB };
}

export const agreed = (p: PassnotePeer, peer: Transport) => p.engine.peerInfo(peer.self!)?.version === 2;
