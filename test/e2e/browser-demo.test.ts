// The demo page in two headless Chromium pages against the running relay (docs/browser.md):
// the project's client bundled for the browser registers, sends through the relay, opens a
// WebRTC data channel by the relay's signaling, sends over it, and deduplicates the relay's copy.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Page } from "playwright-core";
import { artifactPath, chromiumPath, launchChromium, NO_CHROMIUM_MESSAGE, type Chromium } from "../helpers/chromium";

const relay = inject("relayUrl");

if (!chromiumPath) console.warn(`browser demo: ${NO_CHROMIUM_MESSAGE}`);

interface Row {
  what: string;
  id: string;
  via: string;
  detail: string;
}

const demo = (page: Page) => page.evaluate(() => (window as any).tallyDemo as { npub: string; status: string; channels: Record<string, string>; log: Row[] });
const rows = async (page: Page, what: string, id?: string) =>
  (await demo(page)).log.filter((r) => r.what === what && (id === undefined || r.id === id));

async function until<T>(page: Page, what: string, fn: () => Promise<T | undefined | false>, timeout = 30_000): Promise<T> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) {
      await page.screenshot({ path: artifactPath("browser-demo-timeout.png"), fullPage: true }).catch(() => {});
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(!chromiumPath)("the demo page in Chromium (two users)", () => {
  let chrome: Chromium;
  let a: Page;
  let b: Page;
  let sentByRelay = "";
  let sentBoth = "";

  beforeAll(async () => {
    chrome = await launchChromium();
    [a, b] = await Promise.all([chrome.context.newPage(), chrome.context.newPage()]);
    await Promise.all([a.goto(`${relay}/demo/`), b.goto(`${relay}/demo/`)]);
  });

  afterAll(async () => {
    await chrome?.close();
  });

  it("each page registers with the relay as its own user and device", async () => {
    for (const p of [a, b]) await until(p, "registered", async () => (await demo(p)).status === "registered");
    const [da, db] = [await demo(a), await demo(b)];
    expect(da.npub).toMatch(/^npub1/);
    expect(db.npub).not.toBe(da.npub);
    expect(await a.getByTestId("device").textContent()).toMatch(/^[0-9a-f]{16}$/);
    await a.getByTestId("peer").fill(db.npub);
    await b.getByTestId("peer").fill(da.npub);
  });

  it("an envelope sent through the relay is applied by the peer, and its receipt comes back", async () => {
    await a.getByTestId("text").fill("hello through the relay");
    await a.getByTestId("send-relay").click();
    const sent = await until(a, "sent", async () => (await rows(a, "sent"))[0]);
    sentByRelay = sent.id;
    const applied = await until(b, "applied", async () => (await rows(b, "applied", sent.id))[0]);
    expect(applied).toMatchObject({ via: "relay", detail: "chat: hello through the relay" });
    const receipt = await until(a, "receipt", async () => (await rows(a, "receipt", sent.id))[0]);
    expect(receipt.detail).toBe("processed");
  });

  it("Connect opens a WebRTC data channel by the relay's signaling, one end polite", async () => {
    await b.getByTestId("connect").click();
    for (const p of [a, b]) await until(p, "channel open", async () => (await p.getByTestId("channel").textContent()) === "open");
    const roles = [await a.getByTestId("role").textContent(), await b.getByTestId("role").textContent()];
    expect(roles.sort()).toEqual(["(impolite end)", "(polite end)"]);
  });

  it("an envelope sent over the channel and the relay is applied once; the other copy is a dropped duplicate", async () => {
    await a.getByTestId("text").fill("hello over the data channel");
    await a.getByTestId("send-both").click();
    const sent = await until(a, "sent", async () => (await rows(a, "sent")).find((r) => r.id !== sentByRelay));
    sentBoth = sent.id;
    const applied = await until(b, "applied", async () => (await rows(b, "applied", sentBoth))[0]);
    const dup = await until(b, "duplicate", async () => (await rows(b, "duplicate", sentBoth))[0]);
    expect(applied.detail).toBe("chat: hello over the data channel");
    expect([applied.via, dup.via].sort()).toEqual(["direct", "relay"]);
    expect(await rows(b, "applied", sentBoth)).toHaveLength(1);
    await until(a, "receipt", async () => (await rows(a, "receipt", sentBoth)).length > 0);
    await a.bringToFront();
    await a.screenshot({ path: artifactPath("browser-demo-sender.png"), fullPage: true });
    await b.screenshot({ path: artifactPath("browser-demo-receiver.png"), fullPage: true });
  });
});
