// Relay-wide storage totals (docs/hostile.md, "Nothing is stored for free"; docs/hostile.md,
// "Relay-wide totals"; docs/hosting.md, "Quotas"): with a kind's total reached, a new name's store
// is refused with storage_full while well within its own per-name quota, and leaves nothing
// behind; what is freed goes back to the ledger; the ledger is made by the first lease only; the
// status page and the information document show the totals. The tiny totals are set on the one
// ledger object (what STORAGE_*_BYTES set at start; the e2e layer sets them through the setting).
import { SELF, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledger, resetTotals, roomFor } from "../helpers/ledger-totals";
import type { TestRelayLedger as RelayLedger } from "./test-objects";
import { STORAGE_LIMITS, MAILBOX_LIMITS, TALLY_LIMITS, MINCA_HOST_LIMITS } from "../../shared/limits";
import type { StorageKind } from "../../shared/storage";
import { newUser, opaqueEnvelope, type User } from "../helpers/tally";
import { HostConnection, makeSpace, newAccount, writeVersion } from "../../clients/minca/host";
import type { TallyUser } from "../../durable-objects/tally/tally-user";
import { waitFor } from "../helpers/wait";
import { deliver, queuedCount } from "../helpers/tally-user";
import { runDeferred } from "../helpers/deferred";

const RELAY = "http://relay.test";
const MAILBOX = `${RELAY}/minca/v1/mailbox`;
const fetchSelf = ((input: RequestInfo | URL, init?: RequestInit) => SELF.fetch(input as string, init)) as typeof fetch;
let n = 0;
const newTopic = () => `storage-total-topic-${Date.now()}-${++n}`;
const tallyStub = (u: User) => env.TALLY_USER.get(env.TALLY_USER.idFromName(u.hex)) as DurableObjectStub<TallyUser>;
const tables = (stub: DurableObjectStub) =>
  runInDurableObject(stub, (_i, st) =>
    st.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'")
      .toArray()
      .map((r) => r.name),
  );

const DB_MAILBOX = STORAGE_LIMITS.database_bytes_mailbox;
const reserved = async (kind: StorageKind) => (await ledger().snapshot())[kind].reserved_bytes;

describe("relay-wide storage totals", () => {
  it("the ledger is made by the first lease only: GETs of unknown topics, spaces and accounts, and a mailbox item within a lease, never reach it", async () => {
    for (let i = 0; i < 5; i++) {
      expect((await SELF.fetch(`${MAILBOX}/${newTopic()}`)).status).toBe(200);
      expect((await SELF.fetch(`${RELAY}/minca/v1/spaces/b${"a".repeat(52)}/versions`)).status).toBe(404);
    }
    // the ledger object holds no table until something leases from it (this test may run first)
    const before = await tables(ledger());
    if (before.length === 0) {
      const topic = newTopic();
      expect((await SELF.fetch(`${MAILBOX}/${topic}`, { method: "POST", body: "kept" })).status).toBe(201);
      expect(await tables(ledger())).toContain("leases");
    }
  });

  it("storage.mailbox_bytes: with the relay's mailboxes at their total, a second topic's POST is refused 507 storage_full within its own quota, and leaves no storage", async () => {
    await roomFor("mailbox", 50_000 + DB_MAILBOX); // the first topic's database is charged too
    const first = newTopic();
    expect((await SELF.fetch(`${MAILBOX}/${first}`, { method: "POST", body: "x".repeat(40_000) })).status).toBe(201);
    const second = newTopic();
    const refused = await SELF.fetch(`${MAILBOX}/${second}`, { method: "POST", body: "y".repeat(20_000) });
    expect(20_000).toBeLessThan(MAILBOX_LIMITS.max_bytes);
    expect(refused.status).toBe(507);
    expect(((await refused.json()) as any).error.code).toBe("storage_full");
    expect(await tables(env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(second)))).toEqual([]);
    expect((await (await SELF.fetch(`${MAILBOX}/${second}`)).json()) as any).toMatchObject({ items: [] });
    // the first topic writes on within the lease it holds
    expect((await SELF.fetch(`${MAILBOX}/${first}`, { method: "POST", body: "z".repeat(5_000) })).status).toBe(201);
    await resetTotals();
    expect((await SELF.fetch(`${MAILBOX}/${second}`, { method: "POST", body: "y".repeat(20_000) })).status).toBe(201);
  });

  it("storage.mailbox_bytes: concurrent first stores of many topics never take the relay past its total (each lease is checked and granted in one step)", async () => {
    const before = await roomFor("mailbox", 50_000 + DB_MAILBOX);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => SELF.fetch(`${MAILBOX}/${newTopic()}`, { method: "POST", body: "c".repeat(20_000) })),
    );
    const accepted = answers.filter((r) => r.status === 201).length;
    expect(accepted).toBeGreaterThanOrEqual(1);
    expect(accepted * (20_000 + DB_MAILBOX)).toBeLessThanOrEqual(50_000 + DB_MAILBOX);
    expect(answers.every((r) => r.status === 201 || r.status === 507)).toBe(true);
    expect(await reserved("mailbox")).toBeLessThanOrEqual(before + 50_000 + DB_MAILBOX);
    await resetTotals();
  });

  it("storage.mailbox_bytes: what a topic no longer holds goes back to the ledger (an expired item's bytes)", async () => {
    await resetTotals();
    const topic = newTopic();
    const before = await reserved("mailbox");
    expect(
      (await SELF.fetch(`${MAILBOX}/${topic}?until=${Math.floor(Date.now() / 1000) + 2}`, { method: "POST", body: "e".repeat(30_000) }))
        .status,
    ).toBe(201);
    expect(await reserved("mailbox")).toBeGreaterThanOrEqual(before + 30_000);
    const stub: DurableObjectStub = env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(topic));
    // The item's time passes (its expiry moved into the past), then the alarm runs.
    await runInDurableObject(
      stub,
      (_o, state) => void state.storage.sql.exec("UPDATE items SET until = ?", Math.floor(Date.now() / 1000) - 1),
    );
    await runDurableObjectAlarm(stub);
    await waitFor(async () => (await reserved("mailbox")) <= before, { timeout: 8_000 });
  });

  it("storage.lease_audit_age_seconds: a lease its holder never recorded goes back at the ledger's audit; a lease its holder holds stays; asking stores nothing", async () => {
    await resetTotals();
    const topic = newTopic();
    expect((await SELF.fetch(`${MAILBOX}/${topic}`, { method: "POST", body: "k".repeat(20_000) })).status).toBe(201);
    const kept = env.MINCA_MAILBOX.idFromName(topic).toString();
    // a holder that ended between the ledger's grant and its own write: the ledger counts a lease the object never recorded
    const lostStub = env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(newTopic()));
    const lost = lostStub.id.toString();
    expect(await ledger().claim("mailbox", lost, 40_000, 50_000)).toEqual({ ok: true, granted: 50_000 });
    const before = await reserved("mailbox");
    const lease = (holder: string) =>
      runInDurableObject(
        ledger(),
        (_i, st) =>
          st.storage.sql
            .exec<{ bytes: number; updated_at: number }>(
              "SELECT bytes, updated_at FROM leases WHERE kind = 'mailbox' AND holder = ?",
              holder,
            )
            .toArray()[0],
      );
    const keptBefore = await lease(kept);
    // the ledger's alarm is set, no later than the oldest lease's audit
    const alarm = await runInDurableObject(ledger(), (_i, st) => st.storage.getAlarm());
    expect(alarm).not.toBeNull();
    expect(alarm!).toBeLessThanOrEqual(Date.now() + STORAGE_LIMITS.lease_audit_age_seconds * 1000);
    // a day on: every lease is of audit age; the audit runs batch by batch
    await runInDurableObject(ledger(), (_i, st) =>
      st.storage.sql.exec("UPDATE leases SET updated_at = updated_at - ?", STORAGE_LIMITS.lease_audit_age_seconds * 1000 + 1),
    );
    for (let i = 0; i < 10 && (await lease(lost)) !== undefined; i++) await runDurableObjectAlarm(ledger());
    expect(await lease(lost)).toBeUndefined();
    expect(await reserved("mailbox")).toBe(before - 50_000);
    const keptAfter = await lease(kept);
    expect(keptAfter.bytes).toBe(keptBefore.bytes);
    expect(keptAfter.updated_at).toBe(keptBefore.updated_at - STORAGE_LIMITS.lease_audit_age_seconds * 1000 - 1);
    // checked once and found right: not asked again until it changes (no alarm is left for it,
    // once this test's own calls are reported)
    await runDeferred(ledger() as unknown as DurableObjectStub);
    expect(await runInDurableObject(ledger(), (_i, st) => st.storage.getAlarm())).toBeNull();
    expect(await tables(lostStub)).toEqual([]); // the holder asked kept nothing
  });

  it("storage.tally_bytes: with the relay's queues at their total, an envelope for a second offline user is refused storage_full within its own queue bound, and leaves no storage", async () => {
    const alice = newUser();
    const bob = newUser();
    const carol = newUser();
    await roomFor("tally", 40_000 + STORAGE_LIMITS.database_bytes_tally); // bob's database is charged too
    const pad = "p".repeat(30_000);
    expect(await deliver(tallyStub(bob), JSON.stringify(opaqueEnvelope(alice, bob, "b1", { pad })), alice.hex, "b1")).toBe("stored");
    expect(30_000).toBeLessThan(TALLY_LIMITS.queue_max_bytes);
    expect(await deliver(tallyStub(carol), JSON.stringify(opaqueEnvelope(alice, carol, "c1", { pad })), alice.hex, "c1")).toBe(
      "storage_full",
    );
    expect(await tables(tallyStub(carol))).toEqual([]);
    await resetTotals();
    expect(await deliver(tallyStub(carol), JSON.stringify(opaqueEnvelope(alice, carol, "c1", { pad })), alice.hex, "c1")).toBe("stored");
  });

  it("storage.tally_bytes: the sender is answered with the documented error storage_full, carrying the envelope's id", async () => {
    const alice = newUser();
    const dave = newUser();
    await roomFor("tally", 0);
    const { TestSocket } = await import("../helpers/socket");
    const { makeAuthEvent } = await import("../../shared/tally/auth");
    const res = await SELF.fetch(`${RELAY}/tally/v1/${alice.npub}`, { headers: { Upgrade: "websocket" } });
    const ws = res.webSocket!;
    const s = new TestSocket(ws as unknown as WebSocket);
    ws.accept();
    const { challenge } = await s.next("challenge");
    s.send({
      type: "register",
      user_id: alice.npub,
      auth: makeAuthEvent({ secretKey: alice.secretKey, challenge, relayUrl: "ws://relay.test" }),
    });
    await s.next("queue_drained");
    s.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, dave, "d1", { pad: "q".repeat(1_000) }) });
    expect(await s.next("error")).toMatchObject({ code: "storage_full", id: "d1" });
    ws.close();
    await resetTotals();
  });

  it("the Tally protocol §6.2 step 1, deliver to online devices: with the Tally total full, an online acking device still receives the envelope and the sender hears delivered; with no device online the sender hears storage_full, never stored", async () => {
    const alice = newUser();
    const erin = newUser();
    const frank = newUser();
    await roomFor("tally", 0);
    const { TestSocket } = await import("../helpers/socket");
    const { makeAuthEvent } = await import("../../shared/tally/auth");
    const register = async (u: User, acks: boolean) => {
      const res = await SELF.fetch(`${RELAY}/tally/v1/${u.npub}`, { headers: { Upgrade: "websocket" } });
      const ws = res.webSocket!;
      const s = new TestSocket(ws as unknown as WebSocket);
      ws.accept();
      const { challenge } = await s.next("challenge");
      s.send({
        type: "register",
        user_id: u.npub,
        acks,
        auth: makeAuthEvent({ secretKey: u.secretKey, challenge, relayUrl: "ws://relay.test" }),
      });
      await s.next("queue_drained");
      return { ws, s };
    };
    const sender = await register(alice, true);
    const online = await register(erin, true);
    sender.s.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, erin, "e1", { pad: "q".repeat(1_000) }) });
    // Delivered; said "stored" to alice, a stranger to erin (presence is not told to strangers).
    expect(await sender.s.next("queued")).toMatchObject({ id: "e1", status: "stored" });
    expect(await online.s.next("peer_envelope")).toMatchObject({ id: "e1" });
    expect(await queuedCount(tallyStub(erin))).toBe(0); // not stored: the device holds it
    // Frank is offline: nothing stored, and the sender is not told it was.
    sender.s.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, frank, "f1", { pad: "q".repeat(1_000) }) });
    expect(await sender.s.next("error")).toMatchObject({ code: "storage_full", id: "f1" });
    expect(sender.s.ofType("queued").map((q: { id: string }) => q.id)).toEqual(["e1"]);
    sender.ws.close();
    online.ws.close();
    await resetTotals();
  });

  it("storage.host_bytes: with the host at its host-wide total, a second account's version is refused 507 storage_full within its own quota, and nothing of it is stored", async () => {
    const connect = async () => {
      const acct = await newAccount();
      const host = new HostConnection(acct, RELAY, { fetch: fetchSelf });
      await host.connect();
      return { acct, host };
    };
    const a = await connect();
    const b = await connect();
    const sa = makeSpace(a.acct, "public");
    const sb = makeSpace(b.acct, "public");
    await a.host.pass(sa);
    await b.host.pass(sb);
    const big = (acct: typeof a.acct, s: typeof sa, key: string) =>
      writeVersion(acct, s, { collection: "c", key, body: { pad: "h".repeat(30_000) } });
    // the host at its total: every byte of it leased to the accounts that hold something
    await roomFor("host", 0);
    // a writes on within the lease it holds (no ledger call on its way)
    expect(await a.host.post(sa.id, [await big(a.acct, sa, "a1")])).toMatchObject([{ accepted: true }]);
    // b's request outgrows its lease, and the host has no room for more
    const vb = await Promise.all(["b1", "b2", "b3"].map((k) => big(b.acct, sb, k)));
    const size = vb.reduce((n, v) => n + JSON.stringify(v).length, 0);
    expect(((await b.host.status()) as any).bytes + size).toBeLessThan(MINCA_HOST_LIMITS.max_account_bytes);
    await expect(b.host.post(sb.id, vb)).rejects.toMatchObject({ status: 507, code: "storage_full" });
    expect((await b.host.fetchLog(sb)).items).toHaveLength(0);
    await resetTotals();
    expect(await b.host.post(sb.id, vb)).toMatchObject([{ accepted: true }, { accepted: true }, { accepted: true }]);
  });

  it("/status.json and /status show each kind's reserved bytes of its relay-wide total; /metrics has them", async () => {
    await resetTotals();
    expect((await SELF.fetch(`${MAILBOX}/${newTopic()}`, { method: "POST", body: "s".repeat(10_000) })).status).toBe(201);
    await runInDurableObject(ledger(), (inst: RelayLedger) => inst.flushStats());
    const snap = (await (await SELF.fetch(`${RELAY}/status.json`)).json()) as any;
    expect(snap.storage.mailbox.reserved_bytes).toBeGreaterThanOrEqual(10_000);
    expect(snap.storage.mailbox.holders).toBeGreaterThanOrEqual(1);
    expect(snap.storage).toMatchObject({
      tally: { total_bytes: STORAGE_LIMITS.tally_bytes },
      mailbox: { total_bytes: STORAGE_LIMITS.mailbox_bytes },
      host: { total_bytes: STORAGE_LIMITS.host_bytes },
    });
    const html = await (await SELF.fetch(`${RELAY}/status`)).text();
    expect(html).toContain(
      `data-testid="storage-mailbox" data-reserved="${snap.storage.mailbox.reserved_bytes}" data-total="${STORAGE_LIMITS.mailbox_bytes}"`,
    );
    const metrics = await (await SELF.fetch(`${RELAY}/metrics`)).text();
    expect(metrics).toContain(`edge_relay_storage_total_bytes{kind="host"} ${STORAGE_LIMITS.host_bytes}`);
  });

  it("the information document lists each relay-wide total in force under limits.storage", async () => {
    const doc = (await (await SELF.fetch(`${RELAY}/`, { headers: { accept: "application/json" } })).json()) as any;
    expect(doc.limits.storage).toEqual(STORAGE_LIMITS);
  });
});
