// The app's handlers (clients/tally/handlers.ts, inbound.ts, redeliver.ts): a failed message is run
// again by the client itself, promptly; with several handlers one's failure never re-runs the
// others' effects; handlers by type with a schema; the receipt's result with several handlers.
// Two clients joined by in-memory channels; the clock is driven by the test.
import { afterEach, describe, expect, it, vi } from "vitest";
import * as z from "zod";
import { IGNORED, TallyClient, memoryStore, type InnerMessage } from "../../../../clients/tally/index";
import { directPair, newUser } from "../../../helpers/tally";

afterEach(() => {
  vi.useRealTimers();
});

/** The receipt results in frames b sent back to a. */
async function receiptResults(a: TallyClient, frames: string[]): Promise<unknown[]> {
  const results: unknown[] = [];
  const off = a.on("receipt", (_id, result) => void results.push(result));
  for (const f of frames) await a.handleDirectFrame(f);
  off();
  return results;
}

describe("6 a failed handler's message", () => {
  it("6 a failed handler's message is redelivered promptly by the client itself, not after the sender's back-off", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const { a, b, aToB, bToA } = directPair();
    let fail = true;
    const handled: string[] = [];
    b.on("message", (m: InnerMessage) => {
      if (fail) throw new Error("the app's database is down for a moment");
      handled.push(m.id);
    });
    const quiet = vi.spyOn(console, "error").mockImplementation(() => {});
    const id = await a.send(b.npub, "note", {});
    await b.handleDirectFrame(aToB[0]);
    expect(handled).toEqual([]);
    fail = false;
    // No copy comes again (the sender backs off for up to an hour); the client's own run does it.
    await vi.advanceTimersByTimeAsync(999);
    expect(handled).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await b.idle();
    expect(handled).toEqual([id]);
    expect(await receiptResults(a, bToA)).toEqual(["processed"]);
    quiet.mockRestore();
  });

  it("6 one listener's failure never re-runs another listener's effects: per-listener processed marks", async () => {
    const { a, b, aToB, bToA } = directPair();
    const effects: string[] = [];
    let fail = true;
    b.on("message", () => {
      effects.push("first");
      return "charged";
    });
    b.on("message", () => {
      if (fail) throw new Error("the second listener failed");
      effects.push("second");
    });
    const quiet = vi.spyOn(console, "error").mockImplementation(() => {});
    await a.send(b.npub, "note", {});
    await b.handleDirectFrame(aToB[0]);
    expect(effects).toEqual(["first"]);
    fail = false;
    await b.handleDirectFrame(aToB[0]); // the next copy
    expect(effects).toEqual(["first", "second"]);
    expect(await receiptResults(a, bToA)).toEqual(["charged"]); // the first listener's result, kept
    await b.handleDirectFrame(aToB[0]); // a later copy is a duplicate
    expect(effects).toEqual(["first", "second"]);
    quiet.mockRestore();
  });

  it("6 the marks of the handlers that returned are kept in the store: a client restarted on it skips them", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = new TallyClient({ relayUrl: "ws://unused", secretKey: alice.secretKey, store: "memory" });
    const frames: string[] = [];
    a.addDirectChannel(bob.npub, { send: (f) => void frames.push(f) });
    await a.send(bob.npub, "note", {});
    const store = memoryStore();
    const effects: string[] = [];
    const quiet = vi.spyOn(console, "error").mockImplementation(() => {});
    const first = new TallyClient({ relayUrl: "ws://unused", secretKey: bob.secretKey, store });
    first.on("message", () => void effects.push("first"));
    first.on("message", () => {
      throw new Error("down");
    });
    await first.handleDirectFrame(frames[0]);
    first.close();
    const second = new TallyClient({ relayUrl: "ws://unused", secretKey: bob.secretKey, store });
    second.on("message", () => void effects.push("first again"));
    second.on("message", () => void effects.push("second"));
    await second.handleDirectFrame(frames[0]);
    expect(effects).toEqual(["first", "second"]);
    second.close();
    quiet.mockRestore();
  });
});

describe("handlers by type", () => {
  it("handlers by type: a handler gets only its type, the payload parsed by its schema; a payload the schema refuses is answered ignored", async () => {
    const { a, b, aToB, bToA } = directPair();
    const notes: string[] = [];
    b.handle("note", (m) => void notes.push(m.payload.text), { schema: z.object({ text: z.string() }) });
    const pings: string[] = [];
    b.handle("ping", (m) => void pings.push(m.id));
    await a.send(b.npub, "note", { text: "hello" });
    await a.send(b.npub, "ping", {});
    await a.send(b.npub, "note", { text: 42 });
    for (const f of aToB) await b.handleDirectFrame(f);
    expect(notes).toEqual(["hello"]);
    expect(pings).toHaveLength(1);
    expect(await receiptResults(a, bToA)).toEqual(["processed", "processed", IGNORED]);
    expect((await b.store.listLedger()).length).toBe(2);
  });

  it("handlers by type: with several handlers the receipt's result is the first string returned, in registration order", async () => {
    const { a, b, aToB, bToA } = directPair();
    b.on("message", () => undefined);
    b.handle("note", () => "stored-as-draft");
    b.handle("note", () => IGNORED);
    await a.send(b.npub, "note", {});
    await b.handleDirectFrame(aToB[0]);
    expect(await receiptResults(a, bToA)).toEqual(["stored-as-draft"]);
  });
});
