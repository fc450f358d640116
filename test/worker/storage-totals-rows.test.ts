// Every stored row is charged against the relay-wide totals (docs/hostile.md, "Relay-wide
// totals"; docs/mailbox.md, "Storage"): a row costs storage.row_overhead_bytes plus its bytes, so
// rows of no bytes (an empty item, a receiver, a Tally contact) count too, and with a total full
// they are refused like any other store. The totals are set on the one ledger object.
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { p256 } from "@noble/curves/nist.js";
import { relayLedger } from "../../durable-objects/relay/relay-ledger";
import type { TestRelayLedger as RelayLedger } from "./test-objects";
import { MAILBOX_LIMITS, STORAGE_LIMITS, TALLY_LIMITS } from "../../shared/limits";
import { rowBytes, type StorageKind } from "../../shared/storage";
import { base64urlEncode, randomBytes } from "../../shared/encoding";
import { newUser, opaqueEnvelope, type User } from "../helpers/tally";
import type { TallyUser } from "../../durable-objects/tally/tally-user";
import { contactRows, deliver, registerDevice } from "../helpers/tally-user";
import { waitFor } from "../helpers/wait";
import { CONTACT_ROW_BYTES } from "../../durable-objects/tally/tally-contacts";
import { heldWithDatabase } from "../../durable-objects/relay/storage-lease";
import { app } from "../../workers/app";
import { HostConnection, makeSpace, newAccount, writeVersion } from "../../clients/minca/host";
import { subscriptionBytes } from "../../shared/webpush/subscription";
import { ownAddress } from "../helpers/client-address";

const RELAY = "http://relay.test";
const MAILBOX = `${RELAY}/minca/v1/mailbox`;
let n = 0;
const newTopic = () => `storage-rows-topic-${Date.now()}-${++n}`;
const ledger = () => env.RELAY_LEDGER.get(relayLedger(env).id) as unknown as DurableObjectStub<RelayLedger>;
const tallyStub = (u: User) => env.TALLY_USER.get(env.TALLY_USER.idFromName(u.hex)) as DurableObjectStub<TallyUser>;
const subscription = () => ({
  endpoint: `https://push.example/sub/${Math.random().toString(36).slice(2)}`,
  keys: {
    p256dh: base64urlEncode(p256.getPublicKey(p256.utils.randomSecretKey(), false)),
    auth: base64urlEncode(randomBytes(16)),
  },
});
const addReceiver = (topic: string) =>
  SELF.fetch(`${MAILBOX}/${topic}/receivers`, { method: "POST", body: JSON.stringify(subscription()) });

/** Sets one kind's total to what is held now plus `room`. */
const roomForHeld = (kind: StorageKind, room: number) =>
  runInDurableObject(ledger(), async (inst: RelayLedger, st) => {
    const sql = st.storage.sql;
    const made = sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'totals'").toArray().length > 0;
    const h = made ? (sql.exec<{ held: number }>("SELECT held FROM totals WHERE kind = ?", kind).toArray()[0]?.held ?? 0) : 0;
    inst.useTotals({
      tally: STORAGE_LIMITS.tally_bytes,
      mailbox: STORAGE_LIMITS.mailbox_bytes,
      host: STORAGE_LIMITS.host_bytes,
      [kind]: h + room,
    });
  });
const resetTotals = () =>
  runInDurableObject(ledger(), (inst: RelayLedger) => {
    inst.useTotals({ tally: STORAGE_LIMITS.tally_bytes, mailbox: STORAGE_LIMITS.mailbox_bytes, host: STORAGE_LIMITS.host_bytes });
  });

describe("every stored row is charged", () => {
  it("storage.database_bytes: an object's first stored row charges its database: one-byte items to fresh topics each cost a topic's database, so a total with room for three databases takes three fresh topics and refuses the fourth", async () => {
    const one = heldWithDatabase("mailbox", rowBytes(1));
    expect(one).toBe(STORAGE_LIMITS.database_bytes_mailbox + rowBytes(1));
    await roomForHeld("mailbox", 3 * one + one / 2);
    const topics = Array.from({ length: 4 }, () => newTopic());
    const statuses: number[] = [];
    for (const t of topics) statuses.push((await SELF.fetch(`${MAILBOX}/${t}`, { method: "POST", body: "x" })).status);
    expect(statuses).toEqual([201, 201, 201, 507]);
    // each topic holds its row and its database against the total (what its lease keeps once the slack is taken back)
    const stub = env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(topics[0]));
    expect(await stub.leaseReclaim()).toBe(one);
    await resetTotals();
  });

  it("storage.row_overhead_bytes: with the mailbox total full, an empty POST and a receiver on fresh topics are refused 507 storage_full and leave nothing", async () => {
    await roomForHeld("mailbox", 0);
    const empty = newTopic();
    const r1 = await SELF.fetch(`${MAILBOX}/${empty}`, { method: "POST", body: "" });
    expect(r1.status).toBe(507);
    expect(((await r1.json()) as any).error.code).toBe("storage_full");
    const r2 = await addReceiver(newTopic());
    expect(r2.status).toBe(507);
    expect(((await r2.json()) as any).error.code).toBe("storage_full");
    expect((await (await SELF.fetch(`${MAILBOX}/${empty}`)).json()) as any).toMatchObject({ items: [] });
    await resetTotals();
    expect((await SELF.fetch(`${MAILBOX}/${empty}`, { method: "POST", body: "" })).status).toBe(201);
    expect((await addReceiver(newTopic())).status).toBe(201);
  });

  it("storage.row_overhead_bytes: empty mailbox items are charged a row each; a topic's receivers are charged too", async () => {
    await resetTotals();
    const topic = newTopic();
    for (let i = 0; i < 3; i++) expect((await SELF.fetch(`${MAILBOX}/${topic}`, { method: "POST", body: "" })).status).toBe(201);
    const sub = subscription();
    const added = await SELF.fetch(`${MAILBOX}/${topic}/receivers`, { method: "POST", body: JSON.stringify(sub) });
    expect(added.status).toBe(201);
    // what the topic holds (its lease once the ledger takes the slack back): three empty rows and the receiver's row
    const stub = env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(topic));
    const held = await stub.leaseReclaim();
    expect(held).toBe(
      heldWithDatabase("mailbox", 3 * rowBytes(0) + rowBytes(sub.endpoint.length + sub.keys.p256dh.length + sub.keys.auth.length)),
    );
  });

  it("storage.row_overhead_bytes: a Tally user's contact rows are charged against its lease of the Tally total", async () => {
    await resetTotals();
    const bob = newUser();
    // bob writes to four users (his contacts: a contact is kept by the user who wrote) ...
    const b = await registerDevice(bob);
    const friends = Array.from({ length: 4 }, () => newUser());
    for (const [i, f] of friends.entries()) {
      b.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(bob, f, `w${i}`) });
      expect((await b.next("queued")).status).toBe("stored");
    }
    await waitFor(async () => (await contactRows(tallyStub(bob))).length === 4, { what: "bob's four contacts noted" });
    b.close();
    // ... and holds envelopes from others
    for (const [i, s] of Array.from({ length: 2 }, () => newUser()).entries()) {
      const raw = JSON.stringify(opaqueEnvelope(s, bob, `c${i}`));
      expect(await deliver(tallyStub(bob), raw, s.hex, `c${i}`)).toBe("stored");
    }
    const [queue, contacts] = await runInDurableObject(tallyStub(bob), (_i, st): number[] => [
      st.storage.sql.exec<{ b: number }>("SELECT TOTAL(bytes) + COUNT(*) * ? AS b FROM queue", rowBytes(0)).one().b,
      st.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM contacts").one().n,
    ]);
    expect(contacts).toBe(4);
    // what the user holds (its lease once the ledger takes the slack back): the envelopes' rows and the contacts' rows
    expect(await tallyStub(bob).leaseReclaim()).toBe(heldWithDatabase("tally", queue + contacts * CONTACT_ROW_BYTES));
    // and with the Tally total full, a stranger's contact row is not kept while its envelope is refused
    await roomForHeld("tally", 0);
    const carol = newUser();
    const stranger = newUser();
    const big = JSON.stringify(opaqueEnvelope(stranger, carol, "s1", { pad: "z".repeat(2_000) }));
    expect(await deliver(tallyStub(carol), big, stranger.hex, "s1")).toBe("storage_full");
    await resetTotals();
  });

  it("storage.row_overhead_bytes: each store charges exactly what the queue and the contacts then hold, when it evicts and when it does not", async () => {
    await resetTotals();
    const bob = newUser();
    const sender = newUser();
    // What each store's write answers as held (the lease's top-up reads it), next to a fresh sum.
    const seen: Array<[number, number]> = [];
    await runInDurableObject(tallyStub(bob), (inst: TallyUser) => {
      const queue = (inst as unknown as { queue: { lease: { ahead(h: number): void }; held(): number } }).queue;
      const ahead = queue.lease.ahead.bind(queue.lease);
      queue.lease.ahead = (h: number) => {
        seen.push([h, queue.held()]);
        ahead(h);
      };
    });
    // One past the per-sender count: the last store evicts the sender's oldest.
    const count = TALLY_LIMITS.queue_max_per_sender + 1;
    for (let i = 0; i < count; i++) {
      const raw = JSON.stringify(opaqueEnvelope(sender, bob, `h${i}`, { pad: "y".repeat(i % 7) }));
      expect(await deliver(tallyStub(bob), raw, sender.hex, `h${i}`)).toBe("stored");
    }
    expect(seen.length).toBeGreaterThanOrEqual(count); // and the contact row's store
    for (const [charged, held] of seen) expect(charged).toBe(heldWithDatabase("tally", held));
  });

  it("storage.row_overhead_bytes: each mailbox POST charges exactly what the topic then holds, when it evicts and when it does not", async () => {
    await resetTotals();
    const topic = newTopic();
    expect((await SELF.fetch(`${MAILBOX}/${topic}`, { method: "POST", body: "first" })).status).toBe(201);
    expect((await addReceiver(topic)).status).toBe(201);
    const stub = env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(topic));
    // What each POST's write answers as held (the lease's top-up reads it), next to a fresh sum.
    const seen: Array<[number, number]> = [];
    await runInDurableObject(stub, (inst: object, st) => {
      const o = inst as { lease: { ahead(h: number): void }; heldBytes(): number };
      const ahead = o.lease.ahead.bind(o.lease);
      o.lease.ahead = (h: number) => {
        seen.push([h, o.heldBytes()]);
        ahead(h);
      };
      // The topic one item short of its count bound, so that the POSTs below evict.
      const until = Math.floor(Date.now() / 1000) + 600;
      for (let i = 2; i < MAILBOX_LIMITS.max_items; i++)
        st.storage.sql.exec(
          "INSERT INTO items (at, until, bytes, blob) VALUES (?, ?, 1, ?)",
          until - 600,
          until,
          new Uint8Array([i & 0xff]).buffer,
        );
    });
    for (const body of ["a", "bb", "ccc"]) expect((await SELF.fetch(`${MAILBOX}/${topic}`, { method: "POST", body })).status).toBe(201);
    expect(seen).toHaveLength(3);
    for (const [charged, held] of seen) expect(charged).toBe(heldWithDatabase("mailbox", held));
  });
});

describe("storage.database_bytes in the client's share (storage.client_share)", () => {
  it("a receiver registered on a fresh topic charges the topic's database to the client's share; an item after it on that topic does not charge it again", async () => {
    await resetTotals();
    const db = STORAGE_LIMITS.database_bytes_mailbox;
    const sub = subscription();
    const receiverRow = rowBytes(subscriptionBytes(sub));
    // a mailbox total whose client share holds two databases, the receiver's row and one item's, and 200 bytes more
    const share = 2 * db + receiverRow + rowBytes(1) + 200;
    const settings = { STORAGE_MAILBOX_BYTES: String(Math.ceil(share / STORAGE_LIMITS.client_share)) };
    const address = ownAddress();
    const send = (path: string, body: string) =>
      app.fetch(new Request(`${MAILBOX}/${path}`, { method: "POST", body, headers: { "cf-connecting-ip": address } }), {
        ...env,
        ...settings,
      });
    const a = newTopic();
    expect((await send(`${a}/receivers`, JSON.stringify(sub))).status).toBe(201); // the row and the topic's database
    expect((await send(a, "x")).status).toBe(201); // the row only: the database is there
    expect((await send(a, "")).status).toBe(201); // the row only, again
    // a receiver on a fresh topic: its row and a database more than the share has left
    const refused = await send(`${newTopic()}/receivers`, JSON.stringify(subscription()));
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as any).error.code).toBe("rate_limited");
  });

  it("storage.database_bytes_space: a hosted account's first version in a space charges the space's database to the client's share of the host total, as the account and the total are; the space's next versions do not", async () => {
    const db = STORAGE_LIMITS.database_bytes_space;
    // a host total whose client share holds three space databases and 20,000 bytes of rows more (a
    // version here is well under 2,000): the carry space's (the passes), s1's and s2's
    const share = 3 * db + 20_000;
    const settings = { STORAGE_HOST_BYTES: String(Math.ceil(share / STORAGE_LIMITS.client_share)) };
    const address = `198.51.100.${(Date.now() % 100) + 1}`;
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
      const headers = new Headers(init?.headers);
      headers.set("cf-connecting-ip", address);
      return app.fetch(new Request(input as string, { ...init, headers }), { ...env, ...settings });
    }) as typeof globalThis.fetch;
    const acct = await newAccount();
    const host = new HostConnection(acct, RELAY, { fetch, rateRetries: 0 });
    await host.connect();
    const [s1, s2] = [makeSpace(acct, "public"), makeSpace(acct, "public")];
    const v = (s: typeof s1, key: string) => writeVersion(acct, s, { collection: "c", key, body: { pad: "p" } });
    const post = async (s: typeof s1, key: string) => host.post(s.id, [await v(s, key)]);
    expect(await host.pass(s1)).toMatchObject({ accepted: true }); // the carry space's first version: its database
    expect(await host.pass(s2)).toMatchObject({ accepted: true }); // the carry space's again: no database
    expect(await post(s1, "a")).toMatchObject([{ accepted: true }]); // s1's database
    // s1's next versions charge their rows only (each charging a database would pass the share by the third)
    for (const key of ["b", "c", "d"]) expect(await post(s1, key)).toMatchObject([{ accepted: true }]);
    expect(await post(s2, "a")).toMatchObject([{ accepted: true }]); // s2's database: the third
    // what is left is less than a database, which the Worker reserves for any version it cannot tell is not a first
    await expect(post(s1, "e")).rejects.toMatchObject({ status: 429, code: "rate_limited" });
  });
});
