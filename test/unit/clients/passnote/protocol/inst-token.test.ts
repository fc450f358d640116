// The Passnote protocol, "Connection handshake", inst tokens: any token not seen before from a peer
// means that peer restarted, the first token after token-less handshakes included; a peer that
// sends no token is never reset.
import { describe, expect, it } from "vitest";
import { SyncEngine } from "../../../../../clients/passnote/protocol/sync";
import { makeHandshake } from "../../../../../clients/passnote/protocol/handshake";
import { sealFrame } from "../../../../../clients/passnote/protocol/seal";
import { encodeMessage } from "../../../../../clients/passnote/protocol/wire";
import { randomBytes } from "../../../../../shared/encoding";

function engine() {
  const key = randomBytes(32);
  const e = new SyncEngine({ node: "alice", key, transmit: async () => undefined, selfId: () => "0000000000000001" });
  const restarted: string[] = [];
  e.on("restarted", (p) => void restarted.push(p));
  const handshake = (inst?: string) => e.receive("0000000000000002", sealFrame(key, encodeMessage(makeHandshake({ inst }))));
  return { e, restarted, handshake };
}

describe("the Passnote protocol: inst tokens", () => {
  it("a token seen for the first time after token-less handshakes means the peer restarted", async () => {
    const { restarted, handshake } = engine();
    await handshake(undefined);
    await handshake("0123456789abcdef");
    expect(restarted).toEqual(["0000000000000002"]);
  });

  it("no token: no reset", async () => {
    const { e, restarted, handshake } = engine();
    await handshake(undefined);
    await handshake(undefined);
    await handshake(undefined);
    expect(restarted).toEqual([]);
    expect(e.peerInfo("0000000000000002")?.version).toBe(2);
  });

  it("a first token from a peer that never spoke before is no restart", async () => {
    const { restarted, handshake } = engine();
    await handshake("0123456789abcdef");
    await handshake("0123456789abcdef");
    expect(restarted).toEqual([]);
  });
});
