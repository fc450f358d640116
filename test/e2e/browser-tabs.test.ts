// One handler per user across tabs (clients/tally/tabs.ts) in a real browser: two tabs of one
// Chromium profile with `tabs: "browser"` share the user's store through Web Locks and a
// BroadcastChannel, against the real relay. The leader alone connects and handles each message;
// the other tab hears of it, and what it sends goes out through the leader; when the leader's tab
// closes (the browser frees its lock), the other tab leads and handles what comes next.
import { join } from "node:path";
import { build } from "esbuild";
import type { Page } from "playwright-core";
import { describe, expect, inject, it } from "vitest";
import type { TallyClient } from "../../clients/tally/index";
import { bytesToHex } from "../../shared/encoding";
import { chromiumPath, launchChromium, NO_CHROMIUM_MESSAGE } from "../helpers/chromium";
import { device, newUser, wsBase } from "../helpers/tally";
import { waitFor } from "../helpers/wait";

const relay = inject("relayUrl");
const root = new URL("../../", import.meta.url).pathname;
if (!chromiumPath) console.warn(`browser tabs: ${NO_CHROMIUM_MESSAGE}`);

type TabState = { leader: boolean; connected: boolean; handled: string[]; elsewhere: string[] };
const state = (t: Page): Promise<TabState> =>
  t.evaluate(() => {
    const d = (window as any).d;
    return { ...d.state(), handled: [...d.handled], elsewhere: [...d.elsewhere] };
  });

describe.skipIf(!chromiumPath)("tabs in Chromium", () => {
  it("one handler per user across tabs, with real Web Locks: the leader handles each message once, the other tab is told and sends through it, and leads once the leader's tab closes", async () => {
    const harness = (
      await build({
        entryPoints: [join(root, "test/helpers/tally-browser.ts")],
        bundle: true,
        format: "iife",
        globalName: "tallyHarness",
        platform: "browser",
        write: false,
        logLevel: "warning",
      })
    ).outputFiles[0].text;
    const chrome = await launchChromium();
    const peers: TallyClient[] = [];
    try {
      const user = newUser();
      const tab = async (): Promise<Page> => {
        const page = await chrome.context.newPage();
        page.on("pageerror", (e) => console.log(`tab error: ${e.message}`));
        await page.goto(`${relay}/healthz`);
        await page.addScriptTag({ content: harness });
        await page.evaluate(
          async ([url, sk]) => {
            (window as any).d = await (window as any).tallyHarness.tabDevice(url, sk);
          },
          [wsBase(relay), bytesToHex(user.secretKey)] as const,
        );
        return page;
      };
      const t1 = await tab();
      await waitFor(async () => (await state(t1)).connected, { what: "the first tab leads and registers" });
      const t2 = await tab();
      expect(await state(t2)).toMatchObject({ leader: false, connected: false });

      const peer = await device(relay, newUser());
      peers.push(peer);
      const results = new Map<string, unknown>();
      peer.on("receipt", (id, result) => void results.set(id, result));
      const first = [await peer.send(user.npub, "note", { n: 1 }), await peer.send(user.npub, "note", { n: 2 })];
      await waitFor(() => first.every((id) => results.has(id)), { what: "receipts from the leader" });
      await waitFor(async () => (await state(t2)).elsewhere.length === 2, { what: "the other tab told" });
      expect((await state(t1)).handled).toEqual(first);
      expect((await state(t2)).handled).toEqual([]);
      expect((await state(t2)).elsewhere).toEqual(first);

      // The follower's send goes out from the leader; its receipt comes back to the follower.
      const atPeer: string[] = [];
      peer.on("message", (m) => {
        atPeer.push(m.id);
        return "read";
      });
      const sent = await t2.evaluate((to) => (window as any).d.send(to, "from the second tab"), peer.npub);
      expect(sent.result).toBe("read");
      expect(atPeer).toEqual([sent.id]);

      // The leader's tab closes: the browser frees its lock, the other tab leads and registers.
      await t1.close();
      await waitFor(async () => (await state(t2)).connected, { what: "the second tab leads", timeout: 20_000 });
      expect((await state(t2)).leader).toBe(true);
      const next = await peer.send(user.npub, "note", { n: 3 });
      await waitFor(() => results.has(next), { what: "the new leader's receipt" });
      expect((await state(t2)).handled).toEqual([next]);
    } finally {
      for (const p of peers) await p.close();
      await chrome.close();
    }
  });
});
