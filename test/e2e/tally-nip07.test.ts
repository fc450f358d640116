// A client whose key is in a browser extension (NIP-07's window.nostr), against the real relay:
// it registers (the relay checks the signed challenge), sends and receives, its messages carry an
// authorship proof by its key, and receipts go both ways; the provider is asked for nothing but
// getPublicKey, signEvent and nip44.encrypt / decrypt.
import { afterAll, describe, expect, inject, it } from "vitest";
import { nip07Signer, TallyClient, type InnerMessage } from "../../clients/tally/index";
import { PROOF_EVENT_KIND, verifyInner } from "../../shared/tally/proof";
import { device, newUser, wsBase } from "../helpers/tally";
import { NIP07_METHODS, testProvider } from "../helpers/nip07";
import { waitFor } from "../helpers/wait";

const relay = inject("relayUrl");
const open: TallyClient[] = [];
afterAll(async () => {
  for (const c of open.splice(0)) await c.close();
});

describe("a NIP-07 signer against the real relay", () => {
  it("register, send, receive and proof with the key in a NIP-07 provider; the provider is asked for nothing else", async () => {
    const alice = newUser();
    const bob = newUser();
    const p = testProvider(alice.secretKey, (n) => n % 3); // an extension answers in its own time
    const a = await TallyClient.create({ relayUrl: wsBase(relay), signer: nip07Signer(p.provider), store: "memory" });
    open.push(a);
    const atA: InnerMessage[] = [];
    a.on("message", (m) => void atA.push(m));
    await a.connect();
    expect(a.npub).toBe(alice.npub);

    // Sent while bob is offline: stored at the relay, delivered when he registers.
    const first = await a.sendTracked(bob.npub, "note", { n: 1 });
    expect((await first.queued).status).toBe("stored");
    const atB: InnerMessage[] = [];
    const b = await device(relay, bob, {}, (c) => c.on("message", (m) => void atB.push(m)));
    open.push(b);
    await waitFor(() => atB.length === 1, { what: "alice's message at bob" });
    expect(atB[0]).toMatchObject({ from_user_id: alice.npub, payload: { n: 1 } });
    expect(verifyInner(atB[0])).toBe(true);
    const proof = (atB[0] as unknown as { proof: { event: { kind: number; pubkey: string } } }).proof.event;
    expect(proof).toMatchObject({ kind: PROOF_EVENT_KIND, pubkey: alice.hex });
    expect(await first.receipt).toMatchObject({ result: "processed" });

    // And back: opened through the provider, receipted (sealed through it too).
    const back = await b.sendTracked(alice.npub, "note", { n: 2 });
    await waitFor(() => atA.length === 1, { what: "bob's message at alice" });
    expect(atA[0]).toMatchObject({ from_user_id: bob.npub, payload: { n: 2 } });
    expect(await back.receipt).toMatchObject({ result: "processed" });
    expect((await a.history()).entries.map((e) => e.payload)).toEqual([{ n: 2 }, { n: 1 }]);

    await a.idle();
    expect([...new Set(p.reads)].filter((k) => !NIP07_METHODS.includes(k))).toEqual([]);
    expect(new Set(p.calls)).toEqual(new Set(["getPublicKey", "signEvent", "nip44.encrypt", "nip44.decrypt"]));
  });
});
