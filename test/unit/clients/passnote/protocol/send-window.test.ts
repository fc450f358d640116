// The Passnote protocol, "Flow control": the ordered send window of maxInFlightFrames (16).
import { describe, expect, it } from "vitest";
import { SendWindow } from "../../../../../clients/passnote/protocol/send-window";

describe("the Passnote protocol: ordered send window", () => {
  it("at most 16 frames in flight; the rest wait and leave in the order queued", async () => {
    const handed: number[] = [];
    const release: Array<() => void> = [];
    const w = new SendWindow((f) => {
      handed.push(f[0]);
      return new Promise<void>((r) => release.push(r));
    });
    const done = [];
    for (let i = 0; i < 40; i++) done.push(w.push(Uint8Array.of(i)));
    expect(handed).toEqual([...Array(16).keys()]);
    expect(w.pending).toBe(40);
    release.shift()!();
    await Promise.resolve();
    await Promise.resolve();
    expect(handed).toHaveLength(17);
    // Each frame's promise resolves once the window handed the next one on.
    for (let next = 1; release.length; next++) {
      release.shift()!();
      await done[next];
    }
    await Promise.all(done);
    expect(handed).toEqual([...Array(40).keys()]);
    expect(w.peak).toBe(16);
  });

  it("closing drops the frames not yet handed over", async () => {
    const w = new SendWindow(() => new Promise<void>(() => {}), 1);
    w.push(Uint8Array.of(1));
    const waiting = w.push(Uint8Array.of(2));
    w.close();
    await expect(waiting).rejects.toThrow("closed");
  });
});
