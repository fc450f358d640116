// The Passnote protocol, "Connection handshake": version negotiation and inst tokens.
import { Writer } from "../../../../../clients/passnote/protocol/codec";
import { describe, expect, it } from "vitest";
import { InstTokens, instToken, makeHandshake, negotiateVersion } from "../../../../../clients/passnote/protocol/handshake";
import { decodeMessage, encodeMessage } from "../../../../../clients/passnote/protocol/wire";

describe("the Passnote protocol: version negotiation", () => {
  it("sync starts on the highest common version; no overlap is PeerIncompatible (null)", () => {
    expect(negotiateVersion([2], [1, 2])).toBe(2);
    expect(negotiateVersion([2, 3], [3, 2, 1])).toBe(3);
    expect(negotiateVersion([2], [1])).toBeNull();
  });

  it("capabilities: unknown names are ignored, a malformed inst token is no token", () => {
    const h = makeHandshake({ inst: "0123456789abcdef" });
    expect(h.capabilities).toEqual(["recon1", "inst:0123456789abcdef"]);
    expect(instToken({ ...h, capabilities: ["future-thing", "inst:0123456789abcdef"] })).toBe("0123456789abcdef");
    expect(instToken({ ...h, capabilities: ["inst:xyz", "recon1"] })).toBeUndefined();
  });
});

describe("the Passnote protocol: the excess of a handshake is ignored, not the handshake", () => {
  it("past 16 versions, 32 capabilities or a capability over 1,024 bytes, the rest still decodes", () => {
    const versions = Array.from({ length: 20 }, (_, i) => i + 1);
    const long = "c".repeat(2000);
    const capabilities = ["recon1", long, ...Array.from({ length: 39 }, (_, i) => `cap-${i}`)];
    const m = decodeMessage(encodeMessage({ type: "handshake", versions, capabilities, deviceKey: new Uint8Array(32).fill(7) }));
    expect(m).toEqual({
      type: "handshake",
      versions: versions.slice(0, 16),
      capabilities: ["recon1", ...capabilities.slice(2, 33)],
      deviceKey: new Uint8Array(32).fill(7),
    });
    // At the bounds exactly nothing is lost; a capability of exactly 1,024 bytes is kept.
    const edge = ["d".repeat(1024), ...Array.from({ length: 31 }, (_, i) => `e-${i}`)];
    expect(
      decodeMessage(
        encodeMessage({ type: "handshake", versions: versions.slice(0, 16), capabilities: edge, deviceKey: new Uint8Array(0) }),
      ),
    ).toMatchObject({ capabilities: edge });
  });

  it("a version above 255 or a capability that is not valid UTF-8 is ignored, not the handshake", () => {
    // Built by hand: versions [2, 256, 2^64 - 1], capabilities ["recon1", 0xFF 0xFE, "inst:..."], a device key.
    const w = new Writer().byte(0xc7).byte(0x01).byte(6);
    w.varint(3)
      .varint(2)
      .varint(256)
      .varint(2n ** 64n - 1n);
    w.varint(3).string("recon1").bytes(Uint8Array.of(0xff, 0xfe)).string("inst:00000000000000aa");
    w.bytes(new Uint8Array(32).fill(7));
    expect(decodeMessage(w.finish())).toEqual({
      type: "handshake",
      versions: [2],
      capabilities: ["recon1", "inst:00000000000000aa"],
      deviceKey: new Uint8Array(32).fill(7),
    });
    // A truncated capability is still malformed.
    const cut = new Writer().byte(0xc7).byte(0x01).byte(6).varint(1).varint(2).varint(1).varint(5).raw(Uint8Array.of(0xff)).finish();
    expect(decodeMessage(cut)).toBeNull();
  });

  it("counts are still bounded by the bytes left: a count beyond them is malformed", () => {
    const frame = encodeMessage({ type: "handshake", versions: [2], capabilities: [], deviceKey: new Uint8Array(0) });
    const lying = frame.slice();
    lying[3] = 0x7f; // 127 versions claimed, 4 bytes left
    expect(decodeMessage(lying)).toBeNull();
  });
});

describe("the Passnote protocol: inst tokens", () => {
  it("the first token is no restart; a new one is; a seen one (redelivery, replay) changes nothing; the last 8 are remembered", () => {
    const t = new InstTokens();
    const tok = (i: number) => i.toString(16).padStart(16, "0");
    expect(t.observe(tok(0))).toBe("first");
    expect(t.observe(tok(0))).toBe("seen");
    for (let i = 1; i <= 8; i++) expect(t.observe(tok(i))).toBe("restart");
    expect(t.size).toBe(8);
    expect(t.observe(tok(8))).toBe("seen");
    expect(t.observe(tok(1))).toBe("seen");
    expect(t.observe(tok(0))).toBe("restart"); // forgotten: the ninth-oldest
  });
});
