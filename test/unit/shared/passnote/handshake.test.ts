// Seed 001 "Connection handshake": version negotiation and inst tokens.
import { describe, expect, it } from "vitest";
import { InstTokens, instToken, makeHandshake, negotiateVersion } from "../../../../shared/passnote/handshake";

describe("seed 001: version negotiation", () => {
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

describe("seed 001: inst tokens", () => {
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
