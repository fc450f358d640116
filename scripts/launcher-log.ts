// The launcher's output: one JSON object per line (`ts`, `level`, `msg`, then fields), the same
// shape as the Worker's own lines, so `npm start | jq .` parses every line. workerd's output passes
// through the launcher: a line that is already a JSON object (the Worker's) is written unchanged
// (with a `ts` put first when it has none), any other (workerd's own messages, an uncaught error's trace) is wrapped as
// {"ts","level","msg","source":"workerd"}.
// Runs under plain Node 22 (type stripping): erasable TypeScript only.
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";

export type LauncherLevel = "info" | "warn" | "error";

export function launcherLine(level: LauncherLevel, msg: string, fields: Record<string, unknown> = {}): string {
  const line: Record<string, unknown> = { ts: new Date().toISOString(), level, msg };
  for (const [k, v] of Object.entries(fields)) {
    if (k === "ts" || k === "level" || k === "msg") continue;
    line[k] = v instanceof Error ? { name: v.name, message: v.message } : v;
  }
  return JSON.stringify(line);
}

/** info to stdout; warn and error to stderr (as the Worker's console does). */
export const say = {
  info: (msg: string, fields?: Record<string, unknown>) => process.stdout.write(`${launcherLine("info", msg, fields)}\n`),
  warn: (msg: string, fields?: Record<string, unknown>) => process.stderr.write(`${launcherLine("warn", msg, fields)}\n`),
  error: (msg: string, fields?: Record<string, unknown>) => process.stderr.write(`${launcherLine("error", msg, fields)}\n`),
};

/** Whether a line is one JSON object (so it passes through as it is). */
export function isJsonObjectLine(line: string): boolean {
  const t = line.trim();
  if (!t.startsWith("{") || !t.endsWith("}")) return false;
  try {
    const v = JSON.parse(t);
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

/**
 * The line as the launcher writes it: a JSON object unchanged (given a `ts` first if it has
 * none: the time the launcher read it), any other line wrapped.
 */
export function passLine(line: string, level: LauncherLevel, source: string): string | null {
  if (line.trim() === "") return null;
  if (!isJsonObjectLine(line)) return launcherLine(level, line, { source });
  const t = line.trim();
  if (/^\{\s*"ts"\s*:/.test(t) || "ts" in JSON.parse(t)) return t;
  return t === "{}"
    ? JSON.stringify({ ts: new Date().toISOString() })
    : `{"ts":${JSON.stringify(new Date().toISOString())},${t.slice(1).trimStart()}`;
}

/** Copies `from` to `to` line by line through passLine; resolves when `from` ends. */
export function pipeLines(from: Readable, to: Writable, level: LauncherLevel, source: string): Promise<void> {
  return new Promise((resolveDone) => {
    const rl = createInterface({ input: from, crlfDelay: Infinity });
    rl.on("line", (line) => {
      const out = passLine(line, level, source);
      if (out !== null) to.write(`${out}\n`);
    });
    rl.on("close", () => resolveDone());
  });
}
