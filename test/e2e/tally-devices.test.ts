// Every open client is a device of its own (the Tally protocol section 1, 7): two tabs of one browser
// profile and two Node processes in one folder, all with the default store, each receive and
// record every message; neither loses the other's writes.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, describe, expect, inject, it } from "vitest";
import { FileKeyValue } from "../../clients/node/file-key-value";
import { KeyValueTallyStore, type TallyClient } from "../../clients/tally/index";
import { bytesToHex } from "../../shared/encoding";
import { chromiumPath, launchChromium, NO_CHROMIUM_MESSAGE } from "../helpers/chromium";
import { harnessTab, tallyHarness } from "../helpers/tally-browser-pages";
import { device, newUser, wsBase } from "../helpers/tally";
import { waitFor } from "../helpers/wait";
import { sdkBundleIn } from "../helpers/sdk-bundle";

const relay = inject("relayUrl");
if (!chromiumPath) console.warn(`tally devices: ${NO_CHROMIUM_MESSAGE}`);
const open: TallyClient[] = [];
afterAll(() => {
  for (const c of open.splice(0)) c.close();
});

const N = 20;

/** Sends N notes from a fresh user to `to`; resolves once each was receipted. */
async function sendNotes(to: string): Promise<string[]> {
  const sender = await device(relay, newUser());
  open.push(sender);
  const ids: string[] = [];
  const receipted = new Set<string>();
  sender.on("receipt", (id) => void receipted.add(id));
  for (let i = 0; i < N; i++) ids.push(await sender.send(to, "note", { i }));
  await waitFor(() => ids.every((id) => receipted.has(id)), { what: "every receipt", timeout: 30_000 });
  return ids;
}

describe("1 every client is a device with its own store", () => {
  it("1 a user may run several clients, each a device: two Node processes in one folder with the default store each receive and record every message, no write lost", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tally-two-procs-"));
    const bundleDir = mkdtempSync(join(tmpdir(), "tally-bundle-"));
    await sdkBundleIn(bundleDir);
    const user = newUser();
    writeFileSync(
      join(bundleDir, "device.mjs"),
      `import { TallyClient } from "./tally.mjs";
const sk = Uint8Array.from(Buffer.from(process.argv[2], "hex"));
const c = new TallyClient({ relayUrl: process.argv[3], secretKey: sk });
const handled = [];
c.on("message", (m) => void handled.push(m.id));
await c.connect();
console.log("ready");
const n = Number(process.argv[4]);
const t = setInterval(async () => {
  const ledger = (await c.store.listLedger()).filter((e) => e.type === "note").length;
  if (handled.length >= n && ledger >= n) {
    clearInterval(t);
    c.close();
    console.log(JSON.stringify({ handled, ledger }));
    process.exit(0);
  }
}, 50);
`,
    );
    const run = () => {
      const child = spawn(process.execPath, [join(bundleDir, "device.mjs"), bytesToHex(user.secretKey), wsBase(relay), String(N)], {
        env: { ...process.env, TALLY_STORE_DIR: dir },
        stdio: ["ignore", "pipe", "inherit"],
      });
      let out = "";
      child.stdout.on("data", (d) => (out += d));
      const done = new Promise<{ handled: string[]; ledger: number }>((resolve, reject) => {
        child.on("exit", (code) =>
          code === 0 ? resolve(JSON.parse(out.trim().split("\n").at(-1)!)) : reject(new Error(`device exited ${code}: ${out}`)),
        );
      });
      return { ready: () => out.includes("ready"), done };
    };
    const p1 = run();
    const p2 = run();
    await waitFor(() => p1.ready() && p2.ready(), { what: "both processes registered", timeout: 20_000 });
    const ids = await sendNotes(user.npub);
    const [r1, r2] = await Promise.all([p1.done, p2.done]);
    expect([...r1.handled].sort()).toEqual([...ids].sort());
    expect([...r2.handled].sort()).toEqual([...ids].sort());
    // Two stores, each holding every entry after both processes ended, owner-only.
    const logs = readdirSync(dir)
      .filter((f) => f.endsWith(".log"))
      .sort();
    expect(logs).toEqual([`${user.npub}.1.log`, `${user.npub}.log`]);
    for (const f of logs) {
      expect(statSync(join(dir, f)).mode & 0o777).toBe(0o600);
      const notes = (await new KeyValueTallyStore(new FileKeyValue(join(dir, f))).listLedger())
        .filter((e) => e.type === "note")
        .map((e) => e.id);
      expect(notes.sort()).toEqual([...ids].sort());
    }
  });

  it.skipIf(!chromiumPath)(
    "1 two tabs are two devices: two clients with the default store in one Chromium profile each receive and record every message",
    async () => {
      const harness = await tallyHarness();
      const chrome = await launchChromium();
      try {
        const user = newUser();
        const tab = (): Promise<Page> => harnessTab(chrome, relay, harness, "defaultStoreDevice", user.secretKey);
        const t1 = await tab();
        const t2 = await tab();
        const ids = await sendNotes(user.npub);
        for (const t of [t1, t2]) {
          const handled = () => t.evaluate(() => (window as any).d.handled as string[]);
          await waitFor(async () => (await handled()).length >= N, { what: "every message in the tab", timeout: 20_000 });
          expect((await handled()).sort()).toEqual([...ids].sort());
          await waitFor(
            async () =>
              (await t.evaluate(() => (window as any).d.ledgerIds() as Promise<string[]>)).filter((id) => ids.includes(id)).length === N,
            { what: "every entry in the tab's ledger" },
          );
        }
      } finally {
        await chrome.close();
      }
    },
  );
});
