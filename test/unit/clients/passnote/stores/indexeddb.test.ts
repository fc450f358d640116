// The IndexedDB store runs the store contract inside headless Chromium (a page served at a
// loopback origin by request interception: a secure context, with IndexedDB and WebCrypto).
import { build } from "esbuild";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumPath, launchChromium, NO_CHROMIUM_MESSAGE, type Chromium } from "../../../../helpers/chromium";
import { storeContract, type StoreInstance } from "../../../../helpers/passnote-store-contract";

let chrome: Chromium | undefined;
let page: Page;

beforeAll(async () => {
  if (!chromiumPath) return;
  const out = await build({
    entryPoints: [new URL("../../../../helpers/passnote-store-browser.ts", import.meta.url).pathname],
    bundle: true,
    format: "iife",
    globalName: "storeHarness",
    platform: "browser",
    write: false,
    logLevel: "warning",
  });
  chrome = await launchChromium();
  page = await chrome.context.newPage();
  await page.route("http://localhost:9/passnote-store/**", (route) =>
    route.fulfill({ contentType: "text/html", body: "<!doctype html><title>store</title>" }),
  );
  await page.goto("http://localhost:9/passnote-store/");
  await page.addScriptTag({ content: out.outputFiles[0].text });
}, 60_000);

afterAll(async () => {
  await chrome?.close();
});

function remote(id: number): StoreInstance {
  const call =
    (method: keyof StoreInstance) =>
    (...args: unknown[]) =>
      page.evaluate(([i, m, a]) => (window as any).storeHarness.call(i, m, a), [id, method, args] as const) as Promise<never>;
  return {
    inst: call("inst"),
    merge: call("merge"),
    saveKeys: call("saveKeys"),
    flushed: call("flushed"),
    dump: call("dump"),
    close: call("close"),
  };
}

describe.skipIf(!chromiumPath)(`IndexedDB under Chromium${chromiumPath ? "" : ` (${NO_CHROMIUM_MESSAGE})`}`, () => {
  storeContract("IndexedDB", () => ({
    persistent: true,
    open: async (name) => remote(await page.evaluate((n) => (window as any).storeHarness.open(n), name)),
    rawContains: (name, hex) => page.evaluate(([n, h]) => (window as any).storeHarness.rawContains(n, h), [name, hex] as const),
  }));
});

describe.skipIf(!chromiumPath)("IndexedDB under Chromium: the peer on reopen", () => {
  it("the peer restores everything it needs on open: records, its keys, and a clock past every HLC it held", async () => {
    const r = await page.evaluate((n) => (window as any).storeHarness.peerRestart(n), `peer-${Date.now()}`);
    expect(r).toEqual({ value: { text: "kept" }, sameDevice: true, owner: true, newInst: true, clockPassed: true });
  });
});

describe.skipIf(!chromiumPath)("IndexedDB under Chromium: keys first", () => {
  it("keys first in IndexedDB: while a device's first writes are not yet durable, no read of the database finds records without the keys (the keys' seal is asynchronous, and slow here)", async () => {
    const r = await page.evaluate((n) => (window as any).storeHarness.keysFirst(n), `keys-first-${Date.now()}`);
    expect(r.reads).toBeGreaterThan(0);
    expect(r.recordsWithoutKeys).toBe(0);
    expect(r).toMatchObject({ records: 4, keys: true }); // the roster's record and three notes
  });
});

describe.skipIf(!chromiumPath)("IndexedDB under Chromium: values stay in the database", () => {
  it("values stay in the database: after open the IndexedDB store holds no value in memory, and a peer on it still syncs every record to another peer (reads awaited)", async () => {
    const r = await page.evaluate((n) => (window as any).storeHarness.valuesOnDemand(n), `on-demand-${Date.now()}`);
    expect(r).toEqual({
      written: 300,
      heldAfterOpen: 0,
      heldAfterSync: 0,
      synced: 300,
      readByOther: { i: 1, text: "note 1" },
      readBack: { i: 0, text: "note 0" },
    });
  }, 60_000);
});
