// The account home's refusals (seed 002 §2.5) with its default connection store: they run
// without the caller passing any hook.
import { describe, expect, it } from "vitest";
import { MemoryBus } from "../../../../clients/minca/memory-bus";
import { connectionsOf } from "../../../../shared/minca/connections";
import { newP256Key } from "../../../../shared/minca/es256";
import { programAndHome } from "../../../helpers/minca";

describe("seed §2.5: the home's refusals always run (a default connection store)", () => {
  it("a key another kind of connection holds, and the home's own key, are refused with no hook passed; a granted code connection is remembered", async () => {
    const bus = new MemoryBus();
    const first = await programAndHome(bus.join);
    const got = await first.program.outcome;
    if (!got.ok) throw new Error("the first exchange failed");
    const audience = (got as unknown as { grant: { note: { payload: { aud: string } } } }).grant.note.payload.aud;
    expect(connectionsOf(first.account).holder(audience)).toMatchObject({ kind: "code" });

    // the same account's home, asked for a key an app connection already holds
    const held = await newP256Key(true);
    connectionsOf(first.account).remember({ audience: held.did, kind: "app", origin: "https://app.example" });
    const second = await programAndHome(bus.join, { program: { key: held }, home: { account: first.account } });
    expect(await second.program.outcome).toMatchObject({ ok: false, reason: "denied" });
    expect(second.shown).toEqual([]);

    // asked for the home's own session key
    const session = await newP256Key(true);
    connectionsOf(first.account).sessionDid = session.did;
    const third = await programAndHome(bus.join, { program: { key: session }, home: { account: first.account } });
    expect(await third.program.outcome).toMatchObject({ ok: false, reason: "denied", message: expect.stringMatching(/own key/) });
  });
});
