// Static assets self-hosted (workers/assets.ts): only a plain path names a file. `GET //anything`
// used to answer the disk service's listing of the static folder, and `//x/demo/...` served files
// (the path was read as a URL naming another host).
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { serveAsset } from "../../../workers/assets";

function relayWithAssets() {
  const asked: string[] = [];
  const ASSETS = {
    fetch: async (req: Request) => {
      const path = new URL(req.url).pathname;
      asked.push(path);
      if (path === "/" || path === "/demo/") return new Response("<listing>", { status: 200 });
      if (path === "/demo/index.html") return new Response("<demo>", { status: 200 });
      return new Response("", { status: 404 });
    },
  };
  const app = new Hono();
  app.all("*", async (c) => (await serveAsset(c as never)) ?? c.text("not found", 404));
  return { asked, get: (path: string) => app.fetch(new Request(`http://relay.test${path}`), { ASSETS }) };
}

describe("static assets: only a plain path names a file", () => {
  it("GET //anything and //x/demo/ serve nothing (404) and never reach the folder; /demo/ serves its index", async () => {
    const r = relayWithAssets();
    for (const path of ["//", "//anything", "//x/demo/", "//x/demo/index.html", "/demo//index.html", "/%2Fdemo/index.html"])
      expect((await r.get(path)).status, path).toBe(404);
    expect(r.asked).toEqual([]);
    const demo = await r.get("/demo/");
    expect(demo.status).toBe(200);
    expect(await demo.text()).toBe("<demo>");
  });
});
