// The Minca host inside workerd (docs/hosting.md): wakes and receivers, the pushes a matching
// version sends and their bound.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { makeSpace, writeVersion } from "../../clients/minca/host";
import type { TestMincaAccount } from "./test-objects";
import { waitFor } from "../helpers/wait";
import { accountStub, connected, rows } from "./minca-host-setup";

describe("docs/hosting.md: wakes and receivers", () => {
  /** A browser-like subscription and an in-process push service answering `answers` (then 201). */
  async function pushService(did: string, answers: number[] = []) {
    const { p256 } = await import("@noble/curves/nist.js");
    const { decryptPushMessage } = await import("../../shared/webpush/encrypt");
    const { base64urlEncode, randomBytes } = await import("../../shared/encoding");
    const uaPrivate = p256.utils.randomSecretKey();
    const auth = randomBytes(16);
    const got: Array<{ headers: Record<string, string>; body: string }> = [];
    await runInDurableObject(accountStub(did) as DurableObjectStub<TestMincaAccount>, (inst: TestMincaAccount) => {
      inst.fetchWith = async (_url: string, init: RequestInit) => {
        got.push({
          headers: init.headers as Record<string, string>,
          body: new TextDecoder().decode(decryptPushMessage(init.body as Uint8Array, uaPrivate, auth)),
        });
        return new Response(null, { status: answers.shift() ?? 201 });
      };
    });
    const push = {
      endpoint: `https://push.example/${Math.random().toString(36).slice(2)}`,
      keys: { p256dh: base64urlEncode(p256.getPublicKey(uaPrivate, false)), auth: base64urlEncode(auth) },
    };
    return { push, got };
  }

  it("a matching version sends one push per receiver after it is answered; Topic from the version id; TTL one day; a non-matching one sends nothing", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    await host.pass(s);
    const svc = await pushService(acct.root.did);
    expect(
      await host.wake("wake:1", { v: 1, name: "New message", spaces: [s.id], collection: "std.message", topics: ["club"] }),
    ).toMatchObject({ accepted: true });
    expect(await host.receiver("phone", svc.push)).toMatchObject({ accepted: true });
    expect(await host.status()).toMatchObject({ wakes: 1, receivers: 1 });
    const miss = await writeVersion(acct, s, { collection: "std.message", key: "m0", body: {}, topics: ["other"] });
    const hit = await writeVersion(acct, s, { collection: "std.message", key: "m1", body: { t: 1 }, topics: ["club", "x"] });
    await host.post(s.id, [miss, hit]);
    // The space hands the arrivals to the account after answering: the push queued (or already sent) is the known point.
    await waitFor(async () => svc.got.length > 0 || (await rows(accountStub(acct.root.did), ["pushes"])).pushes > 0, {
      what: "the push queued",
    });
    await runDurableObjectAlarm(accountStub(acct.root.did));
    await waitFor(() => svc.got.length === 1, { what: "the push" }); // the alarm may also fire by itself
    expect(svc.got).toHaveLength(1);
    expect(JSON.parse(svc.got[0].body)).toEqual(JSON.parse(JSON.stringify(hit)));
    const { wakeTopic } = await import("../../server/minca/wake");
    expect(svc.got[0].headers).toMatchObject({ TTL: "86400", Topic: wakeTopic(hit.id) });
  });

  it("a gone endpoint (410) is not pushed to again until its record is written again; 503 is retried by the alarm", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    await host.pass(s);
    const svc = await pushService(acct.root.did, [503, 201, 410]);
    await host.wake("wake:1", { v: 1, name: "any", spaces: "all", collection: "c" });
    await host.receiver("phone", svc.push);
    const send = async (key: string) => {
      await host.post(s.id, [await writeVersion(acct, s, { collection: "c", key, body: {} })]);
      await new Promise((r) => setTimeout(r, 50));
      await runDurableObjectAlarm(accountStub(acct.root.did));
    };
    // The alarm may also fire by itself (set to now): wait for the push rather than assume which run sends it.
    const pushes = (k: number) => waitFor(() => svc.got.length === k, { what: `${k} pushes` });
    await send("a"); // 503
    await pushes(1);
    await runInDurableObject(accountStub(acct.root.did), (_i, st) => st.storage.sql.exec("UPDATE pushes SET next_at = 0"));
    await runDurableObjectAlarm(accountStub(acct.root.did)); // retried: 201
    await pushes(2);
    await send("b"); // 410
    await pushes(3);
    await waitFor(async () => (await host.status()).receivers === 1 && (await rows(accountStub(acct.root.did), ["pushes"])).pushes === 0, {
      what: "the 410 settled",
    });
    await send("c"); // not pushed
    expect(svc.got).toHaveLength(3);
    expect(await host.status()).toMatchObject({ receivers: 1 });
    await host.receiver("phone", svc.push); // written again
    await send("d");
    await pushes(4);
  });

  it("docs/mailbox.md: a sys.receiver whose endpoint the relay may not push to does not count; its version is refused (invalid_receiver)", async () => {
    const { acct, host } = await connected();
    const svc = await pushService(acct.root.did);
    for (const endpoint of [
      "http://127.0.0.1:9/push/x",
      "https://127.0.0.1/push/x",
      "https://[::1]/push/x",
      "https://localhost/push/x",
      "https://push.example:8443/x",
      "https://relay.test/minca/v1/mailbox/aaaaaaaaaaaaaaaaaaaa", // this relay, as the request reached it
    ]) {
      const r = await host.receiver("phone", { ...svc.push, endpoint });
      expect(r, endpoint).toMatchObject({ accepted: false, reason: "invalid_receiver" });
    }
    expect(await host.status()).toMatchObject({ receivers: 0 });
    expect(await host.receiver("phone", svc.push)).toMatchObject({ accepted: true });
    expect(await host.status()).toMatchObject({ receivers: 1 });
  });

  it("bound: at most pushes_per_minute pushes per account per minute; the rest wait for the next minute", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    await host.pass(s);
    const svc = await pushService(acct.root.did);
    await host.wake("wake:1", { v: 1, name: "any", spaces: "all", collection: "c" });
    await host.receiver("phone", svc.push);
    const { MINCA_WAKE_LIMITS } = await import("../../shared/limits");
    await runInDurableObject(accountStub(acct.root.did), (_i, st) => {
      st.storage.sql.exec(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('push_minute', ?), ('push_count', ?)",
        String(Math.floor(Date.now() / 60_000)),
        String(MINCA_WAKE_LIMITS.pushes_per_minute),
      );
    });
    if (Date.now() % 60_000 > 58_000) return; // too close to a minute's end to tell
    await host.post(s.id, [await writeVersion(acct, s, { collection: "c", key: "x", body: {} })]);
    // The push is queued (the known point), and the alarm, run, leaves it queued: the minute's budget is spent.
    await waitFor(async () => (await rows(accountStub(acct.root.did), ["pushes"])).pushes === 1, { what: "the push queued" });
    await runDurableObjectAlarm(accountStub(acct.root.did));
    expect(await rows(accountStub(acct.root.did), ["pushes"])).toEqual({ pushes: 1 });
    expect(svc.got).toHaveLength(0);
    const alarm = await runInDurableObject(accountStub(acct.root.did), (_i, st) => st.storage.getAlarm());
    expect(alarm).toBe((Math.floor(Date.now() / 60_000) + 1) * 60_000);
  });
});
