// The workerd configuration of a self-hosted relay, generated from wrangler.toml (read by wrangler's
// own reader) and the bundle `wrangler deploy --dry-run` wrote, never copied by hand: a binding,
// class, migration, variable, secret or module rule added to wrangler.toml reaches `workerd serve`
// on the next start, and one this generator cannot carry over stops it with an error naming it.
//
// Runs under plain Node (type stripping): erasable TypeScript only, and `.ts` in relative imports.
import { readdirSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";

/** The part of wrangler's normalized config this generator reads (unstable_readConfig's result). */
export interface WranglerConfig {
  name?: string;
  compatibility_date?: string;
  compatibility_flags?: string[];
  vars?: Record<string, unknown>;
  secrets?: { required?: string[] };
  durable_objects?: { bindings?: Array<{ name: string; class_name: string; script_name?: string; environment?: string }> };
  migrations?: Array<{
    tag: string;
    new_classes?: string[];
    new_sqlite_classes?: string[];
    renamed_classes?: Array<{ from: string; to: string }>;
    deleted_classes?: string[];
    transferred_classes?: unknown[];
  }>;
  rules?: Array<{ type: string; globs: string[]; fallthrough?: boolean }>;
  /** Static assets: served from `directory`; the Worker reaches them through `binding`. */
  assets?: { directory?: string; binding?: string; [key: string]: unknown };
  no_bundle?: boolean;
  [key: string]: unknown;
}

/** A module of the built Worker: its name (as the bundle imports it), its file, its kind. */
export interface WorkerModule {
  name: string;
  path: string;
  type: ModuleType;
}

export type ModuleType = "ESModule" | "CommonJS" | "Text" | "Data" | "CompiledWasm";

export interface WorkerdOptions {
  /** Address the relay listens on, host:port ("0.0.0.0:8787", "[::]:8787", "127.0.0.1:8787"). */
  listen: string;
  /** Folder holding every Durable Object's SQLite files (absolute). */
  dataDir: string;
  /** The admin socket (unix:/path or host:port): POST /drain on shutdown. Loopback only. */
  adminAddress: string;
  /** Folder the config file is written to; module paths are made relative to it. */
  configDir: string;
  /** The bundle's modules, main module first (listBundle). */
  modules: WorkerModule[];
  /** Overrides of [vars] by name (the process environment). */
  env: Record<string, string | undefined>;
  /**
   * Where the relay may connect out (Web Push, say): workerd network classes ("public",
   * "private", "local", "network") or CIDRs. Default ["public"].
   */
  outboundAllow?: string[];
  /** The folder wrangler.toml's relative paths (assets) are resolved against. Default: cwd. */
  projectDir?: string;
}

/** The entrypoint the admin socket serves (workers/admin.ts, exported by workers/index.ts). */
export const ADMIN_ENTRYPOINT = "RelayAdmin";

/**
 * Settings the Worker reads that are not [vars]: secrets on Cloudflare (`wrangler secret put`),
 * each optional (the relay generates and keeps keys when they are unset), typed in env.d.ts
 * (RelaySettings; a unit test keeps the two lists equal). They are not under wrangler.toml's
 * `[secrets] required`, which would make `wrangler deploy` fail without them. Self-hosted, each
 * one set in the environment of `npm start` reaches the Worker, read by workerd at its start
 * (fromEnvironment), never written to the generated config.
 */
export const OPTIONAL_SECRETS = [
  "ADMIN_TOKEN",
  "VAPID_PRIVATE_KEY",
  "VAPID_SUBJECT",
  "MINCA_HOST_KEY",
  "MINCA_HOST_NAME",
  "MINCA_HOST_ADMISSION_TOKEN",
];

/** Bindings the generator adds itself; wrangler.toml must not define them. */
export const RUNTIME_BINDING = "RELAY_RUNTIME";
/**
 * "true" when the relay listens on loopback only (set from the listen address): then, and only
 * then, the operator's pages are open without ADMIN_TOKEN (workers/status.ts).
 */
export const LOOPBACK_BINDING = "RELAY_LOOPBACK_ONLY";

/**
 * Compatibility flags the self-hosted relay always runs with, whatever wrangler.toml lists:
 * `no_web_socket_compression` (every frame is encrypted; a compression context costs about a
 * quarter of a megabyte per socket for its life: docs/upstream/workerd-idle-socket-memory.md).
 */
export const REQUIRED_FLAGS = ["no_web_socket_compression"];

// wrangler's default module rules (appended after the configured ones, as wrangler does).
const DEFAULT_RULES = [
  { type: "Text", globs: ["**/*.txt", "**/*.html", "**/*.sql"] },
  { type: "Data", globs: ["**/*.bin"] },
  { type: "CompiledWasm", globs: ["**/*.wasm", "**/*.wasm?module"] },
];

// Config keys naming bindings or triggers that `workerd serve` here does not provide. A non-empty
// one stops the generator: the self-hosted relay would otherwise start without it.
const UNSUPPORTED = [
  "kv_namespaces",
  "r2_buckets",
  "d1_databases",
  "services",
  "analytics_engine_datasets",
  "vectorize",
  "hyperdrive",
  "workflows",
  "send_email",
  "dispatch_namespaces",
  "mtls_certificates",
  "secrets_store_secrets",
  "pipelines",
  "ratelimits",
  "worker_loaders",
  "vpc_services",
];

export class ConfigError extends Error {}

/** Every Durable Object class the migrations leave, with the storage key its data lives under. */
export function durableClasses(cfg: WranglerConfig): Map<string, { sqlite: boolean; storageName: string }> {
  const classes = new Map<string, { sqlite: boolean; storageName: string }>();
  for (const m of cfg.migrations ?? []) {
    for (const c of m.new_classes ?? []) classes.set(c, { sqlite: false, storageName: c });
    for (const c of m.new_sqlite_classes ?? []) classes.set(c, { sqlite: true, storageName: c });
    for (const r of m.renamed_classes ?? []) {
      const was = classes.get(r.from);
      if (!was) throw new ConfigError(`migration ${m.tag} renames ${r.from}, which no earlier migration created`);
      classes.delete(r.from);
      classes.set(r.to, was); // a renamed class keeps its data
    }
    for (const c of m.deleted_classes ?? []) classes.delete(c);
    if (m.transferred_classes?.length) throw new ConfigError(`migration ${m.tag}: transferred_classes is not supported self-hosted`);
  }
  return classes;
}

function unsupportedKeys(cfg: WranglerConfig): string[] {
  const out: string[] = [];
  for (const key of UNSUPPORTED) {
    const v = cfg[key];
    if (Array.isArray(v) ? v.length > 0 : typeof v === "object" && v !== null && Object.keys(v).length > 0) out.push(key);
  }
  const queues = cfg.queues as { producers?: unknown[]; consumers?: unknown[] } | undefined;
  if (queues?.producers?.length || queues?.consumers?.length) out.push("queues");
  const triggers = cfg.triggers as { crons?: unknown[] } | undefined;
  if (triggers?.crons?.length) out.push("triggers.crons");
  // Assets are carried over as a read-only disk service the Worker reaches through its binding
  // (workers/assets.ts serves them); without a binding the Worker could not reach them.
  if (cfg.assets && (!cfg.assets.directory || !cfg.assets.binding)) out.push("assets without directory and binding");
  for (const key of ["ai", "browser", "images", "version_metadata", "unsafe"]) {
    const v = cfg[key];
    if (v !== undefined && v !== null && !(typeof v === "object" && Object.keys(v).length === 0)) out.push(key);
  }
  return out;
}

function globRegExp(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i];
    if (glob.startsWith("**/", i)) {
      re += "(?:.*/)?";
      i += 2;
    } else if (ch === "*") re += "[^/]*";
    else re += ch.replace(/[.+^${}()|[\]\\?]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

/** The module type wrangler's rules give a file name, or null. */
export function moduleTypeOf(file: string, rules: WranglerConfig["rules"] = []): ModuleType | null {
  for (const rule of [...rules, ...DEFAULT_RULES]) {
    if (rule.globs.some((g) => globRegExp(g).test(file))) return rule.type as ModuleType;
  }
  return null;
}

/**
 * The modules `wrangler deploy --dry-run --outdir <dir>` wrote: index.js first (the main module),
 * then every other file by the config's rules. Source maps and wrangler's README are skipped.
 */
export function listBundle(dir: string, cfg: WranglerConfig): WorkerModule[] {
  const files = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath, d.name)).split(sep).join("/"))
    .filter((f) => !f.endsWith(".map") && f !== "README.md")
    .sort();
  if (!files.includes("index.js")) throw new ConfigError(`no index.js in ${dir}: build the Worker first (npm run build)`);
  const modules: WorkerModule[] = [{ name: "index.js", path: join(dir, "index.js"), type: "ESModule" }];
  for (const f of files) {
    if (f === "index.js") continue;
    const type = f.endsWith(".js") || f.endsWith(".mjs") ? "ESModule" : moduleTypeOf(f, cfg.rules);
    if (!type) throw new ConfigError(`the bundle holds ${f}, which no module rule of wrangler.toml types`);
    modules.push({ name: f, path: join(dir, f), type });
  }
  return modules;
}

/** A Cap'n Proto text string literal. */
export function capnpString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === "\\") out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\t") out += "\\t";
    else if (c < 0x20 || c === 0x7f) out += "\\x" + c.toString(16).padStart(2, "0");
    else out += ch;
  }
  return out + '"';
}

const MODULE_FIELD: Record<ModuleType, string> = {
  ESModule: "esModule",
  CommonJS: "commonJsModule",
  Text: "text",
  Data: "data",
  CompiledWasm: "wasm",
};

/** What the generator decided, for tests and for `npm run config -- --json`. */
export interface WorkerdPlan {
  compatibilityDate: string;
  compatibilityFlags: string[];
  vars: Array<{ name: string; value: unknown; from: "wrangler.toml" | "environment" }>;
  secrets: string[];
  namespaces: Array<{ className: string; uniqueKey: string; sqlite: boolean }>;
  durableBindings: Array<{ name: string; className: string }>;
  /** The static assets' folder (as wrangler.toml names it) and the binding that reaches it. */
  assets: { directory: string; binding: string } | null;
  outboundAllow: string[];
}

export function plan(cfg: WranglerConfig, env: Record<string, string | undefined>, outboundAllow = ["public"]): WorkerdPlan {
  const bad = unsupportedKeys(cfg);
  if (bad.length) {
    throw new ConfigError(`wrangler.toml uses ${bad.join(", ")}, which the self-hosting config does not carry over yet`);
  }
  if (!cfg.compatibility_date) throw new ConfigError("wrangler.toml has no compatibility_date");
  const name = cfg.name ?? "worker";
  const classes = durableClasses(cfg);
  const durableBindings: WorkerdPlan["durableBindings"] = [];
  for (const b of cfg.durable_objects?.bindings ?? []) {
    if (b.script_name) throw new ConfigError(`durable object binding ${b.name} names another script (${b.script_name})`);
    if (!classes.has(b.class_name)) throw new ConfigError(`durable object binding ${b.name}: no migration creates class ${b.class_name}`);
    durableBindings.push({ name: b.name, className: b.class_name });
  }
  const namespaces = [...classes].map(([className, c]) => ({
    className,
    // The folder the class's SQLite files live in, inside the data directory; stable across
    // restarts and upgrades, and across a rename by migration.
    uniqueKey: `${name}-${c.storageName}`,
    sqlite: c.sqlite,
  }));
  const vars: WorkerdPlan["vars"] = [];
  for (const [k, v] of Object.entries(cfg.vars ?? {})) {
    if (k === RUNTIME_BINDING || k === LOOPBACK_BINDING)
      throw new ConfigError(`wrangler.toml must not set ${k}: the self-hosting config sets it`);
    const fromEnv = env[k];
    if (fromEnv === undefined) vars.push({ name: k, value: v, from: "wrangler.toml" });
    else if (typeof v === "string") vars.push({ name: k, value: fromEnv, from: "environment" });
    else {
      try {
        vars.push({ name: k, value: JSON.parse(fromEnv), from: "environment" });
      } catch {
        throw new ConfigError(`${k} is JSON in wrangler.toml; its environment value is not JSON`);
      }
    }
  }
  return {
    compatibilityDate: cfg.compatibility_date,
    compatibilityFlags: [...new Set([...(cfg.compatibility_flags ?? []), ...REQUIRED_FLAGS])],
    vars,
    secrets: [...new Set([...(cfg.secrets?.required ?? []), ...OPTIONAL_SECRETS.filter((k) => env[k] !== undefined && env[k] !== "")])],
    namespaces,
    durableBindings,
    assets: cfg.assets?.directory && cfg.assets.binding ? { directory: cfg.assets.directory, binding: cfg.assets.binding } : null,
    outboundAllow,
  };
}

/** The workerd config (Cap'n Proto text) for `workerd serve <file> config`. */
export function workerdConfig(cfg: WranglerConfig, opts: WorkerdOptions): string {
  const p = plan(cfg, opts.env, opts.outboundAllow);
  const q = capnpString;
  const rel = (path: string) => q(relative(opts.configDir, path).split(sep).join("/"));
  const modules = opts.modules.map((m) => `    (name = ${q(m.name)}, ${MODULE_FIELD[m.type]} = embed ${rel(m.path)}),`);
  const bindings = [
    ...p.vars.map((v) =>
      typeof v.value === "string"
        ? `    (name = ${q(v.name)}, text = ${q(v.value)}),`
        : `    (name = ${q(v.name)}, json = ${q(JSON.stringify(v.value))}),`,
    ),
    // Secrets are read from the environment by workerd at start, never written to a file.
    ...p.secrets.map((s) => `    (name = ${q(s)}, fromEnvironment = ${q(s)}),`),
    `    (name = ${q(RUNTIME_BINDING)}, text = "workerd"),`,
    `    (name = ${q(LOOPBACK_BINDING)}, text = "${isLoopbackListen(listenHost(opts.listen))}"),`,
    ...p.durableBindings.map((b) => `    (name = ${q(b.name)}, durableObjectNamespace = (className = ${q(b.className)})),`),
    ...(p.assets ? [`    (name = ${q(p.assets.binding)}, service = "assets"),`] : []),
  ];
  const assetsService = p.assets
    ? `\n    (name = "assets", disk = (path = ${q(resolve(opts.projectDir ?? process.cwd(), p.assets.directory))}, writable = false)),`
    : "";
  const namespaces = p.namespaces.map(
    (n) => `    (className = ${q(n.className)}, uniqueKey = ${q(n.uniqueKey)}, enableSql = ${n.sqlite}),`,
  );
  return `# Generated by scripts/workerd-config.ts from wrangler.toml and the built bundle. Do not edit:
# change wrangler.toml (or the environment), and start the relay again.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "relay", worker = .relay),
    (name = "data", disk = (path = ${q(opts.dataDir)}, writable = true)),
    (name = "internet", network = (allow = [${p.outboundAllow.map(q).join(", ")}], tlsOptions = (trustBrowserCas = true))),${assetsService}
  ],
  sockets = [
    (name = "http", address = ${q(opts.listen)}, http = (), service = "relay"),
    (name = "admin", address = ${q(opts.adminAddress)}, http = (), service = (name = "relay", entrypoint = ${q(ADMIN_ENTRYPOINT)})),
  ],
);

const relay :Workerd.Worker = (
  modules = [
${modules.join("\n")}
  ],
  compatibilityDate = ${q(p.compatibilityDate)},
  compatibilityFlags = [${p.compatibilityFlags.map(q).join(", ")}],
  bindings = [
${bindings.join("\n")}
  ],
  durableObjectNamespaces = [
${namespaces.join("\n")}
  ],
  durableObjectStorage = (localDisk = "data"),
  globalOutbound = "internet",
);
`;
}

/** The host of a listen address (host:port, [v6]:port). */
export function listenHost(listen: string): string {
  const v6 = /^\[([^\]]+)\]:\d+$/.exec(listen);
  return v6 ? v6[1] : listen.replace(/:\d+$/, "");
}

/** Whether a listen host is loopback only (127.0.0.0/8, ::1, localhost). */
export function isLoopbackListen(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * What a relay listening on `host` with these settings must say loudly at start: beyond loopback,
 * a Tally auth event's relay tag is checked against the Host header the client sends unless
 * PUBLIC_URL is set, and /status is closed to everyone unless ADMIN_TOKEN is set.
 */
export function publicWarnings(host: string, settings: { PUBLIC_URL?: unknown; ADMIN_TOKEN?: string }): string[] {
  if (isLoopbackListen(host)) return [];
  const out: string[] = [];
  if (typeof settings.PUBLIC_URL !== "string" || settings.PUBLIC_URL.trim() === "") {
    out.push(
      `listening on ${host} without PUBLIC_URL: Tally auth events are checked against the Host header each client sends, ` +
        "which is the client's to choose. Set PUBLIC_URL to the relay's public URL(s), comma-separated.",
    );
  }
  if (!settings.ADMIN_TOKEN) {
    out.push(
      `listening on ${host} without ADMIN_TOKEN: /status, /status.json and /metrics are closed (401) to everyone. Set ADMIN_TOKEN to read them.`,
    );
  }
  return out;
}
