// Static assets (wrangler.toml [assets]: the demo page). On Cloudflare the platform serves a
// matching file before the Worker runs; self-hosted on workerd, the generated config binds the
// same folder as a read-only disk service, and this fallback serves it: the same paths answer
// the same way under both.
import type { C } from "./http";

const TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  mjs: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  json: "application/json",
  map: "application/json",
  svg: "image/svg+xml",
  png: "image/png",
  ico: "image/x-icon",
  txt: "text/plain; charset=utf-8",
};

/** The asset for this request, or null when there is none (or no assets binding). */
export async function serveAsset(c: C): Promise<Response | null> {
  const assets = c.env.ASSETS;
  const method = c.req.method;
  if (!assets || (method !== "GET" && method !== "HEAD")) return null;
  const url = new URL(c.req.url);
  // Only a plain path names a file: no `..`, no empty segment (`//x` would be read as another
  // host by the URL built below, and `//` alone made the disk service list the folder), no
  // encoded slash or backslash.
  const segments = url.pathname.slice(1).split("/");
  if (segments.some((seg, i) => seg === ".." || (seg === "" && i < segments.length - 1)) || /%(2f|5c)/i.test(url.pathname)) return null;
  if (!url.pathname.endsWith("/") && !/\.[a-z0-9]+$/i.test(url.pathname)) {
    // A folder named without its trailing slash (/connect): send the client to it, as the
    // platform does. Asked first, since the disk service answers a folder itself with a listing.
    const dir = await assets.fetch(new Request(new URL(`${url.pathname}/index.html`, url.origin), { method }));
    if (dir.status === 200) return c.redirect(`${url.pathname}/${url.search}`, 307);
  }
  const path = url.pathname.endsWith("/") ? `${url.pathname}index.html` : url.pathname;
  let res = await assets.fetch(new Request(new URL(path, url.origin), { method }));
  if (res.status !== 200) return null;
  const ext = path.slice(path.lastIndexOf(".") + 1).toLowerCase();
  const headers = new Headers(res.headers);
  headers.set("content-type", TYPES[ext] ?? "application/octet-stream");
  res = new Response(method === "HEAD" ? null : res.body, { status: 200, headers });
  return res;
}
