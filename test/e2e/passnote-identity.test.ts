// Passnote identity mode over a real relay (`wrangler dev`): two roster members converge in a sync
// room through ratchet sessions, while a revoked device and a device never in the roster, both
// holding the roster key (and the group key), learn no user collection name, watermark or record.
import { afterEach, describe, expect, inject, it } from "vitest";
import { PassnotePeer } from "../../clients/passnote/peer";
import { RelayTransport } from "../../clients/passnote/relay-transport";
import { MemoryStore } from "../../clients/passnote/protocol/records";
import { ROSTER_COLLECTION, type DeviceIdentity } from "../../clients/passnote/protocol/roster";
import { bytesToHex } from "../../shared/encoding";
import {
  collectionsNamed,
  dropSends,
  fillDifferent,
  idOf,
  newGroup,
  plainType,
  pubOf,
  recorder,
  sameRecords,
  viewReceived,
} from "../helpers/passnote";
import { KIND_RATCHET } from "../../clients/passnote/protocol/seal";
import { PASSNOTE_LIMITS } from "../../shared/limits";
import { sleep, waitFor } from "../helpers/wait";

const wsUrl = inject("relayUrl").replace(/^http/, "ws");
const open: Array<{ close(): void }> = [];
afterEach(() => {
  for (const c of open.splice(0)) c.close();
});

async function device(
  identity: DeviceIdentity,
  node: string,
  store?: MemoryStore,
  opts: { now?: () => number; drop?: (to: string, frame: Uint8Array) => boolean } = {},
) {
  const t = await RelayTransport.connect({ relayUrl: wsUrl, rosterKey: identity.group.rosterKey });
  open.push(t);
  const received = recorder(t).frames;
  if (opts.drop) dropSends(t, opts.drop);
  const peer = new PassnotePeer({ transport: t, identity, node, store, now: opts.now, antiEntropyIntervalMs: opts.now ? 0 : undefined });
  return { t, peer, received };
}

describe("the Passnote protocol identity mode over a sync room", () => {
  it("two members converge through ratchet sessions; a revoked device and one never in the roster learn no user collection name, watermark or record", async () => {
    const { owner, devices } = newGroup(3);
    const [bob, revoked, stranger] = devices;
    const aStore = new MemoryStore();
    const bStore = new MemoryStore();
    fillDifferent(aStore, bStore, { common: 10_000, differences: 50 }, "vault");
    const a = await device(owner, "alice", aStore);
    a.peer.admit(pubOf(bob));
    a.peer.admit(pubOf(revoked));
    a.peer.revoke(idOf(revoked));
    const started = performance.now();
    const b = await device(bob, "bob", bStore);
    await waitFor(() => sameRecords(a.peer.store, b.peer.store, "vault"), { timeout: 30_000, what: "convergence" });
    const ms = performance.now() - started;
    expect(a.peer.store.size("vault")).toBe(10_024);
    console.log(
      `passnote identity-mode convergence, 10,000 records / 50 differences: ${JSON.stringify({
        ms: Math.round(ms),
        bytesAtoB: a.peer.engine.sent.bytes,
        bytesBtoA: b.peer.engine.sent.bytes,
        framesAtoB: a.peer.engine.sent.frames,
        framesBtoA: b.peer.engine.sent.frames,
      })}`,
    );
    await waitFor(() => b.peer.engine.rosterEntry(idOf(revoked))?.revoked, { what: "bob has the revocation" });

    const refused: string[] = [];
    for (const m of [a, b]) m.peer.engine.on("helloRefused", (_p, why) => void refused.push(why));
    const r = await device(revoked, "mallory");
    const s = await device(stranger, "eve");
    await waitFor(() => refused.filter((x) => x === "revoked device").length >= 2, { what: "the revoked device refused by both" });
    await waitFor(() => a.peer.engine.peerInfo(s.t.self!)?.held && b.peer.engine.peerInfo(s.t.self!)?.held, {
      what: "the stranger's hello held",
    });
    a.peer.put("vault", "after-join", { secret: "written while they listen" });
    b.peer.put("journal", "entry-1", "bob's journal");
    a.peer.forceSync();
    await waitFor(() => b.peer.get("vault", "after-join") && a.peer.get("journal", "entry-1"), { what: "members keep syncing" });
    await sleep(200);

    expect(a.peer.engine.sessionPeers()).toEqual([b.t.self]);
    expect(b.peer.engine.sessionPeers()).toEqual([a.t.self]);
    for (const outsider of [r, s]) {
      const view = viewReceived(owner.group.rosterKey, outsider.received);
      expect(view.plain.length).toBeGreaterThan(0);
      expect(view.ratcheted).toBe(0);
      expect(view.other).toBe(0);
      expect([...collectionsNamed(view.plain)]).toEqual([ROSTER_COLLECTION]);
      const everything = JSON.stringify(view.plain, (_k, v) =>
        v instanceof Uint8Array ? bytesToHex(v) : typeof v === "bigint" ? String(v) : v,
      );
      for (const secret of ["vault", "journal", "after-join", "entry-1", "written while they listen", "bob's journal", "changed "]) {
        expect(everything).not.toContain(secret);
      }
      expect(outsider.peer.store.collectionNames()).toEqual([ROSTER_COLLECTION]);
    }
  });
});

describe("the Passnote protocol over a sync room: a peer that seals frames this side cannot open is asked to re-send its hello", () => {
  /**
   * Alice's ratchet-hello to bob is lost (as a frame the relay refused), and so is everything she
   * seals to bob until `heal` runs: alice holds a session, bob none. Clocks are driven by hand.
   */
  async function lostHello(heal: (a: PassnotePeer, b: PassnotePeer, advance: () => void) => void) {
    const { owner, devices } = newGroup(1);
    let skew = 0;
    const now = () => Date.now() + skew;
    let losing = true;
    const a = await device(owner, "alice", undefined, {
      now,
      drop: (_to, f) => losing && (f[0] === KIND_RATCHET || plainType(owner.group.rosterKey, f) === "ratchet-hello"),
    });
    a.peer.admit(pubOf(devices[0]));
    const b = await device(devices[0], "bob", undefined, { now });
    await waitFor(
      () =>
        a.peer.engine.sessionPeers().length === 1 && b.peer.engine.rosterEntry(idOf(owner)) !== null && a.peer.engine.pendingFrames() === 0,
      { what: "alice's session, bob's roster" },
    );
    expect(b.peer.engine.sessionPeers()).toEqual([]);
    losing = false;
    a.peer.put("vault", "from-alice", 1);
    b.peer.put("vault", "from-bob", 2);
    heal(a.peer, b.peer, () => {
      skew += PASSNOTE_LIMITS.rehello_interval_ms;
    });
    await waitFor(() => b.peer.get("vault", "from-alice") === 1 && a.peer.get("vault", "from-bob") === 2, {
      timeout: 15_000,
      what: "both records",
    });
    expect(b.peer.engine.sessionPeers()).toEqual([a.t.self]);
  }

  it("a dropped ratchet-hello heals within one anti-entropy period", async () => {
    await lostHello((a, b, advance) => {
      advance(); // one period later (the clocks driven past the rehello interval)
      a.engine.antiEntropyPass();
      b.engine.antiEntropyPass();
    });
  });

  it("a dropped ratchet-hello heals by repair()", async () => {
    await lostHello((_a, b) => b.engine.repair());
  });
});
