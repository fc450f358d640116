// `npm start`'s launcher (scripts/serve.ts) as an operator meets it: a second start on a busy port,
// its output, and a setting the Worker finds wrong. Each test starts relays of its own.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, relayTarget, startRelay, type RelayProcess } from "../helpers/relay-process";
import { newUser, rawRegistered } from "../helpers/tally";
import type { TestSocket } from "../helpers/socket";
import { waitFor } from "../helpers/wait";

const root = new URL("../../", import.meta.url).pathname;
const relays: RelayProcess[] = [];
const sockets: TestSocket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.close();
  for (const r of relays.splice(0)) await r.stop({ kill: true });
});

/** Runs the launcher to its end (it must end by itself: a refused start). */
function launch(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [join(root, "scripts/serve.ts"), ...args], {
    cwd: root,
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, ...env, NO_COLOR: "1" },
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}`, stdout: r.stdout, stderr: r.stderr };
}

function jsonLines(text: string): Array<Record<string, unknown>> {
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => {
      const v = JSON.parse(l); // throws on a line that is not JSON, as jq would fail on it
      expect(typeof v === "object" && v !== null && !Array.isArray(v), l).toBe(true);
      return v;
    });
}

/** Whether a process is gone (a zombie nobody reaped counts as gone: it serves nothing). */
function gone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? true;
  } catch {
    return true;
  }
}

// The Worker answers every request with 500 bad_setting while a setting is wrong, once it checks
// them all at its start; the launcher's side of it is tested below as soon as the Worker does.
const workerChecksSettings = ["workers", "shared"].some((dir) =>
  readdirSync(join(root, dir), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(".ts"))
    .some((f) => readFileSync(join(root, dir, f), "utf8").includes("bad_setting")),
);

describe.skipIf(relayTarget() !== "workerd")("the launcher (npm start)", () => {
  it("a second start on a busy port exits non-zero naming the port and --port, and the running relay still drains (1001)", async () => {
    const first = await startRelay();
    relays.push(first);
    const before = Object.fromEntries(readdirSync(first.runtimeDir).map((f) => [f, statSync(join(first.runtimeDir, f)).mtimeMs]));
    const pid = readFileSync(join(first.runtimeDir, "workerd.pid"), "utf8");
    const alice = await rawRegistered(first.url, newUser());
    sockets.push(alice);

    const second = launch([
      "--no-build",
      "--port",
      String(first.port),
      "--data",
      mkdtempSync(join(tmpdir(), "relay-second-")),
      "--runtime-dir",
      first.runtimeDir,
    ]);
    expect(second.code, second.out).toBe(1);
    expect(second.out).toContain(`port ${first.port}`);
    expect(second.out).toContain("--port");
    expect(second.out).toContain("RELAY_PORT");
    // Nothing of the running relay was touched: its config, pid file and admin socket.
    expect(Object.fromEntries(readdirSync(first.runtimeDir).map((f) => [f, statSync(join(first.runtimeDir, f)).mtimeMs]))).toEqual(before);
    expect(readFileSync(join(first.runtimeDir, "workerd.pid"), "utf8")).toBe(pid);

    expect(await first.stop()).toBe(0);
    expect(await alice.closed).toBe(1001);
    expect(first.output()).toMatch(/closed 1 client socket\(s\)/);
  });

  it("one relay per data directory: a second start on the same --data (another port) exits 1 naming the running relay's pids, which keeps serving", async () => {
    const first = await startRelay();
    relays.push(first);
    const holder = JSON.parse(readFileSync(join(first.dataDir, "relay.lock"), "utf8"));
    expect(holder).toMatchObject({ launcher: first.pid, workerd: first.runtimePid() });
    const alice = await rawRegistered(first.url, newUser());
    sockets.push(alice);

    const second = launch([
      "--no-build",
      "--port",
      String(await freePort()),
      "--data",
      first.dataDir,
      "--runtime-dir",
      mkdtempSync(join(tmpdir(), "relay-run-")),
    ]);
    expect(second.code, second.out).toBe(1);
    expect(jsonLines(second.out).at(-1)).toMatchObject({
      level: "error",
      msg: expect.stringContaining(`is in use by another relay (launcher pid ${first.pid}, workerd pid ${first.runtimePid()}`),
    });
    expect(second.out).toContain("--data");
    expect(JSON.parse(readFileSync(join(first.dataDir, "relay.lock"), "utf8"))).toEqual(holder);
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    expect(await first.stop()).toBe(0);
    expect(existsSync(join(first.dataDir, "relay.lock"))).toBe(false);
  });

  it("the runtime dies with its launcher: after kill -9 of the launcher, workerd stops, and the next start takes the data directory over", async () => {
    const first = await startRelay();
    relays.push(first);
    const workerd = first.runtimePid()!;
    expect(gone(workerd)).toBe(false);
    process.kill(first.pid, "SIGKILL");
    expect(await first.exited()).toBe(null);
    await waitFor(() => gone(workerd), { timeout: 10_000, what: `workerd ${workerd} to stop` });
    await expect(fetch(`${first.url}/healthz`)).rejects.toThrow();
    // Its lock is left behind, naming processes that are gone: the next start takes it over.
    expect(existsSync(join(first.dataDir, "relay.lock"))).toBe(true);
    const again = await startRelay({ dataDir: first.dataDir });
    relays.push(again);
    expect(again.output()).toContain("took over the data directory's lock left by a relay that is gone");
    expect(JSON.parse(readFileSync(join(first.dataDir, "relay.lock"), "utf8"))).toMatchObject({ launcher: again.pid });
  });

  it("SIGHUP never stops the relay: it is logged and ignored, and open sockets stay open", async () => {
    const r = await startRelay();
    relays.push(r);
    const alice = await rawRegistered(r.url, newUser());
    sockets.push(alice);
    process.kill(r.pid, "SIGHUP");
    await waitFor(() => r.output().includes("SIGHUP: ignored"), { what: "the SIGHUP line" });
    expect((await fetch(`${r.url}/healthz`)).status).toBe(200);
    alice.send({ type: "ping" });
    await alice.next("pong");
    expect(alice.ws.readyState).toBe(WebSocket.OPEN);
    expect(await r.stop()).toBe(0);
    expect(await alice.closed).toBe(1001);
  });

  it("every line the launcher writes, workerd's and the Worker's included, is one JSON object with ts, level and msg; one per request (its id the x-request-id header, none for a passing health probe) and one per socket session, with its upgrade's request id", async () => {
    const r = await startRelay();
    relays.push(r);
    const s = await rawRegistered(r.url, newUser());
    sockets.push(s);
    // The version and the commit the bundle was built from (scripts/build.ts writes it in).
    const info = (await (await fetch(r.url, { headers: { accept: "application/json" } })).json()) as { version: string; commit: string };
    const head = spawnSync("git", ["rev-parse", "--short=12", "HEAD"], { cwd: root, encoding: "utf8" }).stdout.trim();
    expect(info.version).toBe(JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version);
    expect(info.commit).toMatch(/^[0-9a-f]{12}(\+dirty)?$/);
    if (!info.commit.endsWith("+dirty")) expect(info.commit).toBe(head);
    const missing = await fetch(`${r.url}/no-such-page`);
    await missing.arrayBuffer();
    const requestId = missing.headers.get("x-request-id");
    expect(requestId).toBeTruthy();
    expect(await r.stop()).toBe(0);
    const lines = jsonLines(r.output());
    for (const l of lines)
      expect(typeof l.ts === "string" && typeof l.level === "string" && typeof l.msg === "string", JSON.stringify(l)).toBe(true);
    expect(lines.map((l) => l.msg)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^listening on /), "SIGTERM: draining", "stopped"]),
    );
    // The request's line: its id is the one the answer carried, with route, status, duration and client.
    expect(lines.find((l) => l.msg === "request" && l.request_id === requestId)).toMatchObject({
      level: "info",
      method: "GET",
      route: "other",
      status: 404,
      duration_ms: expect.any(Number),
      client: expect.any(String),
    });
    // The registered socket's session (closed by the drain): one line from the object that held it.
    const sessions = lines.filter((l) => l.msg === "socket session" && String(l.object).startsWith("TallyUser"));
    expect(sessions).toHaveLength(1);
    // It carries the request id of its upgrade's request line (101).
    expect(sessions[0].request_id).toEqual(expect.any(String));
    expect(lines.find((l) => l.msg === "request" && l.request_id === sessions[0].request_id)).toMatchObject({ status: 101 });
    // The relay's own health probes (the launcher's, the test helper's) wrote no line.
    expect(lines.filter((l) => l.msg === "request" && l.route === "/healthz")).toEqual([]);
    // A bad setting's refusal is JSON too.
    const bad = launch(["--port", "http"]);
    expect(bad.code).toBe(2);
    expect(jsonLines(bad.out)[0]).toMatchObject({ level: "error", msg: expect.stringContaining("--port") });
  });

  it("settings the launcher reads are checked before anything starts: a bad port or grace period exits 2 naming the setting", () => {
    for (const [args, env, named] of [
      [["--port", "99999"], {}, "RELAY_PORT"],
      [[], { RELAY_PORT: "8x" }, "RELAY_PORT"],
      [["--grace", "soon"], {}, "RELAY_SHUTDOWN_GRACE"],
      [["--outbound", "everywhere"], {}, "RELAY_OUTBOUND_ALLOW"],
    ] as const) {
      const r = launch([...args, "--print-config"], env);
      expect(r.code, r.out).toBe(2);
      expect(r.out).toContain(named);
    }
  });

  it("--help suggests only commands that work on the system's Node 20: npm start -- ...", () => {
    const r = launch(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("npm start -- [options]");
    expect(r.stdout).not.toMatch(/(^|[\s(])node scripts\/serve\.ts/m);
  });

  it.skipIf(!workerChecksSettings)(
    "a setting the Worker finds wrong (STORAGE_TALLY_BYTES=lots) stops the start with its message, exit 2",
    async () => {
      const r = launch(
        [
          "--no-build",
          "--port",
          String(await freePort()),
          "--data",
          mkdtempSync(join(tmpdir(), "relay-bad-")),
          "--runtime-dir",
          mkdtempSync(join(tmpdir(), "relay-run-")),
        ],
        { STORAGE_TALLY_BYTES: "lots" },
      );
      expect(r.code, r.out).toBe(2);
      expect(r.out).toContain("STORAGE_TALLY_BYTES");
      expect(r.out).not.toMatch(/listening on/);
    },
  );
});
