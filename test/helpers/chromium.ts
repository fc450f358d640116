// Headless Chromium for end-to-end tests (Debian's `chromium` package, driven by playwright-core):
// a fresh profile, no sandbox (containers), and flags that keep it off the network. Tests skip,
// saying why, when no Chromium binary exists.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";

const CANDIDATES = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"];

/** The Chromium binary, or undefined when there is none. */
export const chromiumPath: string | undefined = CANDIDATES.find((p): p is string => !!p && existsSync(p));

export const NO_CHROMIUM_MESSAGE =
  "skipped: no Chromium binary (looked for $CHROMIUM_PATH, /usr/bin/chromium, /usr/bin/chromium-browser); " +
  "install it with `apt-get install -y chromium` (.ci/run does)";

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  // WebRTC host candidates as plain addresses rather than mDNS names: no multicast name
  // resolution on the network, and no test that depends on it.
  "--disable-features=WebRtcHideLocalIpsWithMdns",
];

export interface Chromium {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Launches Chromium with a fresh profile directory (removed on close). */
export async function launchChromium(): Promise<Chromium> {
  if (!chromiumPath) throw new Error(NO_CHROMIUM_MESSAGE);
  const profile = mkdtempSync(join(tmpdir(), "chromium-profile-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1000, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Where tests put their artifacts (screenshots); gitignored. */
export function artifactPath(name: string): string {
  const dir = new URL("../../test-results/", import.meta.url).pathname;
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}
