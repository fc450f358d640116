// Roles for perfect negotiation of a direct channel (the Tally protocol sections 6.3 and 13.1).
import { describe, expect, it } from "vitest";
import { isPolite, rtcSignalSchema } from "../../../../../clients/tally/protocol/negotiation";
import { generateSecretKey, getPublicKeyHex, npubEncode } from "../../../../../shared/tally/keys";

const user = () => npubEncode(getPublicKeyHex(generateSecretKey()));

describe("polite / impolite by lexicographic key order", () => {
  it("between two users exactly one end is polite: the one with the smaller public key (hex)", () => {
    for (let i = 0; i < 50; i++) {
      const a = { userId: user(), deviceId: "00000000000000aa" };
      const b = { userId: user(), deviceId: "00000000000000aa" };
      expect(isPolite(a, b)).not.toBe(isPolite(b, a));
    }
  });

  it("between two users the device ids do not matter; the key order does", () => {
    const [x, y] = [user(), user()].sort();
    const small = { userId: x, deviceId: "ffffffffffffffff" };
    const big = { userId: y, deviceId: "0000000000000000" };
    expect(isPolite(small, big)).toBe(true);
    expect(isPolite(big, small)).toBe(false);
  });

  it("polite/impolite by the npub comparison (the Tally protocol §2: keys are npubs unless hex is stated), also where the hex order differs", () => {
    let differing = 0;
    for (let i = 0; i < 200; i++) {
      const [hx, hy] = [generateSecretKey(), generateSecretKey()].map(getPublicKeyHex);
      const [nx, ny] = [npubEncode(hx), npubEncode(hy)];
      if (hx < hy !== nx < ny) differing++;
      expect(isPolite({ userId: nx, deviceId: "00000000000000aa" }, { userId: ny, deviceId: "00000000000000bb" })).toBe(nx < ny);
    }
    expect(differing).toBeGreaterThan(0); // the two orders do differ (about 61% of pairs)
  });

  it("between two devices of one user the device ids decide (13.1)", () => {
    const u = user();
    expect(isPolite({ userId: u, deviceId: "0a" }, { userId: u, deviceId: "0b" })).toBe(true);
    expect(isPolite({ userId: u, deviceId: "0b" }, { userId: u, deviceId: "0a" })).toBe(false);
  });

  it("a device cannot negotiate with itself", () => {
    const u = user();
    expect(() => isPolite({ userId: u, deviceId: "0a" }, { userId: u, deviceId: "0a" })).toThrow();
  });
});

describe("the signal shape", () => {
  it("takes descriptions and ICE candidates as browsers serialize them, and nothing else", () => {
    expect(rtcSignalSchema.safeParse({ description: { type: "offer", sdp: "v=0\r\n" } }).success).toBe(true);
    expect(
      rtcSignalSchema.safeParse({
        candidate: { candidate: "candidate:1 1 udp 1 127.0.0.1 5000 typ host", sdpMid: "0", sdpMLineIndex: 0, usernameFragment: "x" },
      }).success,
    ).toBe(true);
    expect(rtcSignalSchema.safeParse({ candidate: null }).success).toBe(true);
    expect(rtcSignalSchema.safeParse({ description: { type: "hello" } }).success).toBe(false);
    expect(rtcSignalSchema.safeParse("offer").success).toBe(false);
  });
});
