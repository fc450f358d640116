// The launcher's checks (scripts/preflight.ts) and its output lines (scripts/launcher-log.ts),
// against real sockets on loopback.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { launcherLine, passLine } from "../../../scripts/launcher-log";
import { badSettingMessage, checkPortFree, getHealthz, probeHost, StartError } from "../../../scripts/preflight";

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

function serve(status: number, body: string): Promise<number> {
  const srv = createServer((_req, res) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(body);
  });
  servers.push(srv);
  return new Promise((resolve) => srv.listen(0, "127.0.0.1", () => resolve((srv.address() as AddressInfo).port)));
}

describe("the launcher's checks before and after workerd starts", () => {
  it("a busy port is refused with a message naming the port, --port and RELAY_PORT (exit 1)", async () => {
    const port = await serve(200, "ok");
    const err = await checkPortFree("127.0.0.1", port).then(
      () => null,
      (e) => e,
    );
    expect(err).toBeInstanceOf(StartError);
    expect(err.exitCode).toBe(1);
    expect(err.message).toContain(`port ${port}`);
    expect(err.message).toMatch(/--port.*RELAY_PORT/);
  });

  it("a free port passes", async () => {
    const port = await serve(200, "ok");
    servers.pop()!.close();
    await new Promise((r) => setTimeout(r, 10));
    await expect(checkPortFree("127.0.0.1", port)).resolves.toBeUndefined();
  });

  it("a 500 bad_setting answer to /healthz gives the setting's message; any other answer none", async () => {
    const bad = await serve(500, JSON.stringify({ error: { code: "bad_setting", message: "STORAGE_TALLY_BYTES: lots is not a size" } }));
    expect(badSettingMessage(await getHealthz("0.0.0.0", bad))).toBe("STORAGE_TALLY_BYTES: lots is not a size");
    const ok = await serve(200, "ok");
    expect(badSettingMessage(await getHealthz("127.0.0.1", ok))).toBeNull();
    expect(badSettingMessage({ status: 500, body: '{"error":{"code":"internal"}}' })).toBeNull();
    expect(badSettingMessage({ status: 500, body: "<html>" })).toBeNull();
  });

  it("a wildcard listen address is probed on loopback", () => {
    expect(probeHost("0.0.0.0")).toBe("127.0.0.1");
    expect(probeHost("[::]")).toBe("::1");
    expect(probeHost("192.0.2.1")).toBe("192.0.2.1");
  });
});

describe("the launcher's output is JSON lines", () => {
  it("its own lines have ts, level and msg first", () => {
    const v = JSON.parse(launcherLine("warn", "hello", { port: 1, level: "x" }));
    expect(Object.keys(v)).toEqual(["ts", "level", "msg", "port"]);
    expect(v.level).toBe("warn");
    expect(Number.isNaN(Date.parse(v.ts))).toBe(false);
  });

  it("a JSON line from workerd passes unchanged (a ts put first when it has none); any other line is wrapped, blank lines dropped", () => {
    const withTs = '{"ts":"2026-01-01T00:00:00.000Z","level":"info","msg":"request"}';
    expect(passLine(withTs, "info", "workerd")).toBe(withTs);
    const given = JSON.parse(passLine('{"level":"info","msg":"request","n":1}', "info", "workerd")!);
    expect(Object.keys(given)).toEqual(["ts", "level", "msg", "n"]);
    expect(given).toMatchObject({ level: "info", msg: "request", n: 1 });
    const wrapped = JSON.parse(passLine("workerd/server/server.c++:1: error: boom {", "warn", "workerd")!);
    expect(wrapped).toMatchObject({ level: "warn", msg: "workerd/server/server.c++:1: error: boom {", source: "workerd" });
    expect(JSON.parse(passLine("[1,2]", "info", "workerd")!).msg).toBe("[1,2]");
    expect(passLine("   ", "info", "workerd")).toBeNull();
  });
});
