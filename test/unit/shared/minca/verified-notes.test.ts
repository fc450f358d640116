// A host verifies a note once and each version's own signature every time (docs/hosting.md, "A
// version's way"): the notes it remembers as verified, and the keys it keeps decoded, must never
// let a version through that the full check would refuse.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { newAccount, sessionNote, writeVersion, makeSpace } from "../../../../clients/minca/host";
import { base64urlDecode, base64urlEncode } from "../../../../shared/encoding";
import { isP256DidKey, p256FromDidKey } from "../../../../shared/minca/did-key";
import { newP256Key } from "../../../../shared/minca/es256";
import { digestMincaId, mincaId } from "../../../../shared/minca/id";
import { verifyNote } from "../../../../shared/minca/note";
import { checkVersion, versionId } from "../../../../shared/minca/version";
import { RecentMap } from "../../../../shared/recent-map";

const gate = (space: ReturnType<typeof makeSpace>) => ({ space: space.id, constitution: space.constitution, ownMachinery: false });
const reason = async (v: unknown, space: ReturnType<typeof makeSpace>) => {
  const r = await checkVersion(JSON.parse(JSON.stringify(v)), gate(space));
  return r.ok ? "accepted" : r.reason;
};
/** The same signature with one bit of its last byte flipped. */
const flipped = (sig: string) => {
  const b = base64urlDecode(sig);
  b[b.length - 1] ^= 1;
  return base64urlEncode(b);
};

describe("verified notes: a note is verified once, what it grants is checked every time", () => {
  it("a note remembered as verified stands only for its exact bytes: the same note with a changed payload or signature is still refused", async () => {
    const acct = await newAccount();
    const s = makeSpace(acct, "public");
    const v = await writeVersion(acct, s, { collection: "c", key: "k", body: { a: 1 } });
    expect(await reason(v, s)).toBe("accepted");
    expect(await verifyNote(v.note)).toMatchObject({ ok: true });

    // The remembered note's signature on a widened payload (another command) does not verify.
    const widened = { ...v.note, payload: { ...v.note.payload, cmd: "/record" } };
    expect(await verifyNote(widened)).toEqual({ ok: false, reason: "the note's signature does not verify" });
    // Nor does the same payload under a changed signature.
    expect(await verifyNote({ ...v.note, sig: flipped(v.note.sig) })).toEqual({
      ok: false,
      reason: "the note's signature does not verify",
    });

    // A version carrying the forged note is refused as bad_note even though its own signature is good.
    const forged = await writeVersion({ ...acct, note: widened as typeof acct.note }, s, { collection: "c", key: "k2" });
    expect(await reason(forged, s)).toBe("bad_note");
    // Every time, not only the first.
    expect(await reason(forged, s)).toBe("bad_note");
  });

  it("a note remembered as verified is not trusted for another key: a version by a key the note is not made out to is refused", async () => {
    const acct = await newAccount();
    const s = makeSpace(acct, "public");
    expect(await reason(await writeVersion(acct, s, { collection: "c", key: "k" }), s)).toBe("accepted");
    // Another session key writing under the remembered note (made out to acct.session).
    const thief = { ...acct, session: await newP256Key() };
    expect(await reason(await writeVersion(thief, s, { collection: "c", key: "k" }), s)).toBe("note_audience");
  });

  it("a note remembered as verified is not trusted for another space: its subject and the space's founders are checked every time", async () => {
    const acct = await newAccount();
    const s = makeSpace(acct, "public");
    const narrow = { ...acct, note: await sessionNote(acct.root, acct.session.did, "/", `space:${s.id}`) };
    expect(await reason(await writeVersion(narrow, s, { collection: "c", key: "k" }), s)).toBe("accepted");
    const elsewhere = makeSpace(acct, "public");
    expect(elsewhere.id).not.toBe(s.id);
    expect(await reason(await writeVersion(narrow, elsewhere, { collection: "c", key: "k" }), elsewhere)).toBe("note_subject");
    // A space the note's root did not found: the root's own note, remembered, does not make it one.
    const other = await newAccount();
    const theirs = makeSpace(other, "public");
    expect(await reason(await writeVersion(acct, s, { collection: "c", key: "k" }), s)).toBe("accepted");
    expect(await reason(await writeVersion(acct, theirs, { collection: "c", key: "k" }), theirs)).toBe("not_founder");
  });

  it("each version's own signature is verified every time: a version accepted once, its signature changed, is refused", async () => {
    const acct = await newAccount();
    const s = makeSpace(acct, "public");
    const v = await writeVersion(acct, s, { collection: "c", key: "k" });
    expect(await reason(v, s)).toBe("accepted");
    expect(await reason({ ...v, sig: flipped(v.sig) }, s)).toBe("bad_signature");
    // A re-hashed version under the same (remembered) note, not re-signed.
    const changed = { ...v, key: "k2" } as Record<string, unknown>;
    changed.id = versionId(changed);
    expect(await reason(changed, s)).toBe("bad_signature");
    expect(await reason(v, s)).toBe("accepted");
  });

  it("keys kept decoded: a did that decoded once does not make a did one character away valid (fuzz)", async () => {
    const key = await newP256Key();
    expect(isP256DidKey(key.did)).toBe(true);
    const point = p256FromDidKey(key.did);
    // What a caller does to the bytes it was handed does not change what the next caller gets.
    point.fill(0);
    expect(p256FromDidKey(key.did)).not.toEqual(point);
    const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    fc.assert(
      fc.property(fc.nat(key.did.length - 1), fc.constantFrom(...alphabet), (i, c) => {
        const mutated = key.did.slice(0, i) + c + key.did.slice(i + 1);
        if (mutated === key.did) return;
        // Another did decodes to its own point or fails; it is never answered with the cached one.
        let other: Uint8Array | null = null;
        try {
          other = p256FromDidKey(mutated);
        } catch {}
        if (other !== null) expect(other).not.toEqual(p256FromDidKey(key.did));
        expect(isP256DidKey(mutated)).toBe(other !== null);
      }),
      { seed: 35, numRuns: 300 },
    );
  });
});

describe("a version's id hashed by WebCrypto", () => {
  it("is the id the JavaScript hash gives, for any bytes (fuzz)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 4_096 }), async (bytes) => {
        expect(await digestMincaId(bytes)).toBe(mincaId(bytes));
      }),
      { seed: 35, numRuns: 200 },
    );
  });
});

describe("RecentMap: the bound of what an isolate remembers", () => {
  it("holds at most its bound, dropping the least recently used entry", () => {
    const m = new RecentMap<string, number>(3);
    m.set("a", 1);
    m.set("b", 2);
    m.set("c", 3);
    expect(m.get("a")).toBe(1); // a is now the newest
    m.set("d", 4); // drops b, the least recently used
    expect(m.size).toBe(3);
    expect(m.get("b")).toBeUndefined();
    expect([m.get("a"), m.get("c"), m.get("d")]).toEqual([1, 3, 4]);
    m.set("a", 5); // setting again replaces, not grows
    expect(m.size).toBe(3);
    expect(m.get("a")).toBe(5);
  });

  it("stays within its bound whatever is set (fuzz)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(fc.tuple(fc.string({ maxLength: 3 }), fc.boolean())), (max, ops) => {
        const m = new RecentMap<string, number>(max);
        const model: string[] = []; // least recent first
        for (const [k, isSet] of ops) {
          if (isSet) {
            m.set(k, 1);
            if (model.includes(k)) model.splice(model.indexOf(k), 1);
            model.push(k);
            if (model.length > max) model.shift();
          } else {
            const had = model.includes(k);
            expect(m.get(k) !== undefined).toBe(had);
            if (had) {
              model.splice(model.indexOf(k), 1);
              model.push(k);
            }
          }
          expect(m.size).toBe(model.length);
          expect(m.size).toBeLessThanOrEqual(max);
        }
      }),
      { seed: 35 },
    );
  });
});
