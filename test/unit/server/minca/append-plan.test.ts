// The append pipeline's plan (server/minca/append-plan.ts): each version's fate, step by step.
import { describe, expect, it } from "vitest";
import {
  answerOf,
  afterWrite,
  freshOf,
  planArrivals,
  refundsOf,
  refuseIn,
  refuseRevoked,
  sharesOf,
  withPayers,
} from "../../../../server/minca/append-plan";
import type { Version, VersionCheck } from "../../../../shared/minca/version";
import { revokeKey } from "../../../../shared/minca/revoke";

const v = (id: string, iss: string): Version => ({ id, author: "did:key:author", note: { payload: { iss } } }) as unknown as Version;
const ok = (id: string, iss = "did:key:a"): VersionCheck => ({ ok: true, version: v(id, iss) });

describe("the append plan", () => {
  it("a version already held answers its first seq; one repeated in the request is planned once and answered alike", () => {
    const plan = planArrivals(
      [ok("b1"), ok("b2"), ok("b1"), { ok: false, reason: "bad_signature", detail: "x", id: "b9" }],
      [1, 2, 3, 4].map((n) => ({ raw: "{}", bytes: n })),
      (id) => (id === "b2" ? 7 : undefined),
    );
    expect(freshOf(plan).map((f) => f.index)).toEqual([0]);
    const written = afterWrite(withPayers(plan, sharesOf(plan, ["did:key:a"]), ["did:key:a"]), new Map([[0, { seq: 8, added: true }]]));
    expect(answerOf(written)).toEqual([
      { id: "b1", accepted: true, seq: 8 },
      { id: "b2", accepted: true, seq: 7 },
      { id: "b1", accepted: true, seq: 8 },
      { id: "b9", accepted: false, reason: "bad_signature", detail: "x" },
    ]);
  });

  it("a version is charged to its root when that account carries the space, else to the carriers in turn; what is refused after charging is given back", () => {
    const plan = planArrivals(
      [ok("b1", "did:key:a"), ok("b2", "did:key:z")],
      [
        { raw: "{}", bytes: 10 },
        { raw: "{}", bytes: 5 },
      ],
      () => undefined,
    );
    const shares = sharesOf(plan, ["did:key:a", "did:key:b"]);
    expect(shares.map((s) => [s.candidates, s.bytes])).toEqual([
      [["did:key:a"], 10],
      [["did:key:a", "did:key:b"], 5],
    ]);
    const refused = refuseIn(plan, new Map([[1, { reason: "revoked" as const, detail: "r" }]]));
    const written = afterWrite(refused, new Map([[0, { seq: 1, added: true }]]));
    expect(
      refundsOf(
        [
          { account: "did:key:a", share: shares[0] },
          { account: "did:key:b", share: shares[1] },
        ],
        written,
      ),
    ).toEqual([{ account: "did:key:b", versions: 1, bytes: 5 }]);
  });

  it("an unsettled plan is never answered", () => {
    expect(() => answerOf(planArrivals([ok("b1")], [{ raw: "{}", bytes: 1 }], () => undefined))).toThrow();
  });

  it("a revoke's cutoff vouches for what the key wrote: a version at or before it is accepted whenever it arrives, one after it (or any, without a cutoff) is refused; the key's revoke of itself never is", () => {
    const at = (id: string, t: number, extra: Partial<Version> = {}): VersionCheck => ({
      ok: true,
      version: { ...v(id, "did:key:a"), at: t, collection: "c", key: id, ...extra } as Version,
    });
    const checks = [at("b1", 100), at("b2", 101), at("b3", 500, { collection: "sys.revoke", key: revokeKey("did:key:author") })];
    const plan = planArrivals(
      checks,
      checks.map(() => ({ raw: "{}", bytes: 1 })),
      () => undefined,
    );
    const refused = (cutoff: number | null) =>
      refuseRevoked(plan, new Map([["did:key:a", [{ did: "did:key:author", cutoff }]]])).entries.map((e) => e.kind);
    expect(refused(100)).toEqual(["fresh", "refused", "fresh"]);
    expect(refused(null)).toEqual(["refused", "refused", "fresh"]);
    expect(refuseRevoked(plan, new Map()).entries.map((e) => e.kind)).toEqual(["fresh", "fresh", "fresh"]);
  });
});
