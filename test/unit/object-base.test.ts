// "Finish the base": what every object keeps in `meta` goes through the base's Meta (typed keys),
// the tombstone's keys are listed once, an object deletes all it keeps only with the base's
// wipe(), and sets its alarm only through the base (wakeAt, alarmAt, onAlarm's answer).
import { readFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { sourceFiles } from "../helpers/source-files";
import type { Meta } from "../../durable-objects/base/meta";
import { TOMBSTONE_KEYS, type AccountMetaKey } from "../../durable-objects/minca-host/account-meta";

const root = resolve(import.meta.dirname, "../..");
const files = sourceFiles(resolve(root, "durable-objects"), /\.ts$/).map((path) => ({
  path: relative(root, path).split("\\").join("/"),
  text: readFileSync(path, "utf8"),
}));
const matching = (re: RegExp) => files.filter((f) => re.test(f.text)).map((f) => f.path);

describe("the object base", () => {
  it("meta keys are typed: a key a class does not name is a type error", () => {
    const check = (meta: Meta<AccountMetaKey>) => {
      meta.get("carry_space");
      meta.get("lease_bytes"); // the base's own keys are every class's
      // @ts-expect-error a key MincaAccount does not keep
      meta.get("closed_spaces");
      // @ts-expect-error a key MincaAccount does not keep
      meta.set("binding", "1");
    };
    expect(typeof check).toBe("function");
  });

  it("no module but base/meta.ts reads or writes the meta table with its own SQL", () => {
    expect(matching(/(FROM|INTO|UPDATE)\s+meta\b/)).toEqual(["durable-objects/base/meta.ts"]);
  });

  it("the tombstone's keys are listed once (account-meta.ts)", () => {
    expect(TOMBSTONE_KEYS).toEqual(["closed_at", "closed_space", "closed_read_key"]);
    const listing = files.filter((f) => f.path !== "durable-objects/minca-host/account-meta.ts" && /IN \('closed_|\["closed_/.test(f.text));
    expect(listing.map((f) => f.path)).toEqual([]);
  });

  it("an object deletes all it keeps only with the base's wipe() (release, delete, forget)", () => {
    expect(matching(/storage\.deleteAll\(|\.releaseAll\(|lease\.forget\(/)).toEqual(["durable-objects/base/stored-object.ts"]);
  });

  it("an object sets its alarm only through the base (wakeAt, alarmAt, onAlarm's answer)", () => {
    expect(matching(/storage\.setAlarm\(|storage\.deleteAlarm\(/).sort()).toEqual(["durable-objects/base/stored-object.ts"]);
  });

  it('no object keeps a timer after a burst: no module under durable-objects/ calls setTimeout or setInterval but the documented allow-list (docs/objects.md, "Deferred work")', () => {
    // Each entry is a timer that lives only while something outside holds the object up anyway:
    const allowed = [
      "durable-objects/base/unauthenticated.ts", // the auth timeout of a socket not yet authenticated (common.auth_timeout_seconds; its object stores nothing, so it may set no alarm)
      "durable-objects/base/waiters.ts", // a long-poll's end: the request it answers is open (and billed) meanwhile
    ];
    expect(matching(/\bset(Timeout|Interval)\s*\(/).sort()).toEqual(allowed);
  });
});
