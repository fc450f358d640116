// One relay URL, every spelling: each client takes the relay as ws://, wss://, http://, https://
// or a bare host (relay.example, 127.0.0.1:8787) and derives the scheme its endpoint speaks.
// A bare host is TLS (wss/https) unless it is a loopback address, which has no certificate.

/** The relay's origin (and any path prefix) in the scheme family `as` wants, without a trailing slash. */
export function relayBase(relayUrl: string, as: "http" | "ws"): string {
  const s = relayUrl.trim();
  const m = /^(wss?|https?):\/\//i.exec(s);
  let secure: boolean;
  let rest: string;
  if (m) {
    const scheme = m[1].toLowerCase();
    secure = scheme === "wss" || scheme === "https";
    rest = s.slice(m[0].length);
  } else {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(s)) throw new TypeError(`not a relay URL (use ws, wss, http or https): ${relayUrl}`);
    rest = s;
    secure = !isLoopback(rest);
  }
  rest = rest.replace(/\/+$/, "");
  const url = new URL(`${secure ? "https" : "http"}://${rest}`); // throws on a malformed host
  if (url.search || url.hash) throw new TypeError(`a relay URL has no query or fragment: ${relayUrl}`);
  const base = `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
  return as === "ws" ? base.replace(/^http/, "ws") : base;
}

function isLoopback(hostAndPath: string): boolean {
  const host = hostAndPath.split("/")[0].replace(/:\d+$/, "").toLowerCase();
  return host === "localhost" || host.endsWith(".localhost") || /^127\.\d+\.\d+\.\d+$/.test(host) || host === "[::1]";
}
