// "Wire unions, both ways, typed": each socket object declares its routes against its protocol's
// client-to-relay union (RoutesOf), so a missing or an extra handler is a type error (the
// typecheck runs this file); `send` takes only the object's relay-to-client frames.
import { describe, expect, it } from "vitest";
import * as z from "zod";
import type { BaseAttachment, RoutesOf, SocketObject } from "../../../durable-objects/base/socket-object";
import * as tally from "../../../shared/tally/messages";
import * as passnote from "../../../shared/passnote/messages";
import * as minca from "../../../shared/minca/room";
import { sourceFiles } from "../../helpers/source-files";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

const a = z.object({ type: z.literal("a"), n: z.number() });
const b = z.object({ type: z.literal("b") });
const other = z.object({ type: z.string() });
type M = z.infer<typeof a> | z.infer<typeof b> | { type: "ping" } | z.infer<typeof other>;
type R = RoutesOf<unknown, BaseAttachment, M>;

const handle = () => {};

/** An object of a protocol whose only frame is "x" (a type-level probe: never built; the base is the real one). */
function probe(Base: typeof SocketObject) {
  abstract class Probe extends Base<Env, BaseAttachment, { type: "x" }> {
    sendBoth(ws: WebSocket): void {
      this.send(ws, { type: "x" });
      this.send(ws, { type: "error", code: "invalid_message", message: "the error frame every protocol shares" });
      // @ts-expect-error: "y" is no frame of this object's protocol
      this.send(ws, { type: "y" });
    }
  }
  return Probe;
}

describe("routes typed against the client-to-relay union", () => {
  it("a missing handler, an extra one, or one whose schema is of another message, does not typecheck", () => {
    const full: R = { a: { schema: a, handle }, b: { schema: b, handle } };
    // @ts-expect-error: "b" has no route
    const missing: R = { a: { schema: a, handle } };
    // @ts-expect-error: "c" is no message of the union
    const extra: R = { a: { schema: a, handle }, b: { schema: b, handle }, c: { schema: b, handle } };
    // @ts-expect-error: the route of "a" parses "b"
    const wrong: R = { a: { schema: b, handle }, b: { schema: b, handle } };
    expect(Object.keys(full)).toEqual(["a", "b"]);
    expect([missing, extra, wrong]).toHaveLength(3);
  });

  it("an object sends only its protocol's relay-to-client frames, or the error frame (typed send)", () => {
    expect(typeof probe).toBe("function");
  });

  it("each object declares its routes as RoutesOf its protocol's union", () => {
    const root = resolve(import.meta.dirname, "../../..");
    const declared = sourceFiles(resolve(root, "durable-objects"), /\.ts$/)
      .map((p) => readFileSync(p, "utf8"))
      .flatMap((text) => [...text.matchAll(/protected routes: RoutesOf<(\w+), \w+, ClientMessage>/g)].map((m) => m[1]))
      .sort();
    expect(declared).toEqual(["MincaRoom", "PassnoteRoom", "TallyUser"]);
  });

  it("each union's routed types are those the objects route (ping answered by the base)", () => {
    const types = (u: z.ZodType) =>
      (u as unknown as { options: Array<{ shape: { type: z.ZodType } }> }).options
        .map((o) => (o.shape.type as unknown as { value?: string }).value)
        .filter((t): t is string => t !== undefined);
    expect(types(tally.clientMessageSchema)).toEqual(["register", "queue_peer_envelope", "ack", "connect_peer", "webrtc_signal", "ping"]);
    expect(types(passnote.clientMessageSchema)).toEqual(["join", "ping"]);
    expect(types(minca.clientMessageSchema)).toEqual(["join", "ping"]);
  });
});
