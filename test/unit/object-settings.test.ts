// "Settings reach the objects parsed": the relay's settings are parsed once, by the settings
// module (server/settings.ts), and the objects take them from durable-objects/base/object-settings.ts
// (the base's `settings`); no file under durable-objects/ or server/ (the objects' helpers: the
// relay's keys, the objects by name) reads a setting from the environment, nor parses one itself.
import { readFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { sourceFiles } from "../helpers/source-files";

const root = resolve(import.meta.dirname, "../..");
const read = (path: string) => readFileSync(resolve(root, path), "utf8");

/** Every setting's name: the string [vars] wrangler types generated, and the optional secrets of env.d.ts. */
const SETTINGS = [
  ...[...read("worker-configuration.d.ts").matchAll(/^\s+([A-Z][A-Z0-9_]*): string;$/gm)].map((m) => m[1]),
  ...[...read("env.d.ts").matchAll(/^\s+([A-Z][A-Z0-9_]*)\?: string;$/gm)].map((m) => m[1]),
];
/**
 * The pure parsers the settings module is built from (relay-only, so they live under server/ since
 * shared/ holds only what both sides run): each takes a setting's text as an argument and is
 * called by server/settings.ts, never given the environment by an object. server/log.ts reads
 * LOG_LEVEL from the process environment where there is one (Node: the launcher, scripts), and
 * is told the Worker's parsed level otherwise.
 */
const SETTING_PARSERS = [
  "server/log.ts",
  "server/minca/admission.ts",
  "server/public-url.ts",
  "server/tally/relay-url.ts",
  "server/webpush/endpoint.ts",
  "server/webpush/vapid.ts",
];
const files = ["durable-objects", "server"]
  .flatMap((dir) => sourceFiles(resolve(root, dir), /\.ts$/))
  .map((path) => ({
    path: relative(root, path).split("\\").join("/"),
    text: readFileSync(path, "utf8"),
  }))
  .filter((f) => !SETTING_PARSERS.includes(f.path));

describe("settings reach the objects parsed", () => {
  it("the settings' own parsers exist where the list names them (a moved or renamed one is looked at again)", () => {
    for (const p of SETTING_PARSERS) expect(() => read(p), p).not.toThrow();
  });

  it("the list of settings is read from the type declarations", () => {
    expect(SETTINGS).toEqual(expect.arrayContaining(["PUBLIC_URL", "PUSH_ENDPOINT_ALLOW", "STORAGE_TALLY_BYTES", "VAPID_PRIVATE_KEY"]));
  });

  it("no file under durable-objects/ or server/ reads a raw env var (the VAPID and host keys included) but the settings module", () => {
    const raw = new RegExp(`\\benv\\??\\.(${SETTINGS.join("|")})\\b`);
    expect(files.filter((f) => f.path !== "server/settings.ts" && raw.test(f.text)).map((f) => f.path)).toEqual([]);
  });

  it("no file under durable-objects/ or server/ parses a setting from the environment but base/object-settings.ts and the settings module", () => {
    const parsing = /\b(storageTotals|endpointPolicy|settingsOf|parseSettings|parsePublicUrl|parseEndpointAllow|vapidSubjectFor)\(/;
    expect(files.filter((f) => parsing.test(f.text)).map((f) => f.path)).toEqual([
      "durable-objects/base/object-settings.ts",
      "server/settings.ts",
    ]);
  });
});
