// The relay's log lines: one JSON object per line, so Workers Logs (wrangler.toml
// [observability]) indexes each field and a self-hosted operator can read them with jq. Every
// line has `level` and `msg`; the Worker adds `request_id` (workers/app.ts), objects add what
// names the event (never a user id, topic or room id: the same rule as the status counts).
export type LogLevel = "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

export function logLine(level: LogLevel, msg: string, fields: LogFields = {}): string {
  const line: LogFields = { level, msg };
  for (const [k, v] of Object.entries(fields)) line[k] = v instanceof Error ? errorFields(v) : v;
  try {
    return JSON.stringify(line);
  } catch {
    return JSON.stringify({ level, msg, fields: String(fields) }); // a cycle or a BigInt
  }
}

function errorFields(e: Error): LogFields {
  return { name: e.name, message: e.message, ...(e.stack ? { stack: e.stack } : {}) };
}

/** Writes one line through the runtime's console (stderr for warn and error). */
export const log = {
  info: (msg: string, fields?: LogFields) => console.log(logLine("info", msg, fields)),
  warn: (msg: string, fields?: LogFields) => console.warn(logLine("warn", msg, fields)),
  error: (msg: string, fields?: LogFields) => console.error(logLine("error", msg, fields)),
};
