// docs/hosting.md, "Quotas", and docs/hostile.md, "Joins that await": a pass for a new space is
// counted against minca_host.max_spaces_per_account before the account awaits the space's
// carry, so two passes taken alongside at one below the bound cannot both be carried. The space
// calls are held by the test (the account's peers), so that the race happens every time.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MincaAccount } from "../../durable-objects/minca-host/minca-account";
import { bytesToHex, randomBytes } from "../../shared/encoding";
import { MINCA_HOST_LIMITS } from "../../shared/limits";

describe("passes taken alongside", () => {
  it(`at one below max_spaces_per_account (${MINCA_HOST_LIMITS.max_spaces_per_account}), two passes of new spaces whose carry is awaited together: one is carried, the other too_many_spaces`, async () => {
    const did = `did:key:z${bytesToHex(randomBytes(16))}`;
    const stub = env.MINCA_ACCOUNT.get(env.MINCA_ACCOUNT.idFromName(did));
    const out = await runInDurableObject(stub, async (account: MincaAccount) => {
      const a = account as any;
      a.schema.ensure();
      for (let i = 0; i < MINCA_HOST_LIMITS.max_spaces_per_account - 1; i++) {
        a.sql.exec("INSERT INTO passes (space, key, at, visibility) VALUES (?, ?, 1, 'private')", `held-${i}`, `key-${i}`);
      }
      const records = a.records;
      let release!: () => void;
      const gate = new Promise<void>((r) => {
        release = r;
      });
      records.peers = {
        ...records.peers,
        space: () => ({
          async carry() {
            await gate;
            return true;
          },
        }),
      };
      const pass = (space: string) =>
        records.apply(
          { kind: "pass", space, constitution: { visibility: "private" }, own: false, at: 2 },
          { key: `pass-${space}`, author: "author", collection: "passes", at: 2 },
          { current: false },
        );
      const both = Promise.all([pass("new-a"), pass("new-b")]);
      release();
      const verdicts = await both;
      const count = a.sql.exec("SELECT COUNT(*) AS n FROM passes").one().n as number;
      return { verdicts, count };
    });
    expect(out.verdicts.filter((v: unknown) => v === null)).toHaveLength(1);
    expect(out.verdicts.find((v: any) => v !== null)?.reason).toBe("too_many_spaces");
    expect(out.count).toBe(MINCA_HOST_LIMITS.max_spaces_per_account);
  });
});
