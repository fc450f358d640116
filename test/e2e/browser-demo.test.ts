// The browser side of the relay in headless Chromium (docs/browser.md). The demo page in two
// pages: the project's client bundled for the browser registers, sends through the relay, opens a
// WebRTC data channel by the relay's signaling, sends over it, and deduplicates the relay's copy.
// Then the operator's status page, drawn from the traffic the demo made.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Page } from "playwright-core";
import { STATS_LIMITS } from "../../shared/limits";
import type { StatsSnapshot } from "../../server/stats";
import { artifactPath, chromiumPath, launchChromium, NO_CHROMIUM_MESSAGE, type Chromium } from "../helpers/chromium";

const relay = inject("relayUrl");

if (!chromiumPath) console.warn(`browser demo: ${NO_CHROMIUM_MESSAGE}`);

interface Row {
  what: string;
  id: string;
  via: string;
  detail: string;
}

const demo = (page: Page) =>
  page.evaluate(() => (window as any).tallyDemo as { npub: string; status: string; channels: Record<string, string>; log: Row[] });
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

let chrome: Chromium;
let before: StatsSnapshot;

beforeAll(async () => {
  if (!chromiumPath) return;
  before = (await (await fetch(`${relay}/status.json`)).json()) as StatsSnapshot;
  chrome = await launchChromium();
});

afterAll(async () => {
  await chrome?.close();
});

describe.skipIf(!chromiumPath)("the demo page in Chromium (two users)", () => {
  let a: Page;
  let b: Page;
  let sentByRelay = "";
  let sentBoth = "";

  beforeAll(async () => {
    [a, b] = await Promise.all([chrome.context.newPage(), chrome.context.newPage()]);
    await Promise.all([a.goto(`${relay}/demo/`), b.goto(`${relay}/demo/`)]);
  });

  // The steps of docs/browser.md, in its order: open two tabs, paste each other's npub into Peer
  // in both, press Connect in one; then send through the relay, then over the channel and the relay.
  it("each page registers with the relay as its own user and device", async () => {
    for (const p of [a, b]) await until(p, "registered", async () => (await demo(p)).status === "registered");
    const [da, db] = [await demo(a), await demo(b)];
    expect(da.npub).toMatch(/^npub1/);
    expect(db.npub).not.toBe(da.npub);
    expect(await a.getByTestId("device").textContent()).toMatch(/^[0-9a-f]{16}$/);
  });

  it("pasting the npubs and pressing Connect in one page (no message sent before) opens a WebRTC data channel, one end polite", async () => {
    const [da, db] = [await demo(a), await demo(b)];
    await a.getByTestId("peer").fill(db.npub);
    await b.getByTestId("peer").fill(da.npub);
    await b.getByTestId("connect").click();
    // The envelope exchange the relay asks for before it introduces the devices: B's hello, A's receipt.
    const hello = await until(b, "hello sent", async () => (await rows(b, "sent")).find((r) => r.detail.startsWith("hello:")));
    await until(b, "hello receipt", async () => (await rows(b, "receipt", hello.id))[0]);
    for (const p of [a, b]) await until(p, "channel open", async () => (await p.getByTestId("channel").textContent()) === "open");
    const roles = [await a.getByTestId("role").textContent(), await b.getByTestId("role").textContent()];
    expect(roles.sort()).toEqual(["(impolite end)", "(polite end)"]);
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

  it("an envelope sent over the channel and the relay is applied once; the other copy is a dropped duplicate", async () => {
    await a.getByTestId("text").fill("hello over the data channel");
    await a.getByTestId("send-both").click();
    const sent = await until(a, "sent", async () => (await rows(a, "sent")).find((r) => r.id !== sentByRelay));
    expect(sent.via).toBe("direct+relay");
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

  it("a second device of the same user (the device link) is introduced by the relay and gets its own channel", async () => {
    const link = await a.locator("#device-link").getAttribute("href");
    const a2 = await chrome.context.newPage();
    await a2.goto(`${relay}/demo/${link}`);
    await until(a2, "registered", async () => (await demo(a2)).status === "registered");
    expect((await demo(a2)).npub).toBe((await demo(a)).npub);
    await until(a2, "channel open", async () => (await a2.getByTestId("channel").textContent()) === "open");
    await until(a, "two channels", async () => (await a.getByTestId("channel").textContent()) === "2 open");
    await a2.close();
  });
});

describe.skipIf(!chromiumPath)("the status page in Chromium", () => {
  const sum = (xs: number[]) => xs.reduce((x, y) => x + y, 0);

  it("shows the demo's live traffic as counts and charts, with the open-page banner", async () => {
    // The demo's two pages are still connected; their counts arrive within the flush interval.
    const deadline = Date.now() + STATS_LIMITS.flush_interval_ms * 5;
    let now: StatsSnapshot;
    for (;;) {
      now = (await (await fetch(`${relay}/status.json`)).json()) as StatsSnapshot;
      const deliveries = sum(now.per_minute.deliveries.by_protocol.tally) - sum(before.per_minute.deliveries.by_protocol.tally);
      // At least the demo's two pages (a shared relay may still count sockets of earlier files
      // that close later, so the figure is not compared with the one taken before).
      if (now.connections.tally >= 2 && deliveries >= 4) break;
      if (Date.now() > deadline) throw new Error(`counts did not arrive: ${JSON.stringify(now.connections)}, ${deliveries} deliveries`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const page = await chrome.context.newPage();
    await page.goto(`${relay}/status`);
    await expect(page.getByTestId("open-banner").isVisible()).resolves.toBe(true);
    const connections = Number(await page.locator('[data-testid="tile-connections"] .v').textContent());
    expect(connections).toBeGreaterThanOrEqual(2);
    const chart = page.getByTestId("chart-deliveries");
    expect(Number(await chart.getAttribute("data-total"))).toBeGreaterThanOrEqual(4);
    expect(await chart.locator("svg rect").count()).toBeGreaterThan(0);
    expect(await page.getByTestId("chart-messages").locator("svg rect").count()).toBeGreaterThan(0);
    await page.screenshot({ path: artifactPath("status-page.png"), fullPage: true });
  });
});
