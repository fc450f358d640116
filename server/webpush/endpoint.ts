// Which push endpoints the relay will send to (docs/mailbox.md, profile). A push endpoint is an
// outbound request an anonymous client chooses, so the rule keeps the relay from being pointed
// at itself (a wake that wakes itself forever), at the operator's own network (SSRF), or at
// anything but a public push service: an `https:` URL on the default port whose host is a DNS
// name, not an IP literal, not a loopback or local-only name, and not one of the relay's own
// hosts, and whose path is none of the relay's own routes on any host (the Host a request names
// can be anything, so the relay's own host names alone cannot recognise it). The operator's
// setting PUSH_ENDPOINT_ALLOW names origins that pass the host rules whatever they are (a private
// push service; the tests' loopback one), but never with a relay path. Pure: the URL parser does the normalising
// (decimal, hex and octal IPv4 forms, IPv4-mapped IPv6, case), this module judges the result.
import { parsePublicUrl } from "../public-url";

/** What a check needs besides the endpoint. */
export interface EndpointPolicy {
  /** Origins that pass the rule whatever they are (PUSH_ENDPOINT_ALLOW, parsed by parseEndpointAllow). */
  allow: readonly AllowedOrigin[];
  /** Host names the relay answers on (the request's, PUBLIC_URL's), any port: never a push endpoint. */
  ownHosts: readonly string[];
}

export interface AllowedOrigin {
  protocol: "http:" | "https:";
  hostname: string;
  /** The port as the URL parser gives it ("" for the scheme's default); undefined: every port. */
  port?: string;
}

export type EndpointCheck = { ok: true; origin: string } | { ok: false; reason: string };

/** The class of an IP literal's address, as a URL parser serialises its host. */
export type AddressRange =
  | "unspecified"
  | "loopback"
  | "private"
  | "link-local"
  | "unique-local"
  | "shared"
  | "multicast"
  | "reserved"
  | "public";

/** Names that resolve to the machine itself or only on a local network (RFC 6761, 6762, 8375). */
const LOCAL_SUFFIXES = ["localhost", "local", "internal", "home.arpa", "localdomain"];

function stripDot(h: string): string {
  return h.endsWith(".") ? h.slice(0, -1) : h;
}

/** The four bytes of a dotted-quad the URL parser produced, or null. */
function ipv4Bytes(h: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(h);
  if (!m) return null;
  const b = m.slice(1).map(Number);
  return b.every((x) => x <= 255) ? b : null;
}

/** The eight 16-bit groups of a bracketed IPv6 literal (any form the URL parser reads), or null. */
function ipv6Groups(h: string): number[] | null {
  if (!h.startsWith("[") || !h.endsWith("]")) return null;
  let s: string;
  try {
    s = new URL(`http://${h}/`).hostname.slice(1, -1); // canonical: lowercase hex groups, no dotted tail
  } catch {
    return null;
  }
  const parts = s.split("::");
  if (parts.length > 2) return null;
  const group = (p: string) => (p === "" ? [] : p.split(":").map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)));
  const head = group(parts[0]);
  const rest = parts.length === 2 ? group(parts[1]) : [];
  const fill = parts.length === 2 ? 8 - head.length - rest.length : 0;
  if (fill < 0) return null;
  const all = [...head, ...new Array<number>(fill).fill(0), ...rest];
  if (all.length !== 8 || all.some((g) => Number.isNaN(g))) return null;
  return all;
}

function ipv4Range(b: number[]): AddressRange {
  const [a, c] = b;
  if (a === 0) return "unspecified";
  if (a === 127) return "loopback";
  if (a === 10 || (a === 172 && c >= 16 && c <= 31) || (a === 192 && c === 168)) return "private";
  if (a === 169 && c === 254) return "link-local";
  if (a === 100 && c >= 64 && c <= 127) return "shared";
  if (a >= 224 && a <= 239) return "multicast";
  if (a >= 240) return "reserved";
  return "public";
}

/**
 * The range of an IP literal host (`127.0.0.1`, `[::1]`, as `new URL(...).hostname` gives it), or
 * null when the host is not an IP literal. IPv4-mapped, IPv4-compatible and NAT64 (64:ff9b::/96)
 * IPv6 addresses are judged by the IPv4 address they carry.
 */
export function addressRange(hostname: string): AddressRange | null {
  let host = hostname;
  if (!host.startsWith("[")) {
    try {
      host = new URL(`http://${hostname}/`).hostname; // decimal, hex and octal IPv4 forms become dotted quads
    } catch {
      return null;
    }
  }
  const v4 = ipv4Bytes(stripDot(host));
  if (v4) return ipv4Range(v4);
  const g = ipv6Groups(host);
  if (!g) return null;
  const embedded = () => ipv4Range([g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff]);
  if (g.every((x) => x === 0)) return "unspecified";
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return "loopback";
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0)) return embedded();
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return embedded();
  if ((g[0] & 0xffc0) === 0xfe80) return "link-local";
  if ((g[0] & 0xfe00) === 0xfc00) return "unique-local";
  if ((g[0] & 0xff00) === 0xff00) return "multicast";
  return "public";
}

/** A name that only means something on the machine or its local network. */
function isLocalName(hostname: string): boolean {
  const h = stripDot(hostname);
  if (!h.includes(".")) return true; // one label: resolved through a search domain, on the local network
  return LOCAL_SUFFIXES.some((s) => h === s || h.endsWith(`.${s}`));
}

/**
 * PUSH_ENDPOINT_ALLOW: comma-separated origins (`scheme://host[:port]`); an origin without a port
 * allows every port of that host. Entries that are not an http(s) origin are returned in `bad`
 * (the relay says so at start rather than guessing).
 */
export function parseEndpointAllow(setting: string | undefined): { allow: AllowedOrigin[]; bad: string[] } {
  const allow: AllowedOrigin[] = [];
  const bad: string[] = [];
  for (const raw of (setting ?? "").split(",")) {
    const entry = raw.trim();
    if (entry === "") continue;
    let u: URL;
    try {
      u = new URL(entry);
    } catch {
      bad.push(entry);
      continue;
    }
    const hasPort = /^[a-z]+:\/\/(\[[^\]]*\]|[^/:]*):\d+\/?$/i.test(entry);
    if (
      (u.protocol !== "http:" && u.protocol !== "https:") ||
      u.username ||
      u.password ||
      (u.pathname !== "/" && u.pathname !== "") ||
      u.search ||
      u.hash
    ) {
      bad.push(entry);
      continue;
    }
    allow.push({ protocol: u.protocol, hostname: stripDot(u.hostname), ...(hasPort ? { port: u.port } : {}) });
  }
  return { allow, bad };
}

/** The host names in a setting of URLs or host names (PUBLIC_URL: one or several, comma- or space-separated). */
export function hostsOf(setting: string | undefined): string[] {
  return parsePublicUrl(setting).urls.map((u) => stripDot(u.hostname));
}

/**
 * The first path segment of every route the relay serves (workers/app.ts and the routers it
 * mounts, and the static pages): a push endpoint whose path starts with one of them, or is the
 * bare root, could be this relay under a name it does not know it has.
 */
export const RELAY_PATH_ROOTS: readonly string[] = [
  "tally",
  "passnote",
  "minca",
  "status",
  "status.json",
  "metrics",
  "healthz",
  "openapi.json",
  "favicon.ico",
  "demo",
  "connect",
];

/**
 * Whether a URL path names one of the relay's routes (or its root): judged as the router reads it,
 * percent escapes decoded (until nothing changes), case folded, empty and `.` segments skipped.
 */
export function isRelayPath(pathname: string): boolean {
  let p = pathname;
  for (let i = 0; i < 4 && p.includes("%"); i++) {
    try {
      const next = decodeURIComponent(p);
      if (next === p) break;
      p = next;
    } catch {
      break;
    }
  }
  const first = p
    .toLowerCase()
    .split(/[/\\]/)
    .find((seg) => seg !== "" && seg !== ".");
  return first === undefined || RELAY_PATH_ROOTS.includes(first);
}

function allowed(u: URL, allow: readonly AllowedOrigin[]): boolean {
  const host = stripDot(u.hostname);
  return allow.some((a) => a.protocol === u.protocol && a.hostname === host && (a.port === undefined || a.port === u.port));
}

/** docs/mailbox.md's endpoint rule: whether the relay may send pushes to `endpoint`. */
export function checkPushEndpoint(endpoint: string, policy: EndpointPolicy): EndpointCheck {
  let u: URL;
  try {
    u = new URL(endpoint);
  } catch {
    return { ok: false, reason: "endpoint is not a URL" };
  }
  if (u.username || u.password) return { ok: false, reason: "endpoint carries credentials" };
  const relayPath = { ok: false, reason: "endpoint path must not be a route of this relay" } as const;
  if (allowed(u, policy.allow)) return isRelayPath(u.pathname) ? relayPath : { ok: true, origin: u.origin };
  if (u.protocol !== "https:") return { ok: false, reason: "endpoint must be an https URL" };
  if (u.port !== "") return { ok: false, reason: "endpoint must use the default https port" };
  const range = addressRange(u.hostname);
  if (range !== null) return { ok: false, reason: `endpoint host must be a name, not an IP address (${range})` };
  if (isLocalName(u.hostname)) return { ok: false, reason: "endpoint host must be a public DNS name" };
  const host = stripDot(u.hostname);
  if (policy.ownHosts.some((h) => stripDot(h.toLowerCase()) === host)) return { ok: false, reason: "endpoint must not be this relay" };
  if (isRelayPath(u.pathname)) return relayPath;
  return { ok: true, origin: u.origin };
}

/**
 * The rule's policy for a relay with these settings (server/settings.ts, parsed), reached at
 * `requestHost` (the Host of the request that registers the receiver; absent when a push is sent later).
 */
export function endpointPolicyOf(
  settings: { pushEndpointAllow: readonly AllowedOrigin[]; publicUrls: readonly URL[] },
  requestHost?: string,
): EndpointPolicy {
  const ownHosts = settings.publicUrls.map((u) => stripDot(u.hostname));
  if (requestHost) ownHosts.push(...hostsOf(requestHost));
  return { allow: [...settings.pushEndpointAllow], ownHosts };
}

/**
 * Second-level names under which the registries hand out domains (`victim.co.uk`), for pushDomain:
 * a short list of the common ones, each an ICANN public suffix with no public suffix below it, so
 * a host under one counts as its last three labels, exactly its registrable domain. Any other
 * multi-label suffix (`com.bd`, `pvt.k12.ma.us`) is not listed: a host under it counts as the
 * suffix's last two labels, more hosts under one origin than the Public Suffix List would put there
 * (docs/hostile.md, "Many subdomains, many domains").
 */
export const SECOND_LEVEL_SUFFIXES: ReadonlySet<string> = new Set(
  [
    "ac.uk co.uk gov.uk ltd.uk me.uk net.uk org.uk plc.uk",
    "com.au edu.au gov.au net.au org.au",
    "ac.jp co.jp go.jp ne.jp or.jp",
    "ac.in co.in gov.in net.in org.in",
    "co.nz net.nz org.nz co.za org.za co.kr or.kr co.il co.id co.th co.ke co.at or.at",
    "com.br net.br org.br com.cn edu.cn gov.cn net.cn org.cn",
    "com.ar com.co com.eg com.es com.hk com.mx com.my com.ng com.pe com.ph com.pk com.pl",
    "com.sa com.sg com.tr com.tw com.ua com.vn",
  ].flatMap((line) => line.split(" ")),
);

/**
 * The push origin an endpoint counts as, for the relay-wide gates and the per-topic and per-client
 * bounds: its host's last two labels, or three under a listed second-level suffix
 * (SECOND_LEVEL_SUFFIXES), with no DNS and no list of every public suffix. So every subdomain of
 * one domain is one push origin (`a.evil.example` and `b.evil.example` are `evil.example`;
 * `fcm.googleapis.com` is `googleapis.com`; `x.victim.co.uk` is `victim.co.uk`). It never splits
 * what the Public Suffix List's registrable domain (ICANN section) would group, and groups more
 * under an unlisted multi-label suffix (`a.victim.com.bd` is `com.bd`): the safe side for a rate
 * shared by everything under it. A host of one or two labels, or an IP literal, counts as itself;
 * empty labels are skipped.
 * "null" when the endpoint is no URL.
 */
export function pushDomain(endpoint: string): string {
  let host: string;
  try {
    host = stripDot(new URL(endpoint).hostname);
  } catch {
    return "null";
  }
  if (host.startsWith("[") || addressRange(host) !== null) return host;
  const labels = host.split(".").filter((l) => l !== ""); // `a..evil.example..` is `evil.example` too
  if (labels.length <= 2) return labels.length === 0 ? host : labels.join(".");
  const lastTwo = labels.slice(-2).join(".");
  return SECOND_LEVEL_SUFFIXES.has(lastTwo) ? labels.slice(-3).join(".") : lastTwo;
}

/**
 * Whether adding a receiver at `endpoint` to receivers at `held` (their endpoints) would pass
 * `max` distinct push origins (pushDomain): a new endpoint at an origin already held always fits.
 */
export function exceedsPushOrigins(held: Iterable<string>, endpoint: string, max: number): boolean {
  const origins = new Set<string>();
  for (const e of held) origins.add(pushDomain(e));
  return !origins.has(pushDomain(endpoint)) && origins.size >= max;
}

/** The origin of a push endpoint, for logs ("null" when it is no URL). */
export function endpointOrigin(endpoint: string): string {
  try {
    return new URL(endpoint).origin;
  } catch {
    return "null";
  }
}
