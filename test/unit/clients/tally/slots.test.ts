// What a store slot leaves behind (clients/tally/slot-adopt.ts): two real clients of one user on
// the default file stores of one folder, and a third that opens after they closed.
import { afterEach, describe, expect, it } from "vitest";
import { TallyClient, type InnerMessage } from "../../../../clients/tally/index";
import { newUser } from "../../../helpers/tally";
import { withStoreDir } from "../../../helpers/tally-frames";
import { fakeRelay, queuedIds, type FakeRelay } from "../../../helpers/tally-fake-relay";
import { waitFor } from "../../../helpers/wait";

const relays: FakeRelay[] = [];
const clients: TallyClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const r of relays.splice(0)) await r.close();
});

function client(secretKey: Uint8Array, relayUrl = "ws://unused"): TallyClient {
  const c = new TallyClient({ relayUrl, secretKey });
  clients.push(c);
  return c;
}

describe("1 nothing stranded in another slot", () => {
  it("1 outbox items in any store slot are retried by whichever client runs: a message sent offline from the second client reaches the relay from the next one", async () => {
    await withStoreDir(async () => {
      const user = newUser();
      const peer = newUser();
      const first = client(user.secretKey); // slot 0
      const second = client(user.secretKey); // slot 1
      const id = await second.send(peer.npub, "note", { text: "sent offline from the second tab" });
      // Tab 1 closes, tab 2 reloads: the reloaded client takes the lowest free slot, 0.
      first.close();
      second.close();
      const relay = await fakeRelay();
      relays.push(relay);
      const next = client(user.secretKey, relay.url);
      expect((await next.store.listOutbox()).map((i) => i.id)).toEqual([id]);
      await next.connect();
      await waitFor(() => queuedIds(relay).includes(id), { what: "the stranded message queued" });
    });
  });

  it("1 a slot freed while a client runs is taken over at its next registration", async () => {
    await withStoreDir(async () => {
      const user = newUser();
      const peer = newUser();
      const relay = await fakeRelay();
      relays.push(relay);
      const running = client(user.secretKey, relay.url); // slot 0
      const other = client(user.secretKey); // slot 1
      const id = await other.send(peer.npub, "note", {});
      other.close();
      await running.connect();
      await waitFor(() => queuedIds(relay).includes(id), { what: "the freed slot's message queued" });
    });
  });

  it("1 what one slot processed is not handled again by another", async () => {
    await withStoreDir(async () => {
      const user = newUser();
      const peer = new TallyClient({ relayUrl: "ws://unused", secretKey: newUser().secretKey, store: "memory" });
      const frames: string[] = [];
      peer.addDirectChannel(user.npub, { send: (f) => void frames.push(f) });
      const first = client(user.secretKey); // slot 0
      const second = client(user.secretKey); // slot 1
      await peer.send(user.npub, "pay", { cents: 500 });
      const handled: string[] = [];
      second.on("message", (m: InnerMessage) => void handled.push(`second ${m.id}`));
      await second.handleDirectFrame(frames[0]);
      first.close();
      second.close();
      // The relay (no ack reached it) delivers the same envelope to the next client, in slot 0.
      const next = client(user.secretKey);
      const dups: string[] = [];
      next.on("message", (m: InnerMessage) => void handled.push(`next ${m.id}`));
      next.on("duplicate", (m) => void dups.push(m.id));
      next.addDirectChannel(peer.npub, { send: () => {} });
      await next.handleDirectFrame(frames[0]);
      expect(handled).toHaveLength(1);
      expect(handled[0]).toMatch(/^second /);
      expect(dups).toHaveLength(1);
      expect((await next.store.listLedger()).length).toBe(1);
    });
  });
});
