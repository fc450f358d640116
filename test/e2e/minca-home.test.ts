// Trying connect-by-code end to end, as a newcomer does: `npm run connect` (the bundled CLI, on
// the system's Node) against the relay's own Minca home page (/connect/) in headless Chromium.
// The program prints a link; the person opens it at the home, reads the check there, types it
// into the program, and allows; the program saves a grant from the account the page holds.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { checkGrant } from "../../clients/minca/protocol/grant";
import { p256KeyFromJwk } from "../../shared/minca/es256";
import { chromiumPath, launchChromium, NO_CHROMIUM_MESSAGE, type Chromium } from "../helpers/chromium";
import { waitFor } from "../helpers/wait";

const relay = inject("relayUrl"); // http://127.0.0.1:PORT: the relay is also the home's origin
const root = new URL("../../", import.meta.url).pathname;
const systemNode = ["/usr/bin/node", "/usr/local/bin/node"].find((p) => existsSync(p)) ?? process.execPath;

if (!chromiumPath) console.warn(`minca home: ${NO_CHROMIUM_MESSAGE}`);

let chrome: Chromium | undefined;
beforeAll(async () => {
  execFileSync(process.execPath, ["scripts/build-sdk.ts", "--cli"], { cwd: root });
  if (chromiumPath) chrome = await launchChromium();
});
afterAll(() => chrome?.close());

describe("the relay's Minca home page and npm run connect", () => {
  it("the Minca protocol §3 end to end: the program connects to the account the page holds, after the check the page shows is typed", async (ctx) => {
    if (!chrome) return ctx.skip(NO_CHROMIUM_MESSAGE);
    const page = await chrome.context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    // The account the home holds (made on the first visit, kept in the browser).
    await page.goto(`${relay}/connect/`);
    const did = await waitFor(() => page.evaluate(() => (window as any).mincaHome?.did as string), { what: "the account" });
    await page.fill("[data-testid=name]", "Leif's home");
    await page.dispatchEvent("[data-testid=name]", "change");

    const out = join(mkdtempSync(join(tmpdir(), "minca-home-")), "grant.json");
    const child = spawn(systemNode, [join(root, "dist/sdk/connect.mjs"), relay, "--relay", relay, "--name", "e2e terminal", "--out", out], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stdout += d));
    const exited = new Promise<number>((r) => child.on("exit", (code) => r(code ?? -1)));
    try {
      const link = (await waitFor(() => /Open this link to connect: (\S+)/.exec(stdout)?.[1], { what: "the link", timeout: 20_000 }))!;
      expect(link.startsWith(`${relay}/connect#mc_`)).toBe(true);

      // The person opens the link in the browser that holds the account.
      await page.goto(link);
      await page.waitForSelector("[data-testid=ask]:not([hidden])", { timeout: 20_000 });
      expect(await page.textContent("[data-testid=ask-name]")).toBe("e2e terminal");
      expect(page.url()).not.toContain("mc_"); // the spent code leaves the address bar
      const check = (await page.textContent("[data-testid=check]"))!;
      expect(check).toMatch(/^\d{6}$/);
      await waitFor(() => stdout.includes("type the six digits"), { what: "the program's prompt" });
      child.stdin.write(`${check}\n`);
      await page.click("[data-testid=allow]");

      expect(await exited).toBe(0);
      await page.waitForFunction(() => (window as any).mincaHome.outcome?.status === "done", null, { timeout: 20_000 });
      expect(await page.textContent("[data-testid=result]")).toContain("Connected");
      expect(stdout).toContain(`Connected to Leif's home (${did})`);

      const saved = JSON.parse(readFileSync(out, "utf8"));
      const key = await p256KeyFromJwk(saved.key);
      expect(await checkGrant(saved.grant, { audience: key.did, recordsOnly: true })).toMatchObject({ ok: true });
      expect(saved.grant).toMatchObject({ did, home: `${relay}/connect` });
      expect(errors).toEqual([]);
    } finally {
      child.kill();
    }
  });
});
