import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { verifyEvent as ntVerifyEvent } from "nostr-tools/pure";
import { AUTH_EVENT_KIND, AUTH_MAX_SKEW_SECONDS, checkAuthEvent, makeAuthEvent } from "../../../../shared/tally/auth";
import { finalizeEvent, signatureValid } from "../../../../shared/nostr/event";
import { bytesToHex, hexToBytes } from "../../../../shared/encoding";
import { generateSecretKey, getPublicKeyHex } from "../../../../shared/tally/keys";

const sk = generateSecretKey();
const pubkeyHex = getPublicKeyHex(sk);
const challenge = "c0ffee".repeat(10) + "abcd";
const relayUrl = "wss://relay.example/tally/v1/npub1abc";
const now = 1_800_000_000;
const expectBase = { challenge, pubkeyHex, relayUrlOk: (u: string) => u === relayUrl, nowSeconds: now };

function auth(over: Partial<{ kind: number; created_at: number; tags: string[][]; content: string }> = {}, key = sk) {
  return finalizeEvent(
    {
      kind: AUTH_EVENT_KIND,
      created_at: now,
      tags: [
        ["relay", relayUrl],
        ["challenge", challenge],
      ],
      content: "",
      ...over,
    },
    key,
  );
}

describe("register authentication (kind 22242)", () => {
  it("makeAuthEvent builds a valid NIP-01 event with the relay and challenge tags", () => {
    const ev = makeAuthEvent({ secretKey: sk, challenge, relayUrl, createdAt: now });
    expect(ev.kind).toBe(22242);
    expect(ev.tags).toEqual([
      ["relay", relayUrl],
      ["challenge", challenge],
    ]);
    expect(ev.content).toBe("");
    expect(ev.created_at).toBe(now);
    expect(ev.pubkey).toBe(pubkeyHex);
    expect(ntVerifyEvent({ ...ev })).toBe(true);
    expect(checkAuthEvent(ev, expectBase)).toEqual({ ok: true });
  });

  it("makeAuthEvent defaults created_at to the current time", () => {
    const ev = makeAuthEvent({ secretKey: sk, challenge, relayUrl });
    expect(Math.abs(ev.created_at - Date.now() / 1000)).toBeLessThan(5);
  });

  it("a kind other than 22242 is wrong_kind", () => {
    expect(checkAuthEvent(auth({ kind: 1 }), expectBase)).toEqual({ ok: false, reason: "wrong_kind" });
  });

  it("a missing or different challenge is bad_challenge", () => {
    expect(checkAuthEvent(auth({ tags: [["relay", relayUrl]] }), expectBase)).toEqual({ ok: false, reason: "bad_challenge" });
    expect(
      checkAuthEvent(
        auth({
          tags: [
            ["relay", relayUrl],
            ["challenge", challenge + "0"],
          ],
        }),
        expectBase,
      ),
    ).toEqual({ ok: false, reason: "bad_challenge" });
  });

  it("a missing relay tag, a rejected relay URL or a throwing URL check is bad_relay", () => {
    expect(checkAuthEvent(auth({ tags: [["challenge", challenge]] }), expectBase)).toEqual({ ok: false, reason: "bad_relay" });
    expect(
      checkAuthEvent(
        auth({
          tags: [
            ["relay", "wss://evil.example"],
            ["challenge", challenge],
          ],
        }),
        expectBase,
      ),
    ).toEqual({ ok: false, reason: "bad_relay" });
    const throwing = {
      ...expectBase,
      relayUrlOk: () => {
        throw new Error("boom");
      },
    };
    expect(checkAuthEvent(auth(), throwing)).toEqual({ ok: false, reason: "bad_relay" });
  });

  it("created_at within 600 s either way is accepted; 601 s is stale", () => {
    expect(AUTH_MAX_SKEW_SECONDS).toBe(600);
    expect(checkAuthEvent(auth({ created_at: now - 600 }), expectBase)).toEqual({ ok: true });
    expect(checkAuthEvent(auth({ created_at: now + 600 }), expectBase)).toEqual({ ok: true });
    expect(checkAuthEvent(auth({ created_at: now - 601 }), expectBase)).toEqual({ ok: false, reason: "stale" });
    expect(checkAuthEvent(auth({ created_at: now + 601 }), expectBase)).toEqual({ ok: false, reason: "stale" });
  });

  it("an event signed by another key is wrong_pubkey", () => {
    expect(checkAuthEvent(auth({}, generateSecretKey()), expectBase)).toEqual({ ok: false, reason: "wrong_pubkey" });
  });

  it("an id that does not match the event is bad_id; a forged signature is bad_signature", () => {
    const ev = auth();
    expect(checkAuthEvent({ ...ev, id: "0".repeat(64) }, expectBase)).toEqual({ ok: false, reason: "bad_id" });
    const other = auth({ created_at: now + 1 });
    expect(checkAuthEvent({ ...ev, sig: other.sig }, expectBase)).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("the signature is checked once the id is: every bit of it counts, and a signature that is not a point is bad_signature (fuzzed)", () => {
    const ev = auth();
    expect(checkAuthEvent(ev, expectBase)).toEqual({ ok: true });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 1, max: 255 }), (at, flip) => {
        const sig = hexToBytes(ev.sig);
        sig[at % 64] ^= flip;
        expect(checkAuthEvent({ ...ev, sig: bytesToHex(sig) }, expectBase)).toEqual({ ok: false, reason: "bad_signature" });
      }),
      { numRuns: 50 },
    );
    expect(checkAuthEvent({ ...ev, sig: "f".repeat(128) }, expectBase)).toEqual({ ok: false, reason: "bad_signature" });
    expect(signatureValid({ ...ev, pubkey: "0".repeat(64) })).toBe(false);
  });

  it("a replayed event for an older challenge is rejected", () => {
    const ev = auth();
    expect(checkAuthEvent(ev, { ...expectBase, challenge: "f".repeat(64) })).toEqual({ ok: false, reason: "bad_challenge" });
  });

  it("non-events are malformed, and checkAuthEvent never throws", () => {
    expect(checkAuthEvent(null, expectBase)).toEqual({ ok: false, reason: "malformed" });
    expect(checkAuthEvent({ ...auth(), sig: "zz" }, expectBase)).toEqual({ ok: false, reason: "malformed" });
    fc.assert(
      fc.property(fc.anything(), (v) => {
        const r = checkAuthEvent(v, expectBase);
        expect(r).toEqual({ ok: false, reason: "malformed" });
      }),
      { numRuns: 300 },
    );
  });
});
