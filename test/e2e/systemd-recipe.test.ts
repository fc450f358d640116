// The README's systemd recipe, followed as written on a fresh clone: the tracked files copied to
// a scratch folder (what `git clone` of this state gives), this checkout's node_modules
// hard-linked in place of `npm ci`, `npm run build` once as the installing user, then the unit's
// ExecStart with its Environment run as an unprivileged user (uid 65534) that cannot write the
// clone, with data and runtime folders of its own (what StateDirectory= and RuntimeDirectory=
// make) and no home directory. Needs root (to switch user) and setpriv; skipped otherwise.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/relay-process";

const root = new URL("../../", import.meta.url).pathname;
const NOBODY = 65534;
const canSwitchUser = process.getuid?.() === 0 && existsSync("/usr/bin/setpriv");
const scratch: string[] = [];
afterAll(() => {
  for (const d of scratch) rmSync(d, { recursive: true, force: true });
});

/** The unit file of the README's "As a service (systemd)" section: its [Service] keys, in order. */
function readmeUnit(): Array<[string, string]> {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const block = readme.match(/```ini\n(# \/etc\/systemd\/system\/edge-relay\.service[\s\S]*?)```/);
  if (!block) throw new Error("the README has no edge-relay.service unit");
  const service = block[1].split("[Service]")[1].split("[Install]")[0];
  return service
    .split("\n")
    .filter((l) => /^[A-Za-z]+=/.test(l))
    .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]);
}

/** systemd's Environment= value: space-separated assignments, each maybe in double quotes. */
function environment(value: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of value.matchAll(/"([^"]*)"|(\S+)/g)) {
    const a = m[1] ?? m[2];
    out[a.slice(0, a.indexOf("="))] = a.slice(a.indexOf("=") + 1);
  }
  return out;
}

describe.skipIf(!canSwitchUser)("the README's systemd recipe on a fresh clone", () => {
  it("builds once as root, then the unit's ExecStart runs as an unprivileged user: /healthz answers, SIGTERM stops it with exit 0", async () => {
    const unit = readmeUnit();
    const keys = new Map(unit);
    expect(keys.get("User")).toBe("relay");
    expect(keys.get("StateDirectory")).toBe("edge-relay");
    expect(keys.get("RuntimeDirectory")).toBe("edge-relay");
    expect(Number(keys.get("LimitNOFILE"))).toBeGreaterThanOrEqual(4096);
    const install = keys.get("WorkingDirectory")!; // /opt/edge-relay

    // The fresh clone, root's, readable by all (as /opt is).
    const clone = mkdtempSync(join(tmpdir(), "edge-relay-opt-"));
    scratch.push(clone);
    chmodSync(clone, 0o755);
    const files = spawnSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" }).stdout.split("\0").filter(Boolean);
    for (const f of files) {
      if (!existsSync(join(root, f))) continue;
      mkdirSync(dirname(join(clone, f)), { recursive: true });
      cpSync(join(root, f), join(clone, f));
    }
    execFileSync("cp", ["-al", join(root, "node_modules"), join(clone, "node_modules")]);
    // `npm run build`, once, as the installing user.
    const build = spawnSync("npm", ["run", "-s", "build"], {
      cwd: clone,
      encoding: "utf8",
      timeout: 120_000,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
    });
    expect(build.status, `${build.stdout}${build.stderr}`).toBe(0);
    const builtAt = Date.now();

    // What StateDirectory= and RuntimeDirectory= make: folders of the service's user.
    const state = mkdtempSync(join(tmpdir(), "edge-relay-state-"));
    const run = mkdtempSync(join(tmpdir(), "edge-relay-run-"));
    scratch.push(state, run);
    for (const d of [state, run]) chownSync(d, NOBODY, NOBODY);

    const port = await freePort();
    const env: Record<string, string> = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: "/nonexistent", LANG: "C.UTF-8" };
    for (const [k, v] of unit) if (k === "Environment") Object.assign(env, environment(v));
    expect(env.RELAY_DATA_DIR).toBe(`/var/lib/${keys.get("StateDirectory")}`);
    expect(env.RELAY_RUNTIME_DIR).toBe(`/run/${keys.get("RuntimeDirectory")}`);
    Object.assign(env, { RELAY_DATA_DIR: state, RELAY_RUNTIME_DIR: run, RELAY_PORT: String(port), PUBLIC_URL: "" });
    const words = keys
      .get("ExecStart")!
      .split(/\s+/)
      .map((w) => w.replaceAll(install, clone));
    const cmd = words[0]!;
    const args = words.slice(1);
    expect(args).toContain("--no-build");

    let out = "";
    const child = spawn("setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--", cmd, ...args], {
      cwd: keys.get("WorkingDirectory")!.replaceAll(install, clone),
      env: env as NodeJS.ProcessEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    try {
      let healthy = false;
      for (const deadline = Date.now() + 45_000; Date.now() < deadline && child.exitCode === null; ) {
        try {
          healthy = (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
          if (healthy) break;
        } catch {
          // not up yet
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(healthy, out).toBe(true);
      expect((await fetch(`http://127.0.0.1:${port}/demo/`)).status).toBe(200); // the pages of the build
      child.kill("SIGTERM");
      expect(await exited, out).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
    // Its data went to the state folder, its runtime files to the runtime folder, nothing to the clone.
    expect(readdirSync(state).length).toBeGreaterThan(0);
    expect(statSync(state).uid).toBe(NOBODY);
    expect(existsSync(join(run, "workerd.capnp"))).toBe(true);
    const written = execFileSync(
      "find",
      [clone, "-path", join(clone, "node_modules"), "-prune", "-o", "-newermt", `@${Math.floor(builtAt / 1000) + 1}`, "-print"],
      { encoding: "utf8" },
    );
    expect(written.trim()).toBe("");
    for (const line of out.split("\n").filter((l) => l.trim())) expect(() => JSON.parse(line), line).not.toThrow();
  }, 150_000);
});
