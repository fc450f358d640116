// docs/hostile.md, every input bounded: a WebSocket text frame whose JSON nests deeper than
// common.max_json_depth is answered invalid_message before it is parsed, on every text endpoint
// (the check is the Durable Object base's), and the socket stays open.
import { describe, expect, it } from "vitest";
import { randomBytes } from "../../shared/encoding";
import { COMMON_LIMITS } from "../../shared/limits";
import { roomKeys } from "../../shared/passnote/room";
import { codeRoom, codeSecret, newCode } from "../../shared/minca/code";
import { newUser } from "../helpers/tally";
import { openSocket } from "../helpers/worker-socket";

const open = (path: string) => openSocket(path);

/** A ping frame (not the exact auto-answered text) carrying a value nested `depth` levels. */
const nested = (depth: number) => `{"type":"ping","pad":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;

const endpoints: Array<[string, () => string]> = [
  ["Tally", () => `/tally/v1/${newUser().npub}`],
  ["Passnote", () => `/passnote/v2/${roomKeys(randomBytes(32)).roomId}`],
  ["Minca code room", () => `/minca/v1/rooms/${codeRoom(codeSecret(newCode()))}`],
];

describe("common.max_json_depth on WebSocket text frames", () => {
  for (const [name, path] of endpoints) {
    it(`${name}: a frame nested deeper than max_json_depth (${COMMON_LIMITS.max_json_depth}) is invalid_message and the socket stays open`, async () => {
      const s = await open(path());
      await s.next("challenge");
      s.send(nested(COMMON_LIMITS.max_json_depth + 1));
      const err = await s.next("error");
      expect(err.code).toBe("invalid_message");
      expect(err.message).toContain(`deeper than ${COMMON_LIMITS.max_json_depth}`);
      // at the bound it is read as before: a ping, answered
      s.send(nested(COMMON_LIMITS.max_json_depth));
      await s.next("pong");
      s.ws.close(1000, "done");
    });
  }
});
