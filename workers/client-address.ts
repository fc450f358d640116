// Who a rate limit counts against (docs/hostile.md, "The client address"): the address the
// request came from, taken only from where it can be trusted.
//
// - On Cloudflare: `cf-connecting-ip`, which Cloudflare sets on every request (a client's own
//   header of that name is overwritten at the edge). `wrangler dev` sets it too.
// - Self-hosted (RELAY_RUNTIME = "workerd"): the header the operator names in
//   TRUSTED_PROXY_HEADER (set by the proxy in front, e.g. `x-real-ip`, or `x-forwarded-for`, of
//   which the last entry, the one the proxy appended, is taken). With none named, every client
//   shares one bucket per resource: workerd does not tell the Worker the peer's address, and any
//   header on a direct connection is the client's to choose, so none is ever read then.
// - IPv6 addresses count by their /64 (one host usually holds a whole /64).
//
// Used for every rate limit keyed by client: the mailbox's, the hosting endpoints', and the
// per-client bound of sockets (docs/hostile.md).

import { SHARED_CLIENT } from "../server/object-headers";

export { SHARED_CLIENT };

/** The settings this reads. */
interface ClientAddressSettings {
  RELAY_RUNTIME?: string;
  TRUSTED_PROXY_HEADER?: string;
}

/**
 * The client's address (IPv6 by /64) as far as it can be trusted, else SHARED_CLIENT (no header
 * named, or the named header absent); null when the trusted header holds something that is not an
 * address (the request is answered 400: counting it as the shared client would skip every
 * per-client bound).
 */
export function clientAddress(headers: Headers, env: ClientAddressSettings): string | null {
  const selfHosted = env.RELAY_RUNTIME === "workerd";
  const name = selfHosted ? env.TRUSTED_PROXY_HEADER?.trim().toLowerCase() : "cf-connecting-ip";
  if (!name) return SHARED_CLIENT;
  const value = headers.get(name);
  if (value === null) return SHARED_CLIENT;
  // x-forwarded-for and the like: the last entry is the one the trusted proxy appended.
  const last = value.split(",").pop()!.trim();
  return normalizeAddress(last);
}

/** An IP address as a bucket key: IPv4 as is, IPv6 by its first 64 bits; null when it is not an address. */
export function normalizeAddress(raw: string): string | null {
  const s = raw.replace(/^\[|\](:\d+)?$/g, "");
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(s)) return s;
  if (!/^[0-9a-fA-F:.]+$/.test(s) || !s.includes(":") || s.length > 45) return null;
  const mapped = /^::ffff:(\d{1,3}(\.\d{1,3}){3})$/i.exec(s);
  if (mapped) return mapped[1];
  const parts = s.split("::");
  if (parts.length > 2) return null;
  const head = parts[0] ? parts[0].split(":") : [];
  const tail = parts.length === 2 && parts[1] ? parts[1].split(":") : [];
  const groups = parts.length === 2 ? [...head, ...Array<string>(Math.max(0, 8 - head.length - tail.length)).fill("0"), ...tail] : head;
  if (groups.length < 4 || groups.some((g) => g.length > 4 && !g.includes("."))) return null;
  const prefix = groups.slice(0, 4).map((g) => (parseInt(g, 16) || 0).toString(16));
  return `${prefix.join(":")}::/64`;
}
