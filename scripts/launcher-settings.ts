// The launcher's settings (`npm start -- --help`): flags, else environment, else the default.
// Every one is checked here, at start; a wrong one is a ConfigError naming the flag and the variable.
// Runs under plain Node 22 (type stripping): erasable TypeScript only.
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { ROOT } from "./build.ts";
import { ConfigError, OPTIONAL_SECRETS } from "./workerd-config.ts";

export const HELP = `Usage: npm start -- [options]

Runs the relay on workerd, with its Durable Objects' SQLite files in a local folder. npm runs the
launcher with the project's own Node 22 (the \`node\` devDependency); a service manager runs it
as node_modules/.bin/node scripts/serve.ts [options].

  --host ADDR          listen address          RELAY_HOST            default 127.0.0.1
  --port N             listen port             RELAY_PORT            default 8787
  --data DIR           data directory          RELAY_DATA_DIR        default ./data
  --outbound LIST      where the relay may connect out (Web Push): workerd network classes
                       or CIDRs, comma-separated
                                               RELAY_OUTBOUND_ALLOW  default public
  --grace SECONDS      shutdown grace period   RELAY_SHUTDOWN_GRACE  default 30
  --sweep SECONDS      how often the empty databases of objects that are not live are removed
                       (also at every start; 0: at start only)
                                               RELAY_SWEEP_INTERVAL  default 600
  --restarts N         how many times a minute the launcher starts workerd again when it dies on
                       its own (0: never; past it the launcher exits non-zero for a service
                       manager to restart)
                                               RELAY_RESTARTS        default 10
  --runtime-dir DIR    generated config, admin socket, pid file
                                               RELAY_RUNTIME_DIR     default dist/run/<port>
  --workerd PATH       the workerd binary      WORKERD               default: the one wrangler ships
  --no-build           start the build in dist/ (npm run build) as it is: writes nothing in the
                       checkout, so a user that cannot write it can run the relay
  --print-config       print the generated workerd config and exit (npm run config)
  --help

Every [vars] entry of wrangler.toml can be overridden by an environment variable of the same name;
the secrets ${OPTIONAL_SECRETS.join(", ")},
and any listed under [secrets] required, are read from the environment by workerd at start.
Every setting is checked at start: a wrong one stops the start with a message naming it (exit 2);
a busy port, or a relay already running on the data or the runtime directory, stops it too
(exit 1). SIGHUP is logged and ignored: settings are read at start, so restart to apply them.`;

export interface Settings {
  host: string;
  port: number;
  dataDir: string;
  outbound: string[];
  graceSeconds: number;
  sweepSeconds: number;
  /** Starts of workerd again, a minute, after it died on its own (scripts/runtime-process.ts). */
  restartsPerMinute: number;
  runtimeDir: string;
  workerd: string;
  build: boolean;
  printConfig: boolean;
}

/** A whole number in [min, max] written in decimal digits, or a ConfigError naming the flag and the setting. */
function intSetting(raw: string, min: number, max: number, what: string): number {
  const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new ConfigError(`${what}: "${raw}" is not a whole number from ${min} to ${max}`);
  return n;
}

export function settings(argv: string[], env: NodeJS.ProcessEnv): Settings | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: "string" },
      port: { type: "string" },
      data: { type: "string" },
      outbound: { type: "string" },
      grace: { type: "string" },
      sweep: { type: "string" },
      restarts: { type: "string" },
      "runtime-dir": { type: "string" },
      workerd: { type: "string" },
      "no-build": { type: "boolean" },
      "print-config": { type: "boolean" },
      help: { type: "boolean" },
    },
    strict: true,
  });
  if (values.help) return null;
  const port = intSetting(values.port ?? env.RELAY_PORT ?? "8787", 1, 65535, "the listen port (--port, RELAY_PORT)");
  const graceRaw = values.grace ?? env.RELAY_SHUTDOWN_GRACE ?? "30";
  const graceSeconds = /^\d+(\.\d+)?$/.test(graceRaw.trim()) ? Number(graceRaw) : NaN;
  if (!(graceSeconds >= 0 && graceSeconds <= 86_400)) {
    throw new ConfigError(
      `the shutdown grace period (--grace, RELAY_SHUTDOWN_GRACE): "${graceRaw}" is not a number of seconds from 0 to 86400`,
    );
  }
  const sweepSeconds = intSetting(
    values.sweep ?? env.RELAY_SWEEP_INTERVAL ?? "600",
    0,
    86_400,
    "the sweep interval (--sweep, RELAY_SWEEP_INTERVAL)",
  );
  const restartsPerMinute = intSetting(
    values.restarts ?? env.RELAY_RESTARTS ?? "10",
    0,
    100,
    "the runtime's restarts a minute (--restarts, RELAY_RESTARTS)",
  );
  const host = (values.host ?? env.RELAY_HOST ?? "127.0.0.1").trim();
  if (host === "" || /[\s/]/.test(host)) throw new ConfigError(`the listen address (--host, RELAY_HOST): "${host}" is not an address`);
  const outbound = (values.outbound ?? env.RELAY_OUTBOUND_ALLOW ?? "public")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (outbound.length === 0)
    throw new ConfigError(
      "where the relay may connect out (--outbound, RELAY_OUTBOUND_ALLOW) is empty: name at least one network class (public) or CIDR",
    );
  for (const o of outbound) {
    if (!/^(public|private|local|network|unix|unix-abstract)$/.test(o) && !/^[0-9a-fA-F.:]+\/\d{1,3}$/.test(o)) {
      throw new ConfigError(
        `where the relay may connect out (--outbound, RELAY_OUTBOUND_ALLOW): "${o}" is neither a workerd network class (public, private, local, network) nor a CIDR`,
      );
    }
  }
  const dataDir = values.data ?? env.RELAY_DATA_DIR ?? "data";
  if (dataDir.trim() === "") throw new ConfigError("the data directory (--data, RELAY_DATA_DIR) is empty");
  return {
    host,
    port,
    dataDir: resolve(dataDir),
    outbound,
    graceSeconds,
    sweepSeconds,
    restartsPerMinute,
    runtimeDir: resolve(values["runtime-dir"] || env.RELAY_RUNTIME_DIR || join(ROOT, "dist", "run", String(port))),
    workerd: values.workerd ?? env.WORKERD ?? bundledWorkerd(),
    build: !values["no-build"],
    printConfig: values["print-config"] === true,
  };
}

/** The workerd binary of the wrangler this project builds with, so `wrangler dev` and
 * `workerd serve` run the same runtime. */
export function bundledWorkerd(): string {
  const fromWrangler = createRequire(createRequire(join(ROOT, "package.json")).resolve("wrangler/package.json"));
  return (fromWrangler("workerd") as { default: string }).default;
}

export function listenAddress(host: string, port: number): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}
