// What browsers and HTTP clients see of the Worker's plain HTTP answers: CORS on the information
// document and the OpenAPI document, `Allow` on every 405.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

describe("HTTP answers", () => {
  it("GET / answers any origin (Access-Control-Allow-Origin: *), as JSON and as HTML", async () => {
    for (const accept of ["application/json", "text/html"]) {
      const res = await SELF.fetch("http://relay.test/", { headers: { accept, origin: "https://app.example" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(res.headers.get("vary")).toContain("Accept");
    }
  });

  it("GET /openapi.json answers any origin (Access-Control-Allow-Origin: *), as JSON", async () => {
    const res = await SELF.fetch("http://relay.test/openapi.json", { headers: { origin: "https://app.example" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(((await res.json()) as { openapi: string }).openapi).toBe("3.1.0");
  });

  it("a 405 names the methods the path takes in Allow", async () => {
    const room = "b" + "a".repeat(52);
    const cases: Array<[string, string, string]> = [
      ["POST", `/minca/v1/rooms/${room}`, "GET, HEAD"],
      ["PUT", "/minca/v1/mailbox/" + "A".repeat(43), "GET, HEAD, POST"],
      ["GET", "/minca/v1/mailbox/" + "A".repeat(43) + "/receivers", "POST"],
      ["GET", "/minca/v1/host/accounts", "POST"],
    ];
    for (const [method, path, allow] of cases) {
      const res = await SELF.fetch(`http://relay.test${path}`, { method });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get("allow"), `${method} ${path}`).toBe(allow);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("method_not_allowed");
    }
  });

  it("GET / in a browser (Accept: text/html) is a page linking the demo, the Minca home, the status page and the OpenAPI document; JSON stays for application/json", async () => {
    const html = await (await SELF.fetch("http://relay.test/", { headers: { accept: "text/html" } })).text();
    for (const href of ["/demo/", "/connect/", "/status", "/openapi.json"]) expect(html).toContain(`<a href="${href}">`);
    const json = await SELF.fetch("http://relay.test/", { headers: { accept: "application/json" } });
    expect(json.headers.get("content-type")).toMatch(/^application\/json/);
  });

  it("/favicon.ico answers 204 (no icon), not 404", async () => {
    const res = await SELF.fetch("http://relay.test/favicon.ico");
    expect(res.status).toBe(204);
  });
});
