// The protected status page opened in a real browser (Chromium): with ADMIN_TOKEN set, the relay
// shows a login form; a wrong token says so, the right one shows the page, and the session cookie
// keeps it open on the next visit.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumPath, launchChromium, NO_CHROMIUM_MESSAGE, type Chromium } from "../helpers/chromium";
import { startRelay, type RelayProcess } from "../helpers/relay-process";

const TOKEN = "e2e-operator-token";
let relay: RelayProcess;
let chrome: Chromium | undefined;

if (!chromiumPath) console.warn(`status login: ${NO_CHROMIUM_MESSAGE}`);

beforeAll(async () => {
  if (!chromiumPath) return;
  relay = await startRelay({ env: { ADMIN_TOKEN: TOKEN } });
  chrome = await launchChromium();
});

afterAll(async () => {
  await chrome?.close();
  await relay?.stop();
});

describe.skipIf(!chromiumPath)("the protected status page in Chromium", () => {
  it("a browser logs in with the admin token through the form and sees /status; the cookie is HttpOnly and SameSite=Strict", async () => {
    const page = await chrome!.context.newPage();
    await page.goto(`${relay.url}/status`);
    await page.fill('input[name="token"]', "not-the-token");
    await Promise.all([page.waitForLoadState(), page.click('button[type="submit"]')]);
    expect(await page.textContent('[role="alert"]')).toContain("not this relay's admin token");
    await page.fill('input[name="token"]', TOKEN);
    await Promise.all([page.waitForURL(`${relay.url}/status`), page.click('button[type="submit"]')]);
    expect(await page.textContent("h1")).toBe("Relay status");
    const cookie = (await chrome!.context.cookies(relay.url)).find((c) => c.name === "relay_status");
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    expect(cookie!.value).not.toContain(TOKEN);
    const again = await chrome!.context.newPage();
    await again.goto(`${relay.url}/status`);
    expect(await again.textContent("h1")).toBe("Relay status");
  });
});
