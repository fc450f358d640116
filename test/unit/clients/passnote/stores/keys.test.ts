import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeKeys, encodeKeys, wrappingKeySeal } from "../../../../../clients/passnote/stores/keys";
import { fromRow, toRow } from "../../../../../clients/passnote/stores/adapter";
import { foundGroup } from "../../../../../clients/passnote/protocol/roster";

describe("stored keys and rows: decoders of what a database holds", () => {
  it("keys round-trip, sealed and opened; a changed blob or another wrapping key does not open", async () => {
    const id = foundGroup();
    const seal = wrappingKeySeal(new Uint8Array(32).fill(1));
    const sealed = await seal.seal(encodeKeys({ identity: id }));
    expect(decodeKeys(await seal.open(sealed))).toEqual({ identity: id });
    sealed[30] ^= 1;
    await expect(seal.open(sealed)).rejects.toThrow(/do not open/);
    await expect(wrappingKeySeal(new Uint8Array(32)).open(await seal.seal(encodeKeys({ key: new Uint8Array(32) })))).rejects.toThrow(
      /do not open/,
    );
  });

  it("fuzz: any bytes given as keys decode to keys or throw the one plain error", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          fc.json().map((j) => new TextEncoder().encode(j)),
        ),
        (bytes) => {
          try {
            const k = decodeKeys(bytes);
            expect("key" in k || "identity" in k).toBe(true);
          } catch (e) {
            expect((e as Error).message).toMatch(/not readable/);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it("fuzz: a row with any value bytes reads back as its record or throws a plain Error naming it", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (value) => {
        const row = { ...toRow("notes", { key: "k", value: 1, is_deleted: false, hlc: "000000000001000-00000-n" }), value };
        try {
          fromRow(row);
        } catch (e) {
          expect((e as Error).message).toMatch(/notes\/k/);
        }
      }),
      { numRuns: 500 },
    );
  });
});
