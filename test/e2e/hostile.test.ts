// The relay against a hostile internet (docs/hostile.md), against a relay process of
// its own (`npm start`'s launcher, or wrangler dev with RELAY_TARGET=wrangler), so that its data
// directory can be looked at.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { relayTarget, startRelay, type RelayProcess } from "../helpers/relay-process";
import { TestSocket } from "../helpers/socket";
import { newUser } from "../helpers/tally";
import { bytesToHex, randomBytes } from "../../shared/encoding";
import { codeRoom, codeSecret, newCode } from "../../shared/minca/code";
import { newP256Key } from "../../shared/minca/es256";
import { roomKeys } from "../../shared/passnote/room";

let relay: RelayProcess;
const ADMIN_TOKEN = "admin-token-of-this-test";

beforeAll(async () => {
  relay = await startRelay({ env: { ADMIN_TOKEN } });
});

afterAll(async () => {
  await relay?.stop();
});

/**
 * Every named object's SQLite file in the data directory, with its WAL's size: not the runtime's
 * per-namespace metadata.sqlite, nor the relay's own singletons (its counters and its keys: one
 * each per relay, whatever the requests).
 */
function objectFiles(dataDir: string): Map<string, { bytes: number; wal: number }> {
  const out = new Map<string, { bytes: number; wal: number }>();
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (!/-(RelayStats|RelayKeys)$/.test(e.name)) walk(p);
      } else if (e.name.endsWith(".sqlite") && e.name !== "metadata.sqlite") {
        let wal = 0;
        try {
          wal = statSync(`${p}-wal`).size;
        } catch {
          // no WAL
        }
        out.set(p, { bytes: statSync(p).size, wal });
      }
    }
  };
  walk(dataDir);
  return out;
}

const ws = (path: string) => `${relay.url.replace(/^http/, "ws")}${path}`;

describe("docs/hostile.md: nothing is stored for free (a relay process and its data directory)", () => {
  it("a burst of requests and upgrades that store nothing leaves no table, row or alarm: each object's SQLite file stays the runtime's empty one", async () => {
    const before = objectFiles(relay.dataDir);
    const burst = 10;
    for (let i = 0; i < burst; i++) {
      const topic = bytesToHex(randomBytes(16));
      const space = codeRoom(codeSecret(newCode()));
      const did = (await newP256Key()).did;
      const answers = await Promise.all([
        fetch(`${relay.url}/minca/v1/mailbox/${topic}`),
        fetch(`${relay.url}/minca/v1/mailbox/${topic}/items/1`),
        fetch(`${relay.url}/minca/v1/host/accounts/${did}`),
        fetch(`${relay.url}/minca/v1/spaces/${space}/versions`),
      ]);
      expect(answers.map((r) => r.status)).toEqual([200, 404, 401, 404]);
      await Promise.all(answers.map((r) => r.arrayBuffer()));
      // upgrades that never authenticate, closed by the client
      for (const path of [
        `/tally/v1/${newUser().npub}`,
        `/passnote/v2/${roomKeys(randomBytes(32)).roomId}`,
        `/minca/v1/rooms/${codeRoom(codeSecret(newCode()))}`,
      ]) {
        const s = await TestSocket.open(ws(path));
        await s.next("challenge");
        s.close();
        await s.closed;
      }
    }
    const after = objectFiles(relay.dataDir);
    const added = [...after].filter(([p]) => !before.has(p));
    // (the runtime makes a file for most of the objects these reached: at least the mailboxes')
    expect(added.length).toBeGreaterThanOrEqual(burst);
    for (const [path, f] of added) {
      // an empty SQLite database is one 4 KiB page, and nothing waits in its WAL
      expect({ path, ...f }).toEqual({ path, bytes: expect.any(Number), wal: 0 });
      expect(f.bytes).toBeLessThanOrEqual(4096);
    }
  });
});

describe("self-hosted settings and files", () => {
  it("ADMIN_TOKEN set in the environment of npm start protects /status, /status.json and /metrics", async () => {
    for (const path of ["/status", "/status.json", "/metrics"]) {
      const open = await fetch(`${relay.url}${path}`);
      await open.arrayBuffer();
      expect(open.status).toBe(401);
      const wrong = await fetch(`${relay.url}${path}`, { headers: { authorization: "Bearer wrong" } });
      await wrong.arrayBuffer();
      expect(wrong.status).toBe(401);
      const ok = await fetch(`${relay.url}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      await ok.arrayBuffer();
      expect(ok.status).toBe(200);
    }
  });

  it.skipIf(relayTarget() === "wrangler")(
    "the data directory is the relay user's only (0700) and its files are not readable by others",
    async () => {
      // something stored, so that files exist
      const t = bytesToHex(randomBytes(16));
      expect((await fetch(`${relay.url}/minca/v1/mailbox/${t}`, { method: "POST", body: "x" })).status).toBe(201);
      expect(statSync(relay.dataDir).mode & 0o777).toBe(0o700);
      const walk = (dir: string): string[] =>
        readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
          e.isDirectory() ? [join(dir, e.name), ...walk(join(dir, e.name))] : [join(dir, e.name)],
        );
      const all = walk(relay.dataDir);
      expect(all.length).toBeGreaterThan(0);
      for (const p of all) expect({ p, other: statSync(p).mode & 0o077 }).toEqual({ p, other: 0 });
    },
  );
});
