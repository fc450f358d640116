// "refused upgrades leave entries in the self-hosted live-socket map": a self-hosted relay
// notes which objects hold open sockets (server/live.ts) to close them on shutdown; an
// upgrade the object refuses (a 101 carrying only an error and a close, as an expired Minca room
// answers) must not be noted, or the map grows with every refusal and never shrinks.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Context } from "hono";
import { upgradeTo } from "../../workers/sockets";
import { liveCount, setCrowded, takeLive } from "../../server/live";
import { app } from "../../workers/app";
import { COMMON_LIMITS } from "../../shared/limits";
import { HostConnection, makeSpace, newAccount, writeVersion } from "../../clients/minca/host";
import { codeRoom, codeSecret, newCode } from "../../shared/minca/code";
import { newP256Key } from "../../shared/minca/es256";
import { makeJoin } from "../../shared/minca/room";
import { TestSocket } from "../helpers/socket";

/** The Worker's routing as a self-hosted relay runs it (RELAY_RUNTIME = "workerd": sockets are tracked). */
const selfHosted = { env: { ...env, RELAY_RUNTIME: "workerd" }, header: () => {} } as unknown as Context<{ Bindings: Env }>;
/** The same routing as Cloudflare runs it (nothing tracked; the launcher's word never comes). */
const onCloudflare = { env, header: () => {} } as unknown as Context<{ Bindings: Env }>;

function upgrade(room: string): Promise<Response> {
  const req = new Request(`http://relay.test/minca/v1/rooms/${room}`, { headers: { Upgrade: "websocket" } });
  return upgradeTo(selfHosted, "MINCA_ROOM", env.MINCA_ROOM.idFromName(room), req);
}

describe("the self-hosted live-socket map", () => {
  it("notes an object that accepted a socket, and not one whose 101 only carried a refusal (an expired room)", async () => {
    takeLive();
    const room = codeRoom(codeSecret(newCode()));
    const res = await upgrade(room);
    expect(res.status).toBe(101);
    res.webSocket!.accept();
    const s = new TestSocket(res.webSocket as unknown as WebSocket);
    const { challenge } = await s.next("challenge");
    s.send(await makeJoin(await newP256Key(), room, challenge));
    await s.next("welcome");
    expect(liveCount()).toBe(1);
    s.close();
    await s.closed;
    takeLive();

    // the room's life ends: it refuses every join for its tombstone
    await runInDurableObject(env.MINCA_ROOM.get(env.MINCA_ROOM.idFromName(room)), (_o, state) => {
      state.storage.sql.exec("UPDATE room SET expires_at = ?", Date.now() - 1);
    });
    for (let i = 0; i < 3; i++) {
      const refused = await upgrade(room);
      expect(refused.status).toBe(101);
      refused.webSocket!.accept();
      const r = new TestSocket(refused.webSocket as unknown as WebSocket);
      expect((await r.next("error")).code).toBe("room_expired");
    }
    expect(liveCount()).toBe(0);
  });
});

describe("near the open-file limit (the launcher says crowded)", () => {
  it("near the open-file limit new upgrades are refused 503 unavailable with Retry-After, and taken again once clear", async () => {
    const headers: Record<string, string> = {};
    const ctx = {
      env: { ...env, RELAY_RUNTIME: "workerd" },
      header: (k: string, v: string) => {
        headers[k.toLowerCase()] = v;
      },
      json: (body: unknown, status: number) => Response.json(body, { status, headers }),
    } as unknown as Context<{ Bindings: Env }>;
    const room = codeRoom(codeSecret(newCode()));
    const req = () => new Request(`http://relay.test/minca/v1/rooms/${room}`, { headers: { Upgrade: "websocket" } });
    setCrowded(true);
    try {
      const refused = await upgradeTo(ctx, "MINCA_ROOM", env.MINCA_ROOM.idFromName(room), req());
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("unavailable");
      expect(headers["retry-after"]).toBe(String(COMMON_LIMITS.unavailable_retry_seconds));
      expect(headers.connection).toBe("close");
      expect(liveCount()).toBe(0);
      // on Cloudflare there is no launcher and no such limit: the word is never taken
      const there = await upgradeTo(onCloudflare, "MINCA_ROOM", env.MINCA_ROOM.idFromName(room), req());
      expect(there.status).toBe(101);
      there.webSocket!.accept();
      there.webSocket!.close();
    } finally {
      setCrowded(false);
    }
    const taken = await upgradeTo(ctx, "MINCA_ROOM", env.MINCA_ROOM.idFromName(room), req());
    expect(taken.status).toBe(101);
    taken.webSocket!.accept();
    taken.webSocket!.close();
    takeLive();
  });

  it("near the open-file limit a long-poll is answered at once, as with wait 0: a mailbox's page with nothing new does not hold its connection", async () => {
    const topic = `crowded-long-poll-${Date.now()}`;
    const get = () => app.fetch(new Request(`http://relay.test/minca/v1/mailbox/${topic}?wait=25`), env);
    setCrowded(true);
    try {
      // Held, it would answer in 25 s (past this test's timeout); crowded, at once and empty.
      const res = await get();
      expect(res.status).toBe(200);
      expect(((await res.json()) as { items: unknown[] }).items).toEqual([]);
    } finally {
      setCrowded(false);
    }
  });

  it("near the open-file limit a space log's long-poll is answered at once too, as with wait 0", async () => {
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      app.fetch(new Request(input as string, init), env)) as typeof globalThis.fetch;
    const acct = await newAccount();
    const host = new HostConnection(acct, "http://relay.test", { fetch, rateRetries: 0 });
    await host.connect();
    const space = makeSpace(acct, "public");
    expect(await host.pass(space)).toMatchObject({ accepted: true });
    expect(await host.post(space.id, [await writeVersion(acct, space, { collection: "c", key: "k", body: { n: 1 } })])).toMatchObject([
      { accepted: true },
    ]);
    const get = () => fetch(`http://relay.test/minca/v1/spaces/${space.id}/versions?after=1&wait=25`);
    setCrowded(true);
    try {
      // Held, it would answer in 25 s (past this test's timeout); crowded, at once, with nothing after the version.
      const res = await get();
      expect(res.status).toBe(200);
      expect(((await res.json()) as { items: unknown[] }).items).toEqual([]);
    } finally {
      setCrowded(false);
    }
  });
});
