// The workerd config is generated from wrangler.toml: these tests read the real wrangler.toml
// through wrangler's own reader and check that everything in it reaches the config, and that
// what the generator cannot carry over stops it.
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  ConfigError,
  capnpString,
  durableClasses,
  listBundle,
  moduleTypeOf,
  OPTIONAL_SECRETS,
  plan,
  publicWarnings,
  RUNTIME_BINDING,
  LOOPBACK_BINDING,
  workerdConfig,
  type WranglerConfig,
} from "../../../scripts/workerd-config";

const root = new URL("../../../", import.meta.url).pathname;

// Importing wrangler takes about 10 s on a loaded two-core machine: once, outside any test's timeout.
beforeAll(() => import("wrangler"), 120_000);

async function wranglerToml(): Promise<WranglerConfig> {
  const { unstable_readConfig } = await import("wrangler");
  return unstable_readConfig({ config: join(root, "wrangler.toml") }) as unknown as WranglerConfig;
}

function fakeBundle(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "bundle-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

const baseOptions = (dir: string, cfg: WranglerConfig, env: Record<string, string> = {}) => ({
  listen: "127.0.0.1:8787",
  dataDir: "/srv/relay/data",
  adminAddress: "unix:/run/relay/admin.sock",
  configDir: join(dir, "..", "run"),
  modules: listBundle(dir, cfg),
  env,
});
const base = (dir: string, cfg: WranglerConfig, env: Record<string, string> = {}) => workerdConfig(cfg, baseOptions(dir, cfg, env));

describe("the config generated from this repository's wrangler.toml", () => {
  it("has every Durable Object binding, class and setting that wrangler.toml declares", async () => {
    const cfg = await wranglerToml();
    const p = plan(cfg, {});
    expect(p.compatibilityDate).toBe(cfg.compatibility_date);
    expect(p.compatibilityFlags).toEqual(cfg.compatibility_flags);
    const bindings = cfg.durable_objects?.bindings ?? [];
    expect(bindings.length).toBeGreaterThan(0);
    expect(p.durableBindings).toEqual(bindings.map((b) => ({ name: b.name, className: b.class_name })));
    for (const b of bindings) {
      const ns = p.namespaces.find((n) => n.className === b.class_name);
      expect(ns, b.class_name).toBeDefined();
      // Every relay object keeps its state in SQLite, on Cloudflare and self-hosted alike.
      expect(ns!.sqlite).toBe(cfg.migrations!.some((m) => m.new_sqlite_classes?.includes(b.class_name)));
    }
    expect(p.vars.map((v) => v.name).sort()).toEqual(Object.keys(cfg.vars ?? {}).sort());
    expect(p.outboundAllow).toEqual(["public"]);
  });

  it("no_web_socket_compression: wrangler.toml sets it, and the generated config keeps it even when a wrangler.toml leaves it out", async () => {
    const cfg = await wranglerToml();
    expect(cfg.compatibility_flags).toContain("no_web_socket_compression");
    expect(plan({ ...cfg, compatibility_flags: ["nodejs_compat"] }, {}).compatibilityFlags).toEqual([
      "nodejs_compat",
      "no_web_socket_compression",
    ]);
  });

  it("renders as a workerd config that embeds the bundle's modules by their rules", async () => {
    const cfg = await wranglerToml();
    const dir = fakeBundle({
      "index.js": "export default {}",
      "abc-0001_init.sql": "CREATE TABLE t (x);",
      "index.js.map": "{}",
      "README.md": "",
    });
    const text = base(dir, cfg);
    expect(text).toContain('(name = "index.js", esModule = embed "../');
    expect(text).toContain('(name = "abc-0001_init.sql", text = embed "../');
    expect(text).not.toContain("index.js.map");
    expect(text).toContain(`compatibilityDate = "${cfg.compatibility_date}"`);
    expect(text).toContain('(name = "RELAY_RUNTIME", text = "workerd")');
    expect(text).toContain('(name = "RELAY_LOOPBACK_ONLY", text = "true")');
    expect(text).toContain('durableObjectStorage = (localDisk = "data")');
    expect(text).toContain('disk = (path = "/srv/relay/data", writable = true)');
    expect(text).toContain('address = "127.0.0.1:8787"');
    expect(text).toContain('entrypoint = "RelayAdmin"');
    expect(text).toContain('globalOutbound = "internet"');
    for (const b of cfg.durable_objects!.bindings!) {
      expect(text).toContain(`(name = "${b.name}", durableObjectNamespace = (className = "${b.class_name}"))`);
    }
  });
});

describe("settings and secrets", () => {
  const cfg: WranglerConfig = {
    name: "r",
    compatibility_date: "2026-01-01",
    vars: { RELAY_NAME: "default name", LIMITS: { a: 1 } },
    secrets: { required: ["VAPID_PRIVATE_KEY"] },
  };

  it("takes a [vars] value from the environment when set there, JSON for JSON vars", () => {
    const p = plan(cfg, { RELAY_NAME: "Example relay", LIMITS: '{"a":2}', UNRELATED: "x" });
    expect(p.vars).toEqual([
      { name: "RELAY_NAME", value: "Example relay", from: "environment" },
      { name: "LIMITS", value: { a: 2 }, from: "environment" },
    ]);
    expect(plan(cfg, {}).vars[0]).toEqual({ name: "RELAY_NAME", value: "default name", from: "wrangler.toml" });
    expect(() => plan(cfg, { LIMITS: "not json" })).toThrow(ConfigError);
  });

  it("reads secrets from the environment at workerd's start and never writes them", () => {
    const dir = fakeBundle({ "index.js": "" });
    const text = base(dir, cfg, { VAPID_PRIVATE_KEY: "very-secret" });
    expect(text).toContain('(name = "VAPID_PRIVATE_KEY", fromEnvironment = "VAPID_PRIVATE_KEY")');
    expect(text).not.toContain("very-secret");
    expect(text).toContain('(name = "LIMITS", json = "{\\"a\\":1}")');
  });

  it("self-hosted secrets: ADMIN_TOKEN, VAPID_PRIVATE_KEY, VAPID_SUBJECT, MINCA_HOST_KEY set in the environment of npm start reach the Worker, never written", () => {
    const dir = fakeBundle({ "index.js": "" });
    const env = { ADMIN_TOKEN: "admin-secret", VAPID_SUBJECT: "mailto:ops@relay.example", MINCA_HOST_KEY: "host-secret" };
    const text = base(dir, { ...cfg, secrets: undefined }, env);
    for (const k of Object.keys(env)) expect(text).toContain(`(name = "${k}", fromEnvironment = "${k}")`);
    for (const v of Object.values(env)) expect(text).not.toContain(v);
    // unset ones are not bound (the relay generates and keeps its keys then)
    expect(text).not.toContain("VAPID_PRIVATE_KEY");
  });

  it("the optional secrets are the settings env.d.ts types (one list)", () => {
    const typed = readFileSync(new URL("../../../env.d.ts", import.meta.url), "utf8");
    const body = typed.slice(typed.indexOf("interface RelaySettings"), typed.indexOf("declare namespace"));
    const names = [...body.matchAll(/^\s+([A-Z_]+)\?:/gm)].map((m) => m[1]).filter((n) => n !== RUNTIME_BINDING && n !== LOOPBACK_BINDING);
    expect([...OPTIONAL_SECRETS].sort()).toEqual(names.sort());
  });

  it("the status pages open without ADMIN_TOKEN only on loopback: RELAY_LOOPBACK_ONLY is true for a loopback listen address only", async () => {
    const cfg = await wranglerToml();
    const dir = fakeBundle({ "index.js": "" });
    for (const [listen, loopback] of [
      ["127.0.0.1:8787", true],
      ["[::1]:8787", true],
      ["localhost:8787", true],
      ["0.0.0.0:8787", false],
      ["[::]:8787", false],
      ["192.0.2.1:80", false],
    ] as const) {
      const text = workerdConfig(cfg, { ...baseOptions(dir, cfg), listen });
      expect(text, listen).toContain(`(name = "RELAY_LOOPBACK_ONLY", text = "${loopback}")`);
    }
    expect(() => plan({ ...cfg, vars: { RELAY_LOOPBACK_ONLY: "true" } }, {})).toThrow(/RELAY_LOOPBACK_ONLY/);
  });

  it("docs/hostile.md and 4: listening beyond loopback without PUBLIC_URL or ADMIN_TOKEN is said loudly at start", () => {
    expect(publicWarnings("127.0.0.1", {})).toEqual([]);
    expect(publicWarnings("::1", {})).toEqual([]);
    const open = publicWarnings("0.0.0.0", { PUBLIC_URL: "" });
    expect(open).toHaveLength(2);
    expect(open[0]).toMatch(/PUBLIC_URL/);
    expect(open[1]).toMatch(/ADMIN_TOKEN/);
    expect(publicWarnings("0.0.0.0", { PUBLIC_URL: "wss://relay.example", ADMIN_TOKEN: "t" })).toEqual([]);
    expect(publicWarnings("[::]", { PUBLIC_URL: "wss://relay.example" })).toEqual([expect.stringMatching(/ADMIN_TOKEN/)]);
  });

  it("refuses a wrangler.toml that sets the runtime marker itself", () => {
    expect(() => plan({ ...cfg, vars: { RELAY_RUNTIME: "x" } }, {})).toThrow(/RELAY_RUNTIME/);
  });
});

describe("Durable Object classes from the migrations", () => {
  it("replays new, renamed and deleted classes; a renamed class keeps its data", () => {
    const classes = durableClasses({
      migrations: [
        { tag: "v1", new_sqlite_classes: ["A", "B"], new_classes: ["Old"] },
        { tag: "v2", renamed_classes: [{ from: "A", to: "A2" }], deleted_classes: ["Old"] },
      ],
    });
    expect([...classes]).toEqual([
      ["B", { sqlite: true, storageName: "B" }],
      ["A2", { sqlite: true, storageName: "A" }],
    ]);
  });

  it("refuses a binding to a class no migration creates, or to another script", () => {
    const cfg: WranglerConfig = { compatibility_date: "2026-01-01", migrations: [{ tag: "v1", new_sqlite_classes: ["A"] }] };
    expect(() => plan({ ...cfg, durable_objects: { bindings: [{ name: "X", class_name: "Nope" }] } }, {})).toThrow(/Nope/);
    expect(() => plan({ ...cfg, durable_objects: { bindings: [{ name: "X", class_name: "A", script_name: "other" }] } }, {})).toThrow(
      /other/,
    );
  });
});

describe("what the generator cannot carry over", () => {
  it("stops at bindings workerd serve does not provide here, naming them", () => {
    const cfg: WranglerConfig = { compatibility_date: "2026-01-01" };
    expect(() => plan({ ...cfg, kv_namespaces: [{ binding: "K", id: "x" }] }, {})).toThrow(/kv_namespaces/);
    expect(() => plan({ ...cfg, triggers: { crons: ["* * * * *"] } }, {})).toThrow(/triggers\.crons/);
    expect(() => plan({ ...cfg, queues: { producers: [{ queue: "q", binding: "Q" }] } }, {})).toThrow(/queues/);
    expect(() => plan({ ...cfg, unsafe: {}, queues: { producers: [], consumers: [] }, services: [] }, {})).not.toThrow();
  });

  it("stops at a bundle file no module rule types", () => {
    const dir = fakeBundle({ "index.js": "", "weird.xyz": "" });
    expect(() => listBundle(dir, { compatibility_date: "2026-01-01" })).toThrow(/weird\.xyz/);
  });
});

describe("module rules and literals", () => {
  it("types files as wrangler's rules do, configured rules first", () => {
    expect(moduleTypeOf("abc-0001_init.sql")).toBe("Text");
    expect(moduleTypeOf("deep/x.wasm")).toBe("CompiledWasm");
    expect(moduleTypeOf("a.bin")).toBe("Data");
    expect(moduleTypeOf("a.sql", [{ type: "Data", globs: ["**/*.sql"] }])).toBe("Data");
    expect(moduleTypeOf("a.xyz")).toBeNull();
  });

  it("escapes Cap'n Proto string literals", () => {
    expect(capnpString('a "b" \\ c\n\u0001é')).toBe('"a \\"b\\" \\\\ c\\n\\x01é"');
  });
});
