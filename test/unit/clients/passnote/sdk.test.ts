// The Passnote peer as an app developer uses it: events with their origin, subscriptions per
// collection and per record, whenSynced(), the connection's status, the devices of the group,
// close() and destroy() of a store, and a clear error where this runtime lacks a WebSocket.
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { deviceIdOf, MemoryBus, PassnotePeer, RelayTransport, type PeerChange, type PeerStatus } from "../../../../clients/passnote/index";
import { SqliteStore } from "../../../../clients/passnote/stores/sqlite";
import { groupKey, idOf, newGroup, pubOf } from "../../../helpers/passnote";
import { waitFor } from "../../../helpers/wait";

async function pair() {
  const bus = new MemoryBus();
  const key = groupKey();
  const a = new PassnotePeer({ transport: await bus.connect(), key, node: "alice", antiEntropyIntervalMs: 0 });
  const b = new PassnotePeer({ transport: await bus.connect(), key, node: "bob", antiEntropyIntervalMs: 0 });
  return { a, b };
}

describe("the Passnote SDK: events", () => {
  it("change events carry their origin: local writes and remote records; subscriptions per collection and per record get only theirs", async () => {
    const { a, b } = await pair();
    const all: PeerChange[] = [];
    const notes: PeerChange[] = [];
    const one: PeerChange[] = [];
    b.on("change", (c) => void all.push(c));
    b.subscribe("notes", (c) => void notes.push(c));
    b.subscribe("notes", (c) => void one.push(c), "n1");
    b.put("diary", "d1", "mine");
    a.put("notes", "n1", 1);
    a.put("notes", "n2", 2);
    await waitFor(() => b.get("notes", "n2") === 2 && b.get("notes", "n1") === 1, { what: "alice's records" });
    expect(all[0]).toMatchObject({ collection: "diary", origin: "local" });
    expect(all.filter((c) => c.origin === "remote").every((c) => c.from === a.transport.self)).toBe(true);
    expect(notes.flatMap((c) => c.records.map((r) => r.key)).sort()).toEqual(["n1", "n2"]);
    expect(one.flatMap((c) => c.records.map((r) => r.key))).toEqual(["n1"]);
    await a.close();
    await b.close();
  });

  it("whenSynced() resolves once the peer is in step (every agreed peer, or one named); status says connected and how many peers", async () => {
    const { a, b } = await pair();
    const statuses: PeerStatus[] = [];
    b.on("status", (s) => void statuses.push(s));
    for (let i = 0; i < 50; i++) a.put("notes", `n${i}`, i);
    await b.whenSynced();
    expect(b.store.size("notes")).toBe(50);
    a.put("notes", "late", 1);
    await b.whenSynced(a.transport.self!);
    expect(b.get("notes", "late")).toBe(1);
    expect(b.status).toEqual({ state: "connected", peers: 1 });
    await b.close();
    expect(b.status.state).toBe("closed");
    expect(statuses.at(-1)?.state).toBe("closed");
    await a.close();
  });
});

describe("the Passnote SDK: devices and stores", () => {
  it("listDevices() lists the roster; the id revoke() takes is the one listDevices() and deviceIdOf() give", async () => {
    const bus = new MemoryBus();
    const { owner, devices } = newGroup(1);
    const a = new PassnotePeer({ transport: await bus.connect(), identity: owner, antiEntropyIntervalMs: 0 });
    a.admit(pubOf(devices[0]));
    const listed = a.listDevices();
    expect(listed.map((d) => [d.id, d.owner, d.self, d.revoked]).sort()).toEqual(
      [
        [idOf(owner), true, true, false],
        [idOf(devices[0]), false, false, false],
      ].sort(),
    );
    expect(deviceIdOf(pubOf(devices[0]))).toBe(idOf(devices[0]));
    a.revoke(listed.find((d) => !d.self)!.id);
    expect(a.listDevices().find((d) => !d.self)?.revoked).toBe(true);
    await a.close();
  });

  it("close() closes the store (its database is released); destroy() deletes the SQLite file and its -wal and -shm", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "passnote-sdk-")), "device.db");
    const store = await SqliteStore.open(path);
    const peer = new PassnotePeer({ transport: await new MemoryBus().connect(), key: groupKey(), store, antiEntropyIntervalMs: 0 });
    peer.put("notes", "k", 1);
    await peer.close();
    expect(() => store.merge("notes", { key: "x", value: 1, is_deleted: false, hlc: "0000000000001:0000:n" })).toThrow(/was closed/);
    const again = await SqliteStore.open(path);
    expect(again.get("notes", "k")?.value).toBe(1);
    const p2 = new PassnotePeer({ transport: await new MemoryBus().connect(), store: again, antiEntropyIntervalMs: 0 });
    await p2.destroy();
    for (const f of [path, `${path}-wal`, `${path}-shm`]) expect(existsSync(f), f).toBe(false);
  });

  it("without a WebSocket (Node 20) the transport says what it needs instead of a ReferenceError", async () => {
    const g = globalThis as { WebSocket?: unknown };
    const saved = g.WebSocket;
    delete g.WebSocket;
    try {
      await expect(
        RelayTransport.connect({ relayUrl: "ws://127.0.0.1:9", rosterKey: groupKey(), rate: { perSecond: 10, burst: 10 } }),
      ).rejects.toThrow(/no WebSocket here.*`ws` package.*WebSocket/);
    } finally {
      g.WebSocket = saved;
    }
  });
});
