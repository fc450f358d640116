// The operator's log of sockets: one JSON line per socket session when it ends (object kind,
// duration, frames in and out, close code, the client as the relay sees it), and one line per
// authentication failure (never the user, room or key).
import { afterEach, describe, expect, it, vi } from "vitest";
import { roomKeys } from "../../shared/passnote/room";
import { base64urlEncode, randomBytes } from "../../shared/encoding";
import { openSocket } from "../helpers/worker-socket";
import { waitFor } from "../helpers/wait";
import { setLogLevel } from "../../server/log";
import { ownAddress } from "../helpers/client-address";

const lines = (spy: { mock: { calls: unknown[][] } }) =>
  spy.mock.calls.flatMap((c) => {
    try {
      return [JSON.parse(String(c[0])) as Record<string, unknown>];
    } catch {
      return [];
    }
  });

describe("socket log lines", () => {
  afterEach(() => {
    vi.restoreAllMocks();
    setLogLevel("warn");
  });

  it("a socket session ends with one JSON line: object, duration, messages in and out, close code, client address", async () => {
    const info = vi.spyOn(console, "log");
    const path = `/passnote/v2/${roomKeys(randomBytes(32)).roomId}`;
    const client = ownAddress();
    const s = await openSocket(path, { "cf-connecting-ip": client });
    await s.next("challenge");
    // The pool runs the Worker at LOG_LEVEL=warn (vitest.worker.config.ts); session lines are info.
    setLogLevel("info");
    s.send({ type: "nope" });
    await s.next("error");
    s.close();
    const line = await waitFor(() => lines(info).find((l) => l.msg === "socket session" && l.client === client), {
      what: "the session line",
    });
    expect(line).toMatchObject({ level: "info", object: "PassnoteRoom", authed: false, messages_in: 1, messages_out: 2, close_code: 1000 });
    expect(line.duration_ms).toBeGreaterThanOrEqual(0);
  });

  it("a failed authentication is logged once, with the object kind, the reason and the client, and no room id", async () => {
    const warn = vi.spyOn(console, "log");
    const { roomId } = roomKeys(randomBytes(32));
    const client = ownAddress();
    const s = await openSocket(`/passnote/v2/${roomId}`, { "cf-connecting-ip": client });
    await s.next("challenge");
    s.send({ type: "join", sig: base64urlEncode(randomBytes(64)) });
    await s.next("error");
    const line = await waitFor(() => lines(warn).find((l) => l.msg === "authentication failed" && l.client === client), {
      what: "the auth line",
    });
    expect(line).toMatchObject({ level: "warn", object: "PassnoteRoom" });
    expect(JSON.stringify(line)).not.toContain(roomId);
  });
});
