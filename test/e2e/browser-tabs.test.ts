import type { Page } from "playwright-core";
import { describe, expect, inject, it } from "vitest";
import type { TallyClient } from "../../clients/tally/index";
import { chromiumPath, launchChromium, NO_CHROMIUM_MESSAGE } from "../helpers/chromium";
import { harnessTab, tallyHarness } from "../helpers/tally-browser-pages";
import { device, newUser } from "../helpers/tally";
import { waitFor } from "../helpers/wait";

const relay = inject("relayUrl");
if (!chromiumPath) console.warn(`browser tabs: ${NO_CHROMIUM_MESSAGE}`);

type TabState = { leader: boolean; connected: boolean; handled: string[]; elsewhere: string[] };
const state = (t: Page): Promise<TabState> =>
  t.evaluate(() => {
    const d = (window as any).d;
    return { ...d.state(), handled: [...d.handled], elsewhere: [...d.elsewhere] };
  });

describe.skipIf(!chromiumPath)("tabs in Chromium", () => {
  it("one handler per user across tabs, with real Web Locks: the leader handles each message once, the other tab is told and sends through it, and leads once the leader's tab closes", async () => {
    const harness = await tallyHarness();
    const chrome = await launchChromium();
    const peers: TallyClient[] = [];
    try {
      const user = newUser();
      const tab = (): Promise<Page> => harnessTab(chrome, relay, harness, "tabDevice", user.secretKey);
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
