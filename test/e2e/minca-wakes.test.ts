// Minca wakes against the running relay (docs/hosting.md, the Minca protocol §4.4), with a push
// service on loopback that checks each push's VAPID JWT and decrypts it with an independent
// implementation (Node's crypto).
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { HostConnection, makeSpace, newAccount, writeVersion, type MincaAccount } from "../../clients/minca/host";
import { wakeTopic } from "../../server/minca/wake";
import type { Space } from "../../shared/minca/space";
import { LocalPushService } from "../helpers/push-service";
import { sleep, waitFor } from "../helpers/wait";

const relay = inject("relayUrl");
let push: LocalPushService;
let alice: MincaAccount;
let bob: MincaAccount;
let host: HostConnection;
let club: Space;
let phone: ReturnType<LocalPushService["subscribe"]>;
let laptop: ReturnType<LocalPushService["subscribe"]>;

beforeAll(async () => {
  push = await LocalPushService.start();
  alice = await newAccount();
  bob = await newAccount();
  host = new HostConnection(alice, relay);
  await host.connect();
  club = makeSpace(alice, "private", [alice.root.did, bob.root.did]);
  expect(await host.pass(club)).toMatchObject({ accepted: true });
  expect(
    await host.wake("automation:club", { v: 1, name: "New message in Club", spaces: [club.id], collection: "std.message", others: true }),
  ).toMatchObject({ accepted: true });
  phone = push.subscribe();
  laptop = push.subscribe();
  expect(await host.receiver("phone", phone.json)).toMatchObject({ accepted: true });
  expect(await host.receiver("laptop", laptop.json)).toMatchObject({ accepted: true });
});
afterAll(async () => {
  await push?.stop();
});

const post = async (who: MincaAccount, w: Parameters<typeof writeVersion>[2]) => {
  const v = await writeVersion(who, club, w);
  expect(await new HostConnection(who, relay).post(club.id, [v])).toMatchObject([{ accepted: true }]);
  return v;
};

describe("docs/hosting.md: a carried space's new version wakes the account's devices by Web Push", () => {
  it("a version that matches a wake reaches every receiver once each: VAPID-signed, decrypted independently, the version as held, Topic from its id, TTL one day", async () => {
    const v = await post(bob, { collection: "std.message", key: "m1", body: { text: "hi Alice" } });
    await waitFor(() => push.pushesTo(phone.id).length >= 1 && push.pushesTo(laptop.id).length >= 1, { what: "both pushes" });
    await sleep(300);
    for (const sub of [phone, laptop]) {
      const got = push.pushesTo(sub.id);
      expect(got).toHaveLength(1);
      expect(got[0].error).toBeUndefined();
      expect(got[0].vapid?.claims.aud).toBe(push.origin);
      expect(JSON.parse(got[0].plaintext!.toString())).toEqual(JSON.parse(JSON.stringify(v)));
      expect(got[0].headers.topic).toBe(wakeTopic(v.id));
      expect(got[0].headers.ttl).toBe("86400");
    }
  });

  it("a version that does not match, and one written by the account itself under `others`, send nothing", async () => {
    const before = push.received.length;
    await post(bob, { collection: "std.reaction", key: "r1", body: { e: "+1" } });
    await post(alice, { collection: "std.message", key: "m2", body: { text: "my own" } });
    // The known point, instead of a wait: a version that does wake, posted after them, reaches both
    // receivers. The space hands its arrivals to the account in order, so a push either of them
    // had queued would have gone out first or with it.
    const after = await post(bob, { collection: "std.message", key: "m2-after", body: { text: "after them" } });
    await waitFor(() => push.received.length >= before + 2, { what: "the later version's pushes" });
    expect(
      push.received
        .slice(before)
        .map((p) => [p.id, p.headers.topic])
        .sort(),
    ).toEqual(
      [
        [phone.id, wakeTopic(after.id)],
        [laptop.id, wakeTopic(after.id)],
      ].sort(),
    );
  });

  it("a big version sends the short form: { id, space, collection, key }", async () => {
    const v = await post(bob, { collection: "std.message", key: "big", body: { text: "x".repeat(4_000) } });
    await waitFor(() => push.pushesTo(phone.id).some((p) => p.headers.topic === wakeTopic(v.id)), { what: "the short wake" });
    const got = push.pushesTo(phone.id).find((p) => p.headers.topic === wakeTopic(v.id))!;
    expect(JSON.parse(got.plaintext!.toString())).toEqual({ id: v.id, space: club.id, collection: "std.message", key: "big" });
  });

  it("a push service answering 503 then 201 gets the wake delivered by the retry; a 410 endpoint is not pushed to again", async () => {
    push.answer(phone.id, { status: 503 });
    push.answer(laptop.id, { status: 410 });
    const v = await post(bob, { collection: "std.message", key: "m3", body: { text: "retry me" } });
    const of = (id: string) => push.pushesTo(id).filter((p) => p.headers.topic === wakeTopic(v.id));
    // The outbox may reach the laptop's endpoint after the phone's retry: wait for both answers.
    await waitFor(() => of(phone.id).length >= 2 && of(laptop.id).length >= 1, { timeout: 15_000, what: "the retried wake and the 410" });
    expect(of(phone.id).map((p) => p.answered)).toEqual([503, 201]);
    expect(of(laptop.id).map((p) => p.answered)).toEqual([410]);
    const w = await post(bob, { collection: "std.message", key: "m4", body: { text: "after gone" } });
    await waitFor(() => push.pushesTo(phone.id).some((p) => p.headers.topic === wakeTopic(w.id)), { what: "the next wake" });
    await sleep(500);
    expect(push.pushesTo(laptop.id).filter((p) => p.headers.topic === wakeTopic(w.id))).toEqual([]);
    expect(await host.status()).toMatchObject({ receivers: 2, wakes: 1 });
  });
});
