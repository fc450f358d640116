// A peer's outbox (clients/passnote/protocol/peer-state.ts): frames in the order they were made,
// some waiting for a store read. A step that throws (a frame that cannot be made) is reported as
// the engine's `error`, never dropped silently, and the frames after it still go.
import { describe, expect, it } from "vitest";
import { Outbox } from "../../../../clients/passnote/protocol/peer-state";

describe("a Passnote peer's outbox", () => {
  it("a step that throws is reported, and the steps after it still run in order", async () => {
    const ran: string[] = [];
    const errors: unknown[] = [];
    let idle = 0;
    const box = new Outbox(
      () => idle++,
      (e) => errors.push(e),
    );
    void box.after(async () => {
      await new Promise((r) => setTimeout(r, 1));
      ran.push("first");
    });
    void box.after(() => {
      throw new Error("a frame that cannot be made");
    });
    void box.after(() => {
      ran.push("third");
    });
    await box.idle();
    expect(ran).toEqual(["first", "third"]);
    expect(errors.map((e) => (e as Error).message)).toEqual(["a frame that cannot be made"]);
    expect(idle).toBe(1);
    expect(box.busy).toBe(false);
  });
});
