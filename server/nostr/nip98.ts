// NIP-98 HTTP Auth: `Authorization: Nostr <base64 of a signed event>`, kind 27235, tagged with
// the request's URL (`u`), method (`method`) and, for a body, its SHA-256 in hex (`payload`),
// made within a bound of now. The relay's admin API accepts it from the keys the operator lists.
// Pure: runs in workerd, Node and browsers.
import { sha256 } from "@noble/hashes/sha2.js";
import { base64Decode, base64Encode, bytesToHex, utf8Decode, utf8Encode } from "../../shared/encoding";
import { finalizeEvent, verifyEvent, type NostrEvent } from "../../shared/nostr/event";

const NIP98_KIND = 27235;
/** Longest header accepted (a kind-27235 event with three tags is a few hundred bytes). */
const MAX_HEADER_CHARS = 8192;

interface Nip98Request {
  /** The URL as the relay sees it (its path and query are what the `u` tag must name). */
  url: string;
  method: string;
  body: Uint8Array;
  /**
   * The only hosts the `u` tag may name: the relay's own (PUBLIC_URL's), never the Host the client
   * sent (a client chooses it: an event signed for another relay would pass with that Host).
   */
  hosts: readonly string[];
  nowSeconds: number;
  maxSkewSeconds: number;
}

type Nip98Check = { ok: true; pubkey: string; id: string; sig: string; createdAt: number } | { ok: false; reason: string };

/** Checks an Authorization header; never throws. */
export function checkNip98(header: string | null | undefined, req: Nip98Request): Nip98Check {
  const m = /^Nostr\s+([A-Za-z0-9+/=_-]+)\s*$/.exec(header ?? "");
  if (!m || m[1].length > MAX_HEADER_CHARS) return { ok: false, reason: "Authorization is not Nostr <base64 event>" };
  let ev: unknown;
  try {
    ev = JSON.parse(utf8Decode(base64Decode(m[1].replace(/-/g, "+").replace(/_/g, "/"))));
  } catch {
    return { ok: false, reason: "the Nostr authorization is not base64 of JSON" };
  }
  if (!verifyEvent(ev)) return { ok: false, reason: "the event's id or signature is not valid" };
  const e = ev as NostrEvent;
  if (e.kind !== NIP98_KIND) return { ok: false, reason: `the event is not of kind ${NIP98_KIND}` };
  if (Math.abs(e.created_at - req.nowSeconds) > req.maxSkewSeconds)
    return { ok: false, reason: `the event was not made within ${req.maxSkewSeconds} s of now` };
  const tag = (name: string) => e.tags.find((t) => t[0] === name)?.[1];
  if (!sameUrl(tag("u"), req.url, req.hosts)) return { ok: false, reason: "the event's u tag is not this request's URL at this relay" };
  if ((tag("method") ?? "").toUpperCase() !== req.method.toUpperCase())
    return { ok: false, reason: "the event's method tag is not this request's method" };
  if (req.body.length > 0 && tag("payload")?.toLowerCase() !== bytesToHex(sha256(req.body)))
    return { ok: false, reason: "the event's payload tag is not the SHA-256 of the body" };
  return { ok: true, pubkey: e.pubkey, id: e.id, sig: e.sig, createdAt: e.created_at };
}

/** The same resource: path and query equal, and the host one of `hosts` (scheme aside: a TLS proxy in front). */
function sameUrl(tagged: string | undefined, actual: string, hosts: readonly string[]): boolean {
  if (!tagged) return false;
  let t: URL;
  let a: URL;
  try {
    t = new URL(tagged);
    a = new URL(actual);
  } catch {
    return false;
  }
  if (t.pathname !== a.pathname || t.search !== a.search) return false;
  const host = t.host.toLowerCase();
  return hosts.some((h) => h.toLowerCase() === host);
}

/** The header value for a request (clients and tests): a fresh signed event for url, method, body. */
export function nip98Header(
  secretKey: Uint8Array,
  url: string,
  method: string,
  body: Uint8Array,
  nowSeconds = Math.floor(Date.now() / 1000),
): string {
  const tags = [
    ["u", url],
    ["method", method.toUpperCase()],
  ];
  if (body.length > 0) tags.push(["payload", bytesToHex(sha256(body))]);
  const ev = finalizeEvent({ kind: NIP98_KIND, created_at: nowSeconds, tags, content: "" }, secretKey);
  return `Nostr ${base64Encode(utf8Encode(JSON.stringify(ev)))}`;
}
