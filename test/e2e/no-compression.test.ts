// The relay never negotiates WebSocket compression (docs/operating.md, "Idle costs nothing"): every
// frame it carries is encrypted, and a compression context costs about a quarter of a megabyte per
// socket for the socket's life. A client that offers permessage-deflate (the `ws` package does by
// default, and so does every browser) gets a socket without it, on every WebSocket endpoint.
import { describe, expect, inject, it } from "vitest";
import WebSocket from "ws";
import { chromiumPath, launchChromium, NO_CHROMIUM_MESSAGE } from "../helpers/chromium";
import { newUser } from "../helpers/tally";

const base = inject("relayUrl").replace(/^http/, "ws");

const ENDPOINTS: Record<string, string> = {
  tally: `/tally/v1/${newUser().npub}`,
  passnote: `/passnote/v2/${"A".repeat(43)}`,
  minca: `/minca/v1/rooms/b${"a".repeat(52)}`,
};

/** Opens a socket offering permessage-deflate; the extensions the relay answered. */
function negotiated(path: string): Promise<{ extensions: string; header: string | undefined }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base}${path}`, { perMessageDeflate: true });
    let header: string | undefined;
    ws.on("upgrade", (res) => (header = res.headers["sec-websocket-extensions"] as string | undefined));
    ws.on("open", () => {
      resolve({ extensions: ws.extensions, header });
      ws.close();
    });
    ws.on("error", reject);
  });
}

describe("no WebSocket compression", () => {
  for (const [protocol, path] of Object.entries(ENDPOINTS)) {
    it(`no_web_socket_compression: ${protocol}: a ws client offering permessage-deflate gets a socket without it`, async () => {
      expect(await negotiated(path)).toEqual({ extensions: "", header: undefined });
    });
  }

  it.skipIf(!chromiumPath)(
    `no_web_socket_compression: Chromium's sockets are not compressed on any endpoint ${chromiumPath ? "" : NO_CHROMIUM_MESSAGE}`,
    async () => {
      const browser = await launchChromium();
      try {
        const page = await browser.context.newPage();
        const answers = await page.evaluate(
          (urls) =>
            Promise.all(
              urls.map(
                (url) =>
                  new Promise<string>((resolve, reject) => {
                    const ws = new globalThis.WebSocket(url);
                    ws.onopen = () => {
                      resolve(ws.extensions);
                      ws.close();
                    };
                    ws.onerror = () => reject(new Error(`no socket to ${url}`));
                  }),
              ),
            ),
          Object.values(ENDPOINTS).map((p) => `${base}${p}`),
        );
        expect(answers).toEqual(Object.values(ENDPOINTS).map(() => ""));
      } finally {
        await browser.close();
      }
    },
  );
});
