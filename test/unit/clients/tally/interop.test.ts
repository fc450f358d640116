// Interop with a Tally client that speaks only the Tally protocol's own sync form (12.5, 12.6): a minimal peer
// written here from the protocol text alone (known_ids in its hello, plain `entries` in its answers, no
// extensions), joined to an SDK client by a direct channel.
import { describe, expect, it } from "vitest";
import { TallyClient, memoryStore, type LedgerEntry } from "../../../../clients/tally/index";
import { openEnvelope, sealEnvelope } from "../../../../shared/tally/envelope";
import { innerToLedgerEntry } from "../../../../shared/tally/entry";
import { verifyLedgerEntry } from "../../../../clients/tally/protocol/ledger";
import { signInner } from "../../../../shared/tally/proof";
import { relayInfo } from "../../../../server/info";
import { LIMITS } from "../../../../shared/limits";
import { newUser, type User } from "../../../helpers/tally";
import { waitFor } from "../../../helpers/wait";

/** A peer that knows only the protocol text: sync_hello { known_ids }, sync_data { entries }. */
class SeedPeer {
  readonly received: unknown[] = [];
  readonly answersSent: number[] = [];
  private n = 0;
  constructor(
    readonly user: User,
    readonly ledger: LedgerEntry[],
    private readonly toClient: (frame: string) => void,
  ) {}

  private send(to: string, type: string, payload: unknown): void {
    const inner = {
      id: `seed-${this.n++}`,
      type,
      from_user_id: this.user.npub,
      to_user_id: to,
      created_at: new Date().toISOString(),
      payload,
    };
    this.toClient(JSON.stringify(sealEnvelope(signInner(inner, this.user.secretKey), this.user.secretKey)));
  }

  hello(to: string): void {
    this.send(to, "sync_hello", { known_ids: this.ledger.map((e) => e.id) });
  }

  onFrame(frame: string): void {
    const opened = openEnvelope(JSON.parse(frame), this.user.secretKey);
    if (!opened.ok) throw new Error(`the protocol-only peer cannot open a frame: ${opened.reason}`);
    const inner = opened.inner as { type: string; from_user_id: string; payload: { known_ids?: string[]; entries?: unknown[] } };
    if (inner.type === "sync_hello") {
      const known = new Set(inner.payload.known_ids ?? []);
      const missing = this.ledger.filter((e) => !known.has(e.id));
      this.answersSent.push(missing.length);
      if (missing.length > 0) this.send(inner.from_user_id, "sync_data", { entries: missing });
    }
    if (inner.type === "sync_data") this.received.push(...(inner.payload.entries ?? []));
  }
}

function signed(from: User, to: User, id: string, payload: unknown = {}): LedgerEntry {
  return innerToLedgerEntry(
    signInner(
      { id, type: "note", from_user_id: from.npub, to_user_id: to.npub, created_at: "2026-01-01T00:00:00.000Z", payload },
      from.secretKey,
    ),
    new Date(),
  );
}

async function setup(clientLedger: LedgerEntry[], seedLedger: LedgerEntry[], alice: User, bob: User) {
  const store = memoryStore();
  for (const e of clientLedger) await store.appendLedger(e);
  const client = new TallyClient({ relayUrl: "ws://unused", secretKey: alice.secretKey, store, sync: { isFriend: () => true } });
  const seed = new SeedPeer(bob, seedLedger, (f) => void client.handleDirectFrame(f, bob.npub));
  client.addDirectChannel(bob.npub, { send: (f) => queueMicrotask(() => seed.onFrame(f)) });
  return { client, seed };
}

describe("interop with a protocol-only peer", () => {
  it("12.5 known_ids is the list of ledger entry ids the initiator already holds: a protocol-only peer with an equal ledger exchanges nothing", async () => {
    const alice = newUser();
    const bob = newUser();
    const both = [signed(alice, bob, "a1"), signed(bob, alice, "b1"), signed(bob, alice, "b2")];
    const { client, seed } = await setup(both, both, alice, bob);
    const fromSeed: unknown[] = [];
    client.on("sync_message", (m) => void (m.type === "sync_data" && fromSeed.push(m)));
    await client.sync.onPeerConnect(bob.npub, "0123456789abcdef")(); // the client's hello
    seed.hello(alice.npub); // the protocol-only peer's hello
    await waitFor(() => seed.answersSent.length === 1, { what: "the protocol-only peer's answer" });
    await client.idle();
    expect(seed.answersSent).toEqual([0]); // it found every id it holds named
    expect(seed.received).toEqual([]); // and the client sent it nothing
    expect(fromSeed).toEqual([]);
  });

  it("12.5 a seed-form hello with more than 20,000 ids is answered, not dropped", async () => {
    const alice = newUser();
    const bob = newUser();
    const { client, seed } = await setup([signed(alice, bob, "a1")], [], alice, bob);
    const known_ids = Array.from({ length: 20_001 }, (_, i) => `held-${i}`);
    const hello = {
      id: "big-hello",
      type: "sync_hello",
      from_user_id: bob.npub,
      to_user_id: alice.npub,
      created_at: new Date().toISOString(),
      payload: { known_ids },
    };
    await client.sync.onSyncMessage(hello);
    await waitFor(() => seed.received.length === 1, { what: "the answer to a large hello" });
    expect((seed.received[0] as LedgerEntry).id).toBe("a1");
  });

  it("12.6 sends the remainder in the Tally protocol's form: a 62 KB entry reaches a peer that announced no extensions, whole", async () => {
    const alice = newUser();
    const bob = newUser();
    const big = signed(bob, alice, "big", { blob: "y".repeat(62_000) });
    const small = Array.from({ length: 30 }, (_, i) => signed(alice, bob, `s${i}`, { pad: "z".repeat(3_000) }));
    const { client, seed } = await setup([big, ...small], [], alice, bob);
    seed.hello(alice.npub);
    await waitFor(() => seed.received.length === 31, { what: "every entry at the protocol-only peer" });
    await client.idle();
    const got = seed.received as LedgerEntry[];
    const whole = got.find((e) => e.id === "big")!;
    expect((whole.payload as { blob: string }).blob.length).toBe(62_000);
    expect(got.every((e) => verifyLedgerEntry(e))).toBe(true);
  });
});

describe("what a third-party client reads", () => {
  it("the information document says the relay closes a socket silent for 90 s and that a ping keeps it", () => {
    const info = relayInfo({ name: "r", vapidPublicKey: null, host: null });
    expect(info.protocols.tally.keepalive).toContain(`${LIMITS.tally.idle_timeout_seconds} s`);
    expect(info.protocols.tally.keepalive).toContain('{"type":"ping"}');
    expect(info.protocols.tally.keepalive).toContain("4408");
  });
});
