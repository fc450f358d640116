// The client's connection life against the running relay: a device refused for too many devices
// (close 1008) comes back by itself once a slot frees; a client comes back after its relay
// restarts (Node 22's own WebSocket, and Node 20's `ws`); on Node 20 the SDK runs with `ws` and
// says so without it.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { CLIENT_LIMITS } from "../../clients/tally/index";
import { freePort, startRelay } from "../helpers/relay-process";
import { TallyClient, type TallyClient as Client } from "../../clients/tally/index";
import { TALLY_LIMITS } from "../../shared/limits";
import { device, newUser, wsBase } from "../helpers/tally";
import { waitFor } from "../helpers/wait";
import { REPO_ROOT, sdkBundleIn } from "../helpers/sdk-bundle";

const relay = inject("relayUrl");
const open: Client[] = [];
afterEach(() => {
  for (const c of open.splice(0)) c.close();
});

describe("connection life", () => {
  it("close 1008 too_many_devices retried with backoff: the extra device registers once another leaves", async () => {
    const user = newUser();
    for (let i = 0; i < TALLY_LIMITS.max_devices_per_user; i++) open.push(await device(relay, user));
    const extra = new TallyClient({ relayUrl: wsBase(relay), secretKey: user.secretKey, store: "memory" });
    open.push(extra);
    const closes: number[] = [];
    extra.on("close", (code) => void closes.push(code));
    await expect(extra.connect()).rejects.toThrow(/1008/);
    open.shift()!.close(); // a slot frees
    await waitFor(() => extra.connected, { what: "the extra device registered", timeout: 20_000 });
    expect(closes[0]).toBe(1008);
  });

  it("reconnect after the relay restarts (Node 22's own WebSocket): the client is registered again within 10 s of the relay being back", async () => {
    expect(typeof globalThis.WebSocket).toBe("function");
    const dataDir = mkdtempSync(join(tmpdir(), "relay-restart-"));
    const port = await freePort();
    let r = await startRelay({ dataDir, port });
    try {
      const c = new TallyClient({ relayUrl: r.wsUrl, secretKey: newUser().secretKey, store: "memory" });
      open.push(c);
      let registrations = 0;
      c.on("registered", () => void registrations++);
      let closes = 0;
      c.on("close", () => void closes++);
      await c.connect();
      await r.stop({ kill: true }); // a crash; a clean stop (1001) is the easy case
      // Down for a while: the lost connection, then three refused attempts, the backoff growing.
      await waitFor(() => closes >= 4, { what: "three refused attempts", timeout: 15_000 });
      r = await startRelay({ dataDir, port });
      const back = Date.now();
      await waitFor(() => registrations === 2, { what: "registered again", timeout: CLIENT_LIMITS.reconnect_max_ms + 1_000 });
      console.log(`registered again ${Date.now() - back} ms after the relay was back`);
      expect(Date.now() - back).toBeLessThan(10_000);
    } finally {
      await r.stop();
    }
  });

  it("Node 20 with `ws`: the SDK registers, connect() to a closed port rejects at once, and without a WebSocket it says to pass `ws`", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tally-node20-"));
    await sdkBundleIn(dir);
    const root = REPO_ROOT;
    const closed = await freePort();
    writeFileSync(
      join(dir, "run.mjs"),
      `import { TallyClient, generateSecretKey } from "./tally.mjs";
import { WebSocket } from ${JSON.stringify(join(root, "node_modules/ws/wrapper.mjs"))};
const out = { node: process.version };
try { await new TallyClient({ relayUrl: "ws://127.0.0.1:${closed}", secretKey: generateSecretKey(), store: "memory" }).connect(); out.bare = "connected?"; }
catch (e) { out.bare = e.message; }
const t0 = Date.now();
const refused = new TallyClient({ relayUrl: "ws://127.0.0.1:${closed}", secretKey: generateSecretKey(), store: "memory", reconnect: false, WebSocket });
try { await refused.connect(); out.refused = "connected?"; } catch (e) { out.refused = "rejected"; out.refusedMs = Date.now() - t0; }
const c = new TallyClient({ relayUrl: ${JSON.stringify(wsBase(relay))}, secretKey: generateSecretKey(), store: "memory", WebSocket });
await c.connect();
out.registered = c.connected;
c.close();
console.log(JSON.stringify(out));
process.exit(0);
`,
    );
    const out = JSON.parse(
      execFileSync("/usr/bin/node", [join(dir, "run.mjs")], { encoding: "utf8", timeout: 30_000 })
        .trim()
        .split("\n")
        .at(-1)!,
    );
    expect(out.node).toMatch(/^v20\./);
    expect(out.bare).toMatch(/no WebSocket here.*`ws`/);
    expect(out.refused).toBe("rejected");
    expect(out.refusedMs).toBeLessThan(CLIENT_LIMITS.connect_timeout_ms);
    expect(out.registered).toBe(true);
  });

  it("reconnect after the relay restarts on Node 20 with `ws`: registered again within 10 s of the relay being back; connect() with reconnect on to a closed port rejects within connect_timeout_ms", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tally-node20-restart-"));
    await sdkBundleIn(dir);
    const root = REPO_ROOT;
    const dataDir = mkdtempSync(join(tmpdir(), "relay-restart20-"));
    const port = await freePort();
    const closed = await freePort();
    let r = await startRelay({ dataDir, port });
    // The device: one JSON line per event, running until killed.
    writeFileSync(
      join(dir, "run.mjs"),
      `import { TallyClient, generateSecretKey } from "./tally.mjs";
import { WebSocket } from ${JSON.stringify(join(root, "node_modules/ws/wrapper.mjs"))};
const say = (o) => console.log(JSON.stringify(o));
say({ node: process.version });
const t0 = Date.now();
const refused = new TallyClient({ relayUrl: "ws://127.0.0.1:${closed}", secretKey: generateSecretKey(), store: "memory", WebSocket });
try { await refused.connect(); say({ refused: "connected?" }); } catch { say({ refused: "rejected", ms: Date.now() - t0 }); }
refused.close();
const c = new TallyClient({ relayUrl: ${JSON.stringify(r.wsUrl)}, secretKey: generateSecretKey(), store: "memory", WebSocket });
c.on("registered", () => say({ registered: true }));
c.on("close", (code) => say({ close: code }));
await c.connect();
`,
    );
    const child = spawn("/usr/bin/node", [join(dir, "run.mjs")], { stdio: ["ignore", "pipe", "pipe"] });
    const events: Array<Record<string, unknown> & { at: number }> = [];
    let buf = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split("\n");
      buf = lines.pop()!;
      for (const l of lines) if (l.trim()) events.push({ ...JSON.parse(l), at: Date.now() });
    });
    child.stderr.on("data", (d) => (err += d));
    const count = (key: string) => events.filter((e) => key in e).length;
    try {
      await waitFor(() => count("registered") === 1, { what: `the Node 20 device registered (${err})`, timeout: 20_000 });
      expect(events[0].node).toMatch(/^v20\./);
      expect(events.find((e) => "refused" in e)).toMatchObject({ refused: "rejected" });
      expect(events.find((e) => "refused" in e)!.ms).toBeLessThan(CLIENT_LIMITS.connect_timeout_ms);
      await r.stop({ kill: true }); // a crash
      // Down for a while: the lost connection, then three refused attempts.
      await waitFor(() => count("close") >= 4, { what: `three refused attempts (${err})`, timeout: 15_000 });
      r = await startRelay({ dataDir, port });
      const back = Date.now();
      await waitFor(() => count("registered") === 2, {
        what: `registered again (${err})`,
        timeout: CLIENT_LIMITS.reconnect_max_ms + 1_000,
      });
      const again = events.filter((e) => "registered" in e)[1].at - back;
      console.log(`Node 20 with ws: registered again ${again} ms after the relay was back`);
      expect(again).toBeLessThan(10_000);
    } finally {
      child.kill("SIGKILL");
      await r.stop();
    }
  });
});
