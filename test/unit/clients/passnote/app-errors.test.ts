// The Passnote peer when the app errs: a listener that throws never holds the protocol back (a
// revoked device leaves the group whatever the app's `change` listener does), and its failure
// reaches the app as an `error` event.
import { describe, expect, it } from "vitest";
import { MemoryBus } from "../../../../clients/passnote/memory-bus";
import { PassnotePeer } from "../../../../clients/passnote/peer";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join as pathJoin } from "node:path";
import { SqliteStore } from "../../../../clients/passnote/stores/sqlite";
import { sealFrame } from "../../../../clients/passnote/protocol/seal";
import { ListenerError, StoreFailedError } from "../../../../clients/passnote/protocol/sync";
import { encodeMessage } from "../../../../clients/passnote/protocol/wire";
import { ROSTER_COLLECTION, type DeviceIdentity } from "../../../../clients/passnote/protocol/roster";
import { groupKey, idOf, newGroup, plainType, pubOf, recorder } from "../../../helpers/passnote";
import { waitFor } from "../../../helpers/wait";

async function join(bus: MemoryBus, identity: DeviceIdentity, node: string) {
  const t = await bus.connect();
  const received = recorder(t).frames;
  const peer = new PassnotePeer({ transport: t, identity, node, antiEntropyIntervalMs: 0 });
  return { t, peer, received };
}

describe("the Passnote peer: listener failures", () => {
  it("the protocol's reaction runs before any app listener: a member whose `change` listener throws on the roster ends its session with the revoked device, which receives nothing written after its revocation; the failure is an `error` event", async () => {
    const bus = new MemoryBus();
    const { owner, devices } = newGroup(2);
    const [bob, carol] = devices;
    const a = await join(bus, owner, "alice");
    a.peer.admit(pubOf(bob));
    a.peer.admit(pubOf(carol));
    const b = await join(bus, bob, "bob");
    const c = await join(bus, carol, "carol");
    const errors: Error[] = [];
    b.peer.engine.on("error", (e) => void errors.push(e));
    b.peer.engine.on("change", (collection) => {
      if (collection === ROSTER_COLLECTION) throw new Error("the app's bug");
    });
    const session = (x: typeof a, y: typeof a) => x.peer.engine.peerInfo(y.t.self!)?.session === true;
    await waitFor(() => session(b, c) && session(c, b) && session(a, b) && session(a, c), { what: "every session" });

    a.peer.revoke(idOf(carol));
    await waitFor(() => b.peer.engine.rosterEntry(idOf(carol))?.revoked === true, { what: "bob has the revocation" });
    expect(session(b, c)).toBe(false);
    b.peer.put("notes", "after", "written after carol's revocation");
    // Bob's frames to carol arrive in order: once his poke (sent after the write) is in, so is
    // anything the write sent her.
    const mark = c.received.length;
    b.peer.forceSync();
    await waitFor(() => c.received.slice(mark).some(([from, f]) => from === b.t.self && plainType(owner.group.rosterKey, f) === "poke"), {
      what: "bob's poke at carol",
    });
    expect(c.peer.get("notes", "after")).toBeUndefined();
    expect(errors.some((e) => e instanceof ListenerError && e.event === "change" && /the app's bug/.test(e.message))).toBe(true);
  });

  it("each listener's failure is caught and reported as an `error` event; the other listeners still run, and a rejected promise is reported too", async () => {
    const bus = new MemoryBus();
    const { owner, devices } = newGroup(1);
    const a = await join(bus, owner, "alice");
    a.peer.admit(pubOf(devices[0]));
    const b = await join(bus, devices[0], "bob");
    const errors: ListenerError[] = [];
    b.peer.engine.on("error", (e) => void errors.push(e as ListenerError));
    const seen: string[] = [];
    b.peer.engine.on("session", () => {
      throw new Error("session listener");
    });
    b.peer.engine.on("change", async () => {
      throw new Error("async change listener");
    });
    b.peer.engine.on("change", (collection) => void seen.push(collection));
    a.peer.put("notes", "k", 1);
    await waitFor(() => b.peer.get("notes", "k") === 1 && errors.length >= 2, { what: "the record and two errors" });
    expect(seen).toContain("notes");
    expect([...new Set(errors.map((e) => e.event))].sort()).toEqual(["change", "session"]);
  });
});

describe("the Passnote peer: store failures", () => {
  it("store failures are not silent: a failing store stops the peer from syncing, the app gets an `error` event that says what to do, nothing is reported held that is not, and a local put throws that error", async () => {
    const key = groupKey();
    const bus = new MemoryBus();
    const store = await SqliteStore.open(pathJoin(mkdtempSync(pathJoin(tmpdir(), "passnote-fail-")), "bob.db"));
    const a = new PassnotePeer({ transport: await bus.connect(), key, node: "alice", antiEntropyIntervalMs: 0 });
    const tb = await bus.connect();
    const b = new PassnotePeer({ transport: tb, key, store, node: "bob", antiEntropyIntervalMs: 0 });
    const errors: Error[] = [];
    b.engine.on("error", (e) => void errors.push(e));
    a.put("notes", "before", 1);
    await waitFor(() => b.get("notes", "before") === 1, { what: "the first record" });

    await store.close(); // the database goes away under the running peer
    a.put("notes", "after", 2);
    await waitFor(() => errors.length > 0, { what: "the error event" });
    expect(errors[0]).toBeInstanceOf(StoreFailedError);
    expect(errors[0].message).toMatch(/stopped syncing.*reopen the database/);
    expect(b.get("notes", "after")).toBeUndefined();
    expect(b.store.watermark("notes")).toBe(a.store.get("notes", "before")!.hlc);
    // The peer syncs no more: a hello asking for its state gets nothing back.
    expect(b.engine.agreedPeers()).toEqual([]);
    const sent = JSON.stringify(b.engine.sent);
    await b.engine.receive(a.transport.self!, sealFrame(key, encodeMessage({ type: "hello", node: "alice" })));
    expect(JSON.stringify(b.engine.sent)).toBe(sent);
    // A local write says what to do, not what SQLite says.
    let thrown: unknown;
    try {
      b.put("notes", "local", 3);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(StoreFailedError);
    expect((thrown as Error).message).toMatch(/was closed.*reopen the database/);
    expect((thrown as Error).message).not.toMatch(/finalized/);
    a.close();
    b.close();
  });
});
