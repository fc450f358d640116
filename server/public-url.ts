// The one reading of the PUBLIC_URL setting: the URLs the relay is reached at when a proxy in front
// changes the Host header (one or several, comma- or space-separated; an entry without a scheme is
// read as https://). Both rules that compare with the relay's own hosts read it through here: the
// Tally auth event's `relay` tag (host and port) and the push endpoint rule (host name, any port).

interface PublicUrls {
  /** Each well-formed entry as a URL. */
  urls: URL[];
  /** The entries that are not URLs (the settings module refuses to start with any). */
  bad: string[];
}

export function parsePublicUrl(setting: string | undefined): PublicUrls {
  const urls: URL[] = [];
  const bad: string[] = [];
  for (const raw of (setting ?? "").split(/[\s,]+/)) {
    if (raw === "") continue;
    try {
      const url = new URL(raw.includes("://") ? raw : `https://${raw}`);
      if (url.host === "") bad.push(raw);
      else urls.push(url);
    } catch {
      bad.push(raw);
    }
  }
  return { urls, bad };
}
