// The SDK's host helper (clients/minca/host.ts) as an account's device uses it: its session note.
import { afterEach, describe, expect, it, vi } from "vitest";
import { makeSpace, newAccount, SESSION_RENEW_BEFORE_SECONDS, SESSION_TTL_SECONDS, writeVersion } from "../../../../clients/minca/host";
import { checkVersion } from "../../../../shared/minca/version";

afterEach(() => vi.useRealTimers());

describe("the Minca protocol §1.2: the session note", () => {
  it("carries exp = now + ttl, and is renewed (same key, same terms, a later exp) before it runs out", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const t0 = Date.parse("2026-12-02T12:00:00Z");
    vi.setSystemTime(t0);
    const acct = await newAccount();
    expect(acct.note.payload.exp).toBe(t0 / 1000 + SESSION_TTL_SECONDS);
    const s = makeSpace(acct, "public");
    const first = await writeVersion(acct, s, { collection: "c", key: "a", body: {} });
    expect(first.note).toEqual(acct.note);
    // still well within its time: the same note
    vi.setSystemTime(t0 + (SESSION_TTL_SECONDS - SESSION_RENEW_BEFORE_SECONDS - 1) * 1000);
    expect((await writeVersion(acct, s, { collection: "c", key: "b", body: {} })).note).toEqual(first.note);
    // within the renewal margin: a new note before the old one runs out
    const later = t0 + (SESSION_TTL_SECONDS - SESSION_RENEW_BEFORE_SECONDS + 1) * 1000;
    vi.setSystemTime(later);
    const renewed = await writeVersion(acct, s, { collection: "c", key: "c", body: {} });
    expect(renewed.note.payload).toMatchObject({
      aud: first.note.payload.aud,
      cmd: "/",
      sub: acct.root.did,
      exp: Math.floor(later / 1000) + SESSION_TTL_SECONDS,
    });
    expect(renewed.note.sig).not.toBe(first.note.sig);
    expect(
      await checkVersion(JSON.parse(JSON.stringify(renewed)), { space: s.id, constitution: s.constitution, ownMachinery: false }),
    ).toMatchObject({ ok: true });
  });
});
