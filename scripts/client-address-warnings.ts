// What `npm start` says loudly at start about the client address its rate limits key on
// (docs/hostile.md, "The client address", "Shared mode"). Runs under plain Node 22 (type
// stripping): erasable TypeScript only.
//
// - Public (PUBLIC_URL set, or listening beyond loopback) without TRUSTED_PROXY_HEADER: the relay
//   cannot tell clients apart, every one is the shared client, and per-client bounds are off;
//   only the object-wide and relay-wide ones hold.
// - TRUSTED_PROXY_HEADER set while listening beyond loopback: a client that reaches the relay
//   directly, not through the proxy, sets that header itself and picks a fresh address with each
//   request.
import { isLoopbackListen } from "./workerd-config.ts";

export interface ClientAddressSettings {
  PUBLIC_URL?: unknown;
  TRUSTED_PROXY_HEADER?: unknown;
}

const named = (v: unknown): string => (typeof v === "string" ? v.trim() : "");

/** The warnings for a relay listening on `host` with these settings (none when all is well). */
export function clientAddressWarnings(host: string, settings: ClientAddressSettings): string[] {
  const loopback = isLoopbackListen(host);
  const header = named(settings.TRUSTED_PROXY_HEADER);
  const publicUrl = named(settings.PUBLIC_URL);
  const out: string[] = [];
  if (header === "" && (publicUrl !== "" || !loopback)) {
    const why = publicUrl !== "" ? `PUBLIC_URL is set (${publicUrl})` : `listening on ${host}`;
    out.push(
      `${why} without TRUSTED_PROXY_HEADER: the relay cannot tell clients apart, so every client counts as one ("shared") ` +
        "and the per-client limits are off (only each object's and the relay's own bounds hold against a flood). " +
        "Put a proxy in front that sets the client's address (nginx: proxy_set_header X-Real-IP $remote_addr;) and set TRUSTED_PROXY_HEADER=x-real-ip.",
    );
  }
  if (header !== "" && !loopback) {
    out.push(
      `TRUSTED_PROXY_HEADER=${header} while listening on ${host}: a client that connects directly, not through the proxy, ` +
        `sets ${header} itself and chooses its own address for every limit. Listen on loopback (RELAY_HOST=127.0.0.1) behind the proxy, ` +
        "or let only the proxy reach this address.",
    );
  }
  return out;
}
