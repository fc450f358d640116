// The Passnote peer when the app errs, over a real relay: three devices in a sync room; a member
// whose `change` listener throws on the roster still ends its session with a device the owner
// revoked, and that device receives nothing written after its revocation.
import { afterEach, describe, expect, inject, it } from "vitest";
import { PassnotePeer } from "../../clients/passnote/peer";
import { RelayTransport } from "../../clients/passnote/relay-transport";
import { ROSTER_COLLECTION, type DeviceIdentity } from "../../clients/passnote/protocol/roster";
import { ListenerError } from "../../clients/passnote/protocol/sync";
import { idOf, newGroup, plainType, pubOf, recorder } from "../helpers/passnote";
import { waitFor } from "../helpers/wait";

const wsUrl = inject("relayUrl").replace(/^http/, "ws");
const open: Array<{ close(): void }> = [];
afterEach(() => {
  for (const c of open.splice(0)) c.close();
});

async function device(identity: DeviceIdentity, node: string) {
  const t = await RelayTransport.connect({ relayUrl: wsUrl, rosterKey: identity.group.rosterKey });
  open.push(t);
  const received = recorder(t).frames;
  const peer = new PassnotePeer({ transport: t, identity, node, antiEntropyIntervalMs: 0 });
  return { t, peer, received };
}

describe("the Passnote peer over a sync room: listener failures", () => {
  it("the protocol's reaction runs before any app listener: a revoked device receives nothing written after its revocation, though a member's `change` listener throws on the roster", async () => {
    const { owner, devices } = newGroup(2);
    const [bob, carol] = devices;
    const a = await device(owner, "alice");
    a.peer.admit(pubOf(bob));
    a.peer.admit(pubOf(carol));
    const b = await device(bob, "bob");
    const c = await device(carol, "carol");
    const errors: Error[] = [];
    b.peer.engine.on("error", (e) => void errors.push(e));
    b.peer.engine.on("change", (collection) => {
      if (collection === ROSTER_COLLECTION) throw new Error("the app's bug");
    });
    const session = (x: typeof a, y: typeof a) => x.peer.engine.peerInfo(y.t.self!)?.session === true;
    await waitFor(() => session(b, c) && session(c, b), { timeout: 20_000, what: "bob and carol in session" });

    a.peer.revoke(idOf(carol));
    await waitFor(() => b.peer.engine.rosterEntry(idOf(carol))?.revoked === true, { timeout: 20_000, what: "bob has the revocation" });
    expect(session(b, c)).toBe(false);
    b.peer.put("notes", "after", "written after carol's revocation");
    a.peer.put("notes", "after-a", "also after");
    // The relay keeps each sender's order: once bob's poke (sent after his write) reaches carol,
    // anything the write sent her has too.
    const mark = c.received.length;
    b.peer.forceSync();
    await waitFor(() => c.received.slice(mark).some(([from, f]) => from === b.t.self && plainType(owner.group.rosterKey, f) === "poke"), {
      timeout: 20_000,
      what: "bob's poke at carol",
    });
    await waitFor(() => b.peer.get("notes", "after-a") !== undefined, { timeout: 20_000, what: "alice's write at bob" });
    expect(c.peer.get("notes", "after")).toBeUndefined();
    expect(c.peer.get("notes", "after-a")).toBeUndefined();
    expect(errors.some((e) => e instanceof ListenerError && e.event === "change")).toBe(true);
  }, 60_000);
});
