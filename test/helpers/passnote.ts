// Passnote test helpers: a contract suite every transport runs, group keys, two synced peers,
// and datasets with a known number of differences.
import { describe, expect, it } from "vitest";
import { BROADCAST } from "../../shared/passnote/room";
import { randomBytes } from "../../shared/encoding";
import type { Transport } from "../../clients/passnote/transport";
import { waitFor } from "./wait";

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
      await new Promise((r) => setTimeout(r, 50));
      expect(rc.frames).toEqual([]);
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

