// The relay's log lines: one JSON object per line on standard output, so Workers Logs
// (wrangler.toml [observability]) indexes each field and a self-hosted operator can read them with
// jq. Every line has `ts` (ISO time), `level` and `msg`; lines written while the Worker handles a
// request also carry its `request_id` (the Worker sets the context, workers/request-context.ts);
// objects add what names the event (never a user id, topic or room id: the same rule as the
// status counts). Lines below the level in force (LOG_LEVEL, default info) are not written.
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
type LogFields = Record<string, unknown>;

let least: LogLevel | undefined;
let context: () => LogFields | undefined = () => undefined;

/** Sets the least severe level written (the Worker does, from its settings). */
export function setLogLevel(level: LogLevel): void {
  least = level;
}

/** Fields added to every line (the Worker's request id while it handles a request). */
export function setLogContext(fields: () => LogFields | undefined): void {
  context = fields;
}

/** The level in force: set by the Worker, else LOG_LEVEL from the process environment, else info. */
function leastLevel(): LogLevel {
  if (least === undefined) {
    const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
    const v = env?.LOG_LEVEL?.trim().toLowerCase();
    least = (LOG_LEVELS as readonly string[]).includes(v ?? "") ? (v as LogLevel) : "info";
  }
  return least;
}

function logEnabled(level: LogLevel): boolean {
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(leastLevel());
}

export function logLine(level: LogLevel, msg: string, fields: LogFields = {}): string {
  const line: LogFields = { ts: new Date().toISOString(), level, msg, ...safeContext() };
  for (const [k, v] of Object.entries(fields)) line[k] = v instanceof Error ? errorFields(v) : v;
  try {
    return JSON.stringify(line);
  } catch {
    return JSON.stringify({ ts: line.ts, level, msg, fields: String(fields) }); // a cycle or a BigInt
  }
}

function safeContext(): LogFields {
  try {
    return context() ?? {};
  } catch {
    return {};
  }
}

function errorFields(e: Error): LogFields {
  return { name: e.name, message: e.message, ...(e.stack ? { stack: e.stack } : {}) };
}

function write(level: LogLevel, msg: string, fields?: LogFields): void {
  if (logEnabled(level)) console.log(logLine(level, msg, fields));
}

/** Writes one line to standard output through the runtime's console. */
export const log = {
  debug: (msg: string, fields?: LogFields) => write("debug", msg, fields),
  info: (msg: string, fields?: LogFields) => write("info", msg, fields),
  warn: (msg: string, fields?: LogFields) => write("warn", msg, fields),
  error: (msg: string, fields?: LogFields) => write("error", msg, fields),
};
