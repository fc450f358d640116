// The account home's refusals (the Minca protocol §2.5) with its default connection store: they run
// without the caller passing any hook.
import { describe, expect, it } from "vitest";
import { MemoryBus } from "../../../../../clients/minca/memory-bus";
import { connectionsOf } from "../../../../../clients/minca/protocol/connections";
import { newP256Key } from "../../../../../shared/minca/es256";
import { programAndHome } from "../../../../helpers/minca";

describe("the Minca protocol §2.5: the home's refusals always run (a default connection store)", () => {
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

describe("the Minca protocol §2.10: the home never grants to its own session key", () => {
  it("an account that names its session key has it refused with no option or store set by the caller", async () => {
    const bus = new MemoryBus();
    const session = await newP256Key(true);
    const { newAccount } = await import("../../../../helpers/minca");
    const account = { ...(await newAccount()), session };
    const asked = await programAndHome(bus.join, { program: { key: session }, home: { account } });
    expect(await asked.program.outcome).toMatchObject({ ok: false, reason: "denied", message: expect.stringMatching(/own key/) });
    expect(asked.shown).toEqual([]);
  });
});

describe("the Minca protocol §2.5 step 4: a lifetime outside the home's bounds is denied at once", () => {
  for (const days of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
    it(`days = ${days}: the program hears a denial right after the person answers, and no grant is made`, async () => {
      const bus = new MemoryBus();
      let answeredAt = 0;
      const pair = await programAndHome(bus.join, {
        decide: () => {
          answeredAt = Date.now();
          return { allow: true, days };
        },
      });
      expect(await pair.program.outcome).toMatchObject({ ok: false, reason: "denied", message: expect.stringMatching(/lifetime/) });
      expect(Date.now() - answeredAt).toBeLessThan(2_000); // well before the program's 8 s timeout
      expect(pair.homeEvents.some((e) => e.kind === "state" && e.state === "answered")).toBe(false);
    });
  }
});
