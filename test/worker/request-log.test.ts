// The Worker's log: one JSON line per HTTP request (ts, level, msg, request_id, method, route,
// status, duration_ms, client), the request id also sent as x-request-id, auth failures logged,
// and LOG_LEVEL respected.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../workers/index";
import { setLogLevel } from "../../server/log";
import { ownAddress } from "../helpers/client-address";

async function fetchWith(
  path: string,
  init: RequestInit = {},
  settings: Record<string, string> = {},
): Promise<{ res: Response; lines: any[] }> {
  const spy = vi.spyOn(console, "log").mockImplementation(() => {});
  try {
    const ctx = createExecutionContext();
    const res = await worker.fetch(new Request(`http://relay.test${path}`, init), { ...env, LOG_LEVEL: "info", ...settings }, ctx);
    await waitOnExecutionContext(ctx);
    await res.arrayBuffer();
    return { res, lines: spy.mock.calls.map((c) => JSON.parse(String(c[0]))) };
  } finally {
    spy.mockRestore();
  }
}

afterEach(() => setLogLevel("warn"));

describe("request log lines", () => {
  it("one JSON line per request with ts, level, msg, request_id, method, route (the pattern, not the path), status, duration_ms and client; the id is the x-request-id header", async () => {
    const topic = "T".repeat(43);
    const client = ownAddress();
    const { res, lines } = await fetchWith(`/minca/v1/mailbox/${topic}`, { headers: { "cf-connecting-ip": client } });
    expect(res.status).toBe(200);
    const id = res.headers.get("x-request-id");
    expect(id).toBeTruthy();
    const line = lines.find((l) => l.msg === "request");
    expect(line).toMatchObject({
      level: "info",
      request_id: id,
      method: "GET",
      route: "/minca/v1/mailbox/:topic",
      status: 200,
      client,
    });
    expect(new Date(line.ts).toISOString()).toBe(line.ts);
    expect(line.duration_ms).toBeGreaterThanOrEqual(0);
    expect(JSON.stringify(lines)).not.toContain(topic);
  });

  it("a client's own x-request-id is not taken on a direct connection; behind the proxy named in TRUSTED_PROXY_HEADER it is", async () => {
    const direct = await fetchWith("/openapi.json", { headers: { "x-request-id": "chosen-by-client" } }, { RELAY_RUNTIME: "workerd" });
    expect(direct.res.headers.get("x-request-id")).not.toBe("chosen-by-client");
    const proxied = await fetchWith(
      "/openapi.json",
      { headers: { "x-request-id": "proxy-id-1" } },
      { RELAY_RUNTIME: "workerd", TRUSTED_PROXY_HEADER: "x-real-ip" },
    );
    expect(proxied.res.headers.get("x-request-id")).toBe("proxy-id-1");
    expect(proxied.lines.find((l) => l.msg === "request").request_id).toBe("proxy-id-1");
  });

  it("an auth failure on HTTP is logged as a warning with the route and client, never the token", async () => {
    const { res, lines } = await fetchWith(
      "/status.json",
      { headers: { authorization: "Bearer guess-123", "cf-connecting-ip": ownAddress() } },
      { ADMIN_TOKEN: "secret-token" },
    );
    expect(res.status).toBe(401);
    const warn = lines.find((l) => l.msg === "authentication failed");
    expect(warn).toMatchObject({
      level: "warn",
      route: "/status.json",
      reason: "wrong token",
      request_id: res.headers.get("x-request-id"),
    });
    expect(JSON.stringify(lines)).not.toContain("guess-123");
  });

  it("one message for one event: a failed authentication is 'authentication failed' over HTTP as on a socket", async () => {
    const { lines } = await fetchWith(
      "/status.json",
      { headers: { authorization: "Bearer nope", "cf-connecting-ip": ownAddress() } },
      { ADMIN_TOKEN: "secret-token" },
    );
    expect(lines.map((l) => l.msg)).toContain("authentication failed");
    expect(lines.map((l) => l.msg)).not.toContain("auth failed");
  });

  it("a health probe that passes writes no line (it is still counted); one that fails is logged", async () => {
    const ok = await fetchWith("/healthz");
    expect(ok.res.status).toBe(200);
    expect(ok.lines).toEqual([]);
    const bad = await fetchWith("/healthz", {}, { STORAGE_TALLY_BYTES: "lots" });
    expect(bad.res.status).toBe(500);
    expect(bad.lines.find((l) => l.msg === "request")).toMatchObject({ status: 500 });
  });

  it("LOG_LEVEL=warn leaves out the info lines", async () => {
    const { lines } = await fetchWith("/healthz", {}, { LOG_LEVEL: "warn" });
    expect(lines.filter((l) => l.level === "info")).toEqual([]);
  });
});
