// The Tally client's WebRTC rules in headless Chromium, against the running relay: the remote
// allowance closes a connection still negotiating (12.8), a self-peer channel that opens starts
// sync with a sync_hello on it (13.6), and a channel that drops is re-paired (13.1).
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Page } from "playwright-core";
import { bytesToHex } from "../../shared/encoding";
import { chromiumPath, launchChromium, NO_CHROMIUM_MESSAGE, type Chromium } from "../helpers/chromium";
import { tallyHarness } from "../helpers/tally-browser-pages";
import { device, exchange, newUser, wsBase, type User } from "../helpers/tally";
import type { TallyClient } from "../../clients/tally/index";

const relay = inject("relayUrl");
if (!chromiumPath) console.warn(`tally webrtc: ${NO_CHROMIUM_MESSAGE}`);

let chrome: Chromium;
let harness = "";
const nodeClients: TallyClient[] = [];

beforeAll(async () => {
  if (!chromiumPath) return;
  harness = await tallyHarness();
  chrome = await launchChromium();
});

afterAll(async () => {
  for (const c of nodeClients) c.close();
  await chrome?.close();
});

/** A page running the harness as `user`; its state on window.h. */
async function pageFor(user: User, allowanceMs?: number): Promise<Page> {
  const page = await chrome.context.newPage();
  await page.goto(`${relay}/healthz`);
  await page.addScriptTag({ content: harness });
  await page.evaluate(
    async ([url, sk, ms]) => {
      (window as any).h = await (window as any).tallyHarness.start(url, sk, ms ?? undefined);
    },
    [wsBase(relay), bytesToHex(user.secretKey), allowanceMs ?? null] as const,
  );
  return page;
}

const log = (p: Page) => p.evaluate(() => (window as any).h.log as { states: string[][]; sync: string[][]; dropped: string[] });

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeout = 30_000): Promise<T> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(!chromiumPath)("the client's store in Chromium", () => {
  it("default persistent store: in a browser a client with no store keeps its outbox in IndexedDB", async () => {
    const page = await chrome.context.newPage();
    await page.goto(`${relay}/healthz`);
    await page.addScriptTag({ content: harness });
    const r = await page.evaluate(([sk, peer]) => (window as any).tallyHarness.defaultStoreRoundTrip(sk, peer), [
      bytesToHex(newUser().secretKey),
      newUser().npub,
    ] as const);
    expect(r.seen).toEqual([r.sent]);
    expect(r.kind).toBe("IndexedDbKeyValue");
    await page.close();
  });
});

describe.skipIf(!chromiumPath)("WebRTC direct channels in Chromium", () => {
  it("12.8 allowance expiry closes every connection to the unknown peer in every state: a WebRTC connection still negotiating is closed", async () => {
    const alice = newUser();
    const mallory = newUser();
    const page = await pageFor(alice, 1_500);
    // Mallory (no WebRTC: it never answers the offer) makes itself known and asks for alice.
    const m = await device(relay, mallory);
    nodeClients.push(m);
    await exchange(m, alice.npub);
    m.connectPeer(alice.npub);
    const connecting = await until("a connection to mallory negotiating", async () =>
      (await log(page)).states.find(([u, , s]) => u === mallory.npub && s === "connecting"),
    );
    await until("peer_dropped", async () => (await log(page)).dropped.includes(mallory.npub));
    const states = (await log(page)).states.filter(([u, d]) => u === mallory.npub && d === connecting[1]).map(([, , s]) => s);
    expect(states).toEqual(["connecting", "closed"]);
    expect(await page.evaluate(([u, d]) => (window as any).h.mesh.state(u, d) ?? "none", [mallory.npub, connecting[1]])).toBe("none");
    await page.close();
  });

  it("13.6 sync_hello when a self-peer channel opens, and 13.1 re-pairing by connect_peer when it drops unexpectedly", async () => {
    const alice = newUser();
    const p1 = await pageFor(alice);
    const p2 = await pageFor(alice);
    const opened = (p: Page) =>
      until("self channel open", async () => (await log(p)).states.filter(([u, , s]) => u === alice.npub && s === "open").length);
    await opened(p1);
    await opened(p2);
    // 13.6: each end sent a sync_hello over the channel as soon as it opened.
    await until("a sync_hello over the channel", async () =>
      (await log(p2)).sync.some(([t, via]) => t === "sync_hello" && via === "direct"),
    );
    await until("a sync_hello over the channel", async () =>
      (await log(p1)).sync.some(([t, via]) => t === "sync_hello" && via === "direct"),
    );
    // 13.1: the data channel goes away while both devices stay online: a new channel opens.
    await p1.evaluate(() => {
      for (const peer of (window as any).h.mesh.peers.values()) peer.pc.close();
    });
    await until("re-paired", async () => (await log(p1)).states.filter(([u, , s]) => u === alice.npub && s === "open").length >= 2);
    await until(
      "re-paired on the other end",
      async () => (await log(p2)).states.filter(([u, , s]) => u === alice.npub && s === "open").length >= 2,
    );
    await p1.close();
    await p2.close();
  });
});
