// Which `relay` tag an auth event may carry (docs/tally.md; docs/tally.md): a ws:, wss:, http:
// or https: URL whose host (with port) is one of the hosts of the relay's PUBLIC_URL setting (a
// comma-separated list of URLs) when it is set, and then only those; with it unset (local use),
// the host the client connected to. A Host header is the client's to choose: a relay that trusted
// it would accept a register signed for another relay and replayed to this one. The path is not
// compared: a relay reached through a proxy or under another path is the same relay, and the
// challenge already binds the event to this one connection.
import { parsePublicUrl } from "../public-url";

/** The hosts (host[:port], lower case) of a PUBLIC_URL setting; empty when it is unset or blank. */
export function publicHosts(publicUrl: string | undefined): string[] {
  const { urls, bad } = parsePublicUrl(publicUrl);
  // A malformed entry names no host, but the setting is still set.
  return [...urls.map((u) => u.host.toLowerCase()), ...bad.map(() => "")];
}

/** `publicUrl`: the PUBLIC_URL setting as written, or its URLs as parsed (server/settings.ts). */
export function relayUrlMatches(tag: string, connectedHost: string, publicUrl?: string | readonly URL[]): boolean {
  let url: URL;
  try {
    url = new URL(tag);
  } catch {
    return false;
  }
  if (!["ws:", "wss:", "http:", "https:"].includes(url.protocol)) return false;
  const configured = typeof publicUrl === "object" ? publicUrl.map((u) => u.host.toLowerCase()) : publicHosts(publicUrl);
  const hosts = configured.length > 0 ? configured : [connectedHost.toLowerCase()];
  const host = url.host.toLowerCase();
  return host !== "" && hosts.includes(host);
}
