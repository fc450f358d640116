// Which `relay` tag an auth event may carry (profile decision, docs/tally.md): a ws:, wss:,
// http: or https: URL whose host (with port) is the host the client connected to, or the host
// of the relay's configured public URL. The path is not compared: a relay reached through a
// proxy or under another path is the same relay, and the challenge already binds the event to
// this one connection.
export function relayUrlMatches(tag: string, connectedHost: string, publicUrl?: string): boolean {
  let url: URL;
  try {
    url = new URL(tag);
  } catch {
    return false;
  }
  if (!["ws:", "wss:", "http:", "https:"].includes(url.protocol)) return false;
  const hosts = new Set([connectedHost.toLowerCase()]);
  if (publicUrl) {
    try {
      hosts.add(new URL(publicUrl).host.toLowerCase());
    } catch {
      // a malformed PUBLIC_URL setting names no host
    }
  }
  return hosts.has(url.host.toLowerCase());
}
