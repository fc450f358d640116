// Pages that run the Tally browser harness (test/helpers/tally-browser.ts) in Chromium, for the
// e2e tests of the SDK in a browser: the harness bundled once, and a tab that runs one of its
// device factories as a user, its device on `window.d`.
import { build } from "esbuild";
import type { Page } from "playwright-core";
import { bytesToHex } from "../../shared/encoding";
import type { Chromium } from "./chromium";
import { wsBase } from "./tally";

/** test/helpers/tally-browser.ts bundled for a page: it defines `window.tallyHarness`. */
export async function tallyHarness(): Promise<string> {
  const out = await build({
    entryPoints: [new URL("./tally-browser.ts", import.meta.url).pathname],
    bundle: true,
    format: "iife",
    globalName: "tallyHarness",
    platform: "browser",
    write: false,
    logLevel: "warning",
  });
  return out.outputFiles[0]!.text;
}

/**
 * A new tab of `chrome` on the relay's origin, running the harness's `factory` (a device maker of
 * tally-browser.ts taking the relay's WebSocket base and the user's secret key) as `window.d`.
 */
export async function harnessTab(
  chrome: Chromium,
  relayUrl: string,
  harness: string,
  factory: "tabDevice" | "defaultStoreDevice",
  secretKey: Uint8Array,
): Promise<Page> {
  const page = await chrome.context.newPage();
  page.on("pageerror", (e) => console.log(`tab error: ${e.message}`));
  await page.goto(`${relayUrl}/healthz`);
  await page.addScriptTag({ content: harness });
  await page.evaluate(
    async ([name, url, sk]) => {
      const w = window as unknown as { d: unknown; tallyHarness: Record<string, (url: string, sk: string) => Promise<unknown>> };
      w.d = await w.tallyHarness[name]!(url, sk);
    },
    [factory, wsBase(relayUrl), bytesToHex(secretKey)] as const,
  );
  return page;
}
