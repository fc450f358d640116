// Passnote over a real relay (`wrangler dev`): docs/passnote.md's sync rooms on the wire, the
// transport contract, and the Passnote protocol's sync between two reference peers through a room.
import { afterEach, describe, expect, inject, it } from "vitest";
import { PassnotePeer } from "../../clients/passnote/peer";
import { MemoryStore } from "../../clients/passnote/protocol/records";
import { RelayTransport } from "../../clients/passnote/relay-transport";
import { roomKeys, signJoin, joinPeerFrame, BROADCAST } from "../../shared/passnote/room";
import { base64urlDecode } from "../../shared/encoding";
import { TestSocket } from "../helpers/socket";
import { fillDifferent, groupKey, sameRecords, transportContract } from "../helpers/passnote";
import { waitFor } from "../helpers/wait";

const relay = inject("relayUrl");
const wsUrl = relay.replace(/^http/, "ws");
const open: Array<{ close(): void }> = [];
afterEach(() => {
  for (const c of open.splice(0)) c.close();
});

async function transport(rosterKey: Uint8Array): Promise<RelayTransport> {
  const t = await RelayTransport.connect({ relayUrl: wsUrl, rosterKey });
  open.push(t);
  return t;
}

transportContract("relay sync room (wrangler dev)", () => {
  const key = groupKey();
  return () => transport(key);
});

describe("docs/passnote.md: sync rooms on the wire", () => {
  it("challenge (32 bytes, base64url), join with the room key's signature, welcome with a 16-hex peer id", async () => {
    const keys = roomKeys(groupKey());
    const s = await TestSocket.open(`${wsUrl}/passnote/v2/${keys.roomId}`);
    open.push(s);
    const { challenge } = await s.next("challenge");
    expect(base64urlDecode(challenge)).toHaveLength(32);
    s.send({ type: "join", sig: signJoin(keys, challenge) });
    const w = await s.next("welcome");
    expect(w).toEqual({ type: "welcome", peer: expect.stringMatching(/^[0-9a-f]{16}$/), peers: [] });
    s.ws.send(joinPeerFrame(BROADCAST, Uint8Array.of(1)));
    s.ws.send(Uint8Array.of(1, 2));
    expect((await s.next("error")).code).toBe("invalid_message");
  });

  it("a peer from a different group cannot join: its signature fails under the room key, close 4001", async () => {
    const keys = roomKeys(groupKey());
    const s = await TestSocket.open(`${wsUrl}/passnote/v2/${keys.roomId}`);
    const { challenge } = await s.next("challenge");
    s.send({ type: "join", sig: signJoin(roomKeys(groupKey()), challenge) });
    expect((await s.next("error")).code).toBe("auth_failed");
    expect(await s.closed).toBe(4001);
  });
});

describe("the Passnote protocol over a sync room: two reference peers", () => {
  it("two peers with 10,000 records each and 50 differences converge; round trips and bytes reported", async () => {
    const key = groupKey();
    const ta = await transport(key);
    const a = new PassnotePeer({ transport: ta, key, node: "alice" });
    const bStore = new MemoryStore();
    fillDifferent(a.store, bStore, { common: 10_000, differences: 50 });
    expect(sameRecords(a.store, bStore)).toBe(false);
    const started = performance.now();
    const tb = await transport(key);
    const b = new PassnotePeer({ transport: tb, key, node: "bob", store: bStore });
    await waitFor(() => sameRecords(a.store, b.store), { timeout: 30_000, what: "convergence" });
    const ms = performance.now() - started;
    expect(a.store.size("notes")).toBe(10_024); // 26 of the differences are edits, 24 new records
    const recon = (a.engine.sent.frames.reconcile ?? 0) + (b.engine.sent.frames.reconcile ?? 0);
    // handshake (1) + hello/state (1) + the reconcile chain, one message per leg.
    const roundTrips = 2 + Math.ceil(recon / 2);
    const report = {
      ms: Math.round(ms),
      roundTrips,
      reconcileMessages: recon,
      bytesAtoB: a.engine.sent.bytes,
      bytesBtoA: b.engine.sent.bytes,
      framesAtoB: a.engine.sent.frames,
      framesBtoA: b.engine.sent.frames,
    };
    console.log(`passnote convergence, 10,000 records / 50 differences: ${JSON.stringify(report)}`);
    expect(roundTrips).toBeLessThan(20);
    expect(a.engine.sent.bytes + b.engine.sent.bytes).toBeLessThan(2_000_000);
  });

  it("a restarted peer (new inst token on a live connection) is renegotiated and syncs again", async () => {
    const key = groupKey();
    const ta = await transport(key);
    const tb = await transport(key);
    const a = new PassnotePeer({ transport: ta, key, node: "alice" });
    const b = new PassnotePeer({ transport: tb, key, node: "bob" });
    await waitFor(() => a.engine.agreedPeers().length === 1 && b.engine.agreedPeers().length === 1, { what: "agreement" });
    a.put("notes", "before", 1);
    await waitFor(() => b.get("notes", "before") === 1, { what: "first sync" });
    const restarted: string[] = [];
    a.engine.on("restarted", (p) => void restarted.push(p));
    b.detach(); // the database instance restarts; the socket stays: the relay reports nothing
    const b2 = new PassnotePeer({ transport: tb, key, node: "bob" });
    await waitFor(() => restarted.length === 1, { what: "restart detected" });
    expect(restarted).toEqual([tb.self]);
    await waitFor(() => b2.get("notes", "before") === 1, { what: "resync after restart" });
    b2.put("notes", "after", 2);
    await waitFor(() => a.get("notes", "after") === 2, { what: "live after restart" });
  });
});
