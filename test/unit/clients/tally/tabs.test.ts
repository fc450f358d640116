// One handler per user across tabs (clients/tally/tabs.ts), in Node: the lock is an in-memory
// stand-in for Web Locks, the channel Node's own BroadcastChannel; the relay a real WebSocket server.
import { afterEach, describe, expect, it } from "vitest";
import { TallyClient, type LeaderLocks, type InnerMessage } from "../../../../clients/tally/index";
import { sealEnvelope } from "../../../../shared/tally/envelope";
import { signInner } from "../../../../shared/tally/proof";
import { newUser } from "../../../helpers/tally";
import { fakeRelay, queuedIds, type FakeRelay } from "../../../helpers/tally-fake-relay";
import { waitFor } from "../../../helpers/wait";

/** Web Locks' exclusive request, in memory: each holder in turn, in order of asking. */
function memoryLocks(): LeaderLocks {
  const tails = new Map<string, Promise<unknown>>();
  return {
    request(name, fn) {
      const run = (tails.get(name) ?? Promise.resolve()).then(() => fn({ name }));
      tails.set(
        name,
        run.catch(() => {}),
      );
      return run;
    },
  };
}

const relays: FakeRelay[] = [];
const clients: TallyClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const r of relays.splice(0)) await r.close();
});

describe("one handler per user across tabs", () => {
  it("one handler per user across tabs: the leader alone connects and handles; a follower's send goes out from the leader; the next leader takes over", async () => {
    const relay = await fakeRelay();
    relays.push(relay);
    const user = newUser();
    const peer = newUser();
    const locks = memoryLocks();
    const tab = () => {
      const c = new TallyClient({
        relayUrl: relay.url,
        secretKey: user.secretKey,
        store: "memory",
        tabs: { locks, channel: new BroadcastChannel(`t-${user.npub}`) },
      });
      clients.push(c);
      return c;
    };
    const first = tab();
    const second = tab();
    const handled: string[] = [];
    first.on("message", () => void handled.push("first"));
    second.on("message", () => void handled.push("second"));
    const told: string[] = [];
    second.on("handled_elsewhere", (m: InnerMessage) => void told.push(m.id));
    await first.connect();
    await second.connect();
    await waitFor(() => first.leader && first.connected, { what: "the first tab leads" });
    expect(second.leader).toBe(false);
    expect(relay.connections).toHaveLength(1);

    // A message from the peer reaches the leader: handled once, the other tab told.
    const inner = {
      id: "m1",
      type: "note",
      from_user_id: peer.npub,
      to_user_id: user.npub,
      created_at: new Date().toISOString(),
      payload: {},
    };
    relay.connections[0].send(JSON.stringify(sealEnvelope(signInner(inner, peer.secretKey), peer.secretKey)));
    await waitFor(() => told.includes("m1"), { what: "the follower told" });
    expect(handled).toEqual(["first"]);

    // The follower sends: the leader takes it into its outbox and hands it to the relay.
    const sent = await second.sendTracked(peer.npub, "note", { from: "second tab" });
    await waitFor(() => queuedIds(relay).includes(sent.id), { what: "the follower's message on the relay" });
    await waitFor(async () => (await second.store.listOutbox()).length === 0, { what: "handed over" });
    expect((await first.store.listOutbox()).map((i) => i.id)).toEqual([sent.id]);

    // The leader closes: the other tab leads and connects.
    await first.close();
    await waitFor(() => second.leader && second.connected, { what: "the second tab leads" });
    expect(relay.connections).toHaveLength(2);
  });
});
