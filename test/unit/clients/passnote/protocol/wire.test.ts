// The Passnote protocol, "Frame encoding" and "Messages": the frame layout, all seven messages, and a
// fail-closed decodeMessage, fuzzed with random bytes, corruptions, truncations and nesting bombs.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Writer } from "../../../../../clients/passnote/protocol/codec";
import { decodeMessage, encodeMessage, MAGIC, type Message } from "../../../../../clients/passnote/protocol/wire";
import { randomBytes } from "../../../../../shared/encoding";

const hlc = "001733140000000-00003-nodeA";
const samples: Message[] = [
  { type: "hello", node: "nodeA" },
  {
    type: "state",
    watermarks: [
      { collection: "notes", watermark: hlc },
      { collection: "empty", watermark: "" },
    ],
  },
  {
    type: "delta",
    collection: "notes",
    records: [
      { key: "k1", value: { title: "hi", tags: ["a", 1, 2.5, null, true] }, is_deleted: false, hlc },
      { key: "k2", value: null, is_deleted: true, hlc, crdt_type: "lww" },
    ],
  },
  { type: "poke" },
  {
    type: "ratchet-hello",
    from: "nodeA",
    to: "nodeB",
    device: "dev1",
    keyTag: Uint8Array.of(0, 1),
    ephemeral: randomBytes(32),
    signature: randomBytes(64),
  },
  { type: "handshake", versions: [1, 2], capabilities: ["recon1", "inst:0123456789abcdef"], deviceKey: new Uint8Array(0) },
  {
    type: "reconcile",
    collection: "notes",
    probes: [{ start: 0, end: 2 ** 53 - 1, depth: 0, count: 10_000, fingerprint: randomBytes(16) }],
    requests: [{ start: 5, end: 9 }],
  },
];

/** Messages whose strings start with U+FEFF: the decoder must keep it. */
const bomSamples: Message[] = [
  { type: "hello", node: "\uFEFFnodeA" },
  { type: "state", watermarks: [{ collection: "\uFEFFnotes", watermark: hlc }] },
  {
    type: "delta",
    collection: "\uFEFFnotes",
    records: [{ key: "\uFEFFk", value: { "\uFEFF": "\uFEFFv" }, is_deleted: false, hlc, crdt_type: "\uFEFFlww" }],
  },
];
// This project's extension messages, from the private tag range, fuzzed like the rest.
const extensionSamples: Message[] = [
  { type: "digest", digest: new Uint8Array(16).fill(0xab) },
  {
    type: "reconcile2",
    collection: "notes",
    ranges: [
      {
        upper: { wall: Number.POSITIVE_INFINITY, prefix: new Uint8Array(0) },
        mode: "fingerprint",
        count: 3,
        fingerprint: new Uint8Array(16).fill(1),
      },
    ],
  },
];
const allSamples = [...samples, ...bomSamples, ...extensionSamples];

describe("the Passnote protocol: frame encoding", () => {
  it("every frame is magic 0xC7 ‖ version 0x02 ‖ type ‖ body; the handshake keeps version 0x01", () => {
    const tags = samples.map((m) => Array.from(encodeMessage(m).subarray(0, 3)));
    expect(tags).toEqual([
      [0xc7, 2, 1],
      [0xc7, 2, 2],
      [0xc7, 2, 3],
      [0xc7, 2, 4],
      [0xc7, 2, 5],
      [0xc7, 1, 6],
      [0xc7, 2, 7],
    ]);
  });

  it("all seven messages round-trip, strings exactly (a leading U+FEFF included)", () => {
    for (const m of allSamples) expect(decodeMessage(encodeMessage(m))).toEqual(m);
  });

  it("wrong version, unknown tag, wrong magic, trailing bytes and a delta over 500 records return null", () => {
    const hello = encodeMessage({ type: "hello", node: "n" });
    expect(decodeMessage(Uint8Array.of(MAGIC, 1, 1, ...hello.subarray(3)))).toBeNull(); // hello as version 1
    expect(decodeMessage(Uint8Array.of(MAGIC, 2, 6, 0, 0, 0))).toBeNull(); // handshake as version 2
    expect(decodeMessage(Uint8Array.of(MAGIC, 2, 8))).toBeNull();
    expect(decodeMessage(Uint8Array.of(0xc6, 2, 4))).toBeNull();
    expect(decodeMessage(Uint8Array.of(MAGIC, 2, 4, 0))).toBeNull();
    const w = new Writer().byte(MAGIC).byte(2).byte(3).string("c").varint(501);
    for (let i = 0; i < 501; i++) w.string("k").byte(0).byte(0).string(hlc);
    expect(decodeMessage(w.finish())).toBeNull();
    expect(() =>
      encodeMessage({ type: "delta", collection: "c", records: Array(501).fill({ key: "k", value: null, is_deleted: false, hlc }) }),
    ).toThrow();
  });

  it("a record with a malformed HLC is refused as a whole frame", () => {
    const w = new Writer().byte(MAGIC).byte(2).byte(3).string("c").varint(1).string("k").byte(0).byte(0).string("yesterday");
    expect(decodeMessage(w.finish())).toBeNull();
  });
});

describe("the Passnote protocol: decodeMessage is fail-closed (fuzz, fixed seed)", () => {
  const never = (bytes: Uint8Array) => {
    let out: unknown;
    expect(() => (out = decodeMessage(bytes))).not.toThrow();
    return out;
  };

  it("random bytes, with and without a valid header, never throw", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), fc.integer({ min: 1, max: 8 }), (body, tag) => {
        never(body);
        const framed = new Uint8Array(body.length + 3);
        framed.set([MAGIC, tag === 6 ? 1 : 2, tag]);
        framed.set(body, 3);
        const m = never(framed) as Message | null;
        if (m) expect(decodeMessage(encodeMessage(m))).toEqual(m);
      }),
      { seed: 42, numRuns: 1500 },
    );
  });

  it("corruptions and truncations of valid frames return a message or null, never throw", () => {
    const frames = allSamples.map(encodeMessage);
    fc.assert(
      fc.property(
        fc.constantFrom(...frames),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
        fc.nat(),
        (frame, flips, cut) => {
          const f = frame.slice();
          for (const [i, b] of flips) f[i % f.length] = b;
          never(f);
          never(f.subarray(0, cut % (f.length + 1)));
          expect(decodeMessage(frame.subarray(0, frame.length - 1))).toBeNull();
        },
      ),
      { seed: 43, numRuns: 1500 },
    );
  });

  it("nesting bombs (deep lists and maps, huge counts) return null quickly", () => {
    const head = new Writer().byte(MAGIC).byte(2).byte(3).string("c").varint(1).string("k").finish();
    const tail = new Writer().byte(0).string(hlc).finish(); // flags, hlc: a whole record once the value ends
    // One level: a list of one item (6, 1) or a map of one entry with the empty key (7, 1, 0).
    const level = (tag: 6 | 7) => (tag === 6 ? [6, 1] : [7, 1, 0]);
    const nested = (depth: number, tag: 6 | 7) => {
      const w = new Writer().raw(head);
      for (let i = 0; i < depth; i++) w.raw(Uint8Array.from(level(tag)));
      return w.byte(0).raw(tail).finish(); // the innermost value: null
    };
    for (const tag of [6, 7] as const) {
      // The bound is exact and really nests: 32 levels inside the value decode, 33 do not.
      const ok = decodeMessage(nested(32, tag));
      expect(ok?.type).toBe("delta");
      let v: unknown = ok?.type === "delta" ? ok.records[0].value : undefined;
      for (let d = 0; d < 32; d++) v = tag === 6 ? (v as unknown[])[0] : (v as Record<string, unknown>)[""];
      expect(v).toBeNull();
      for (const depth of [33, 34, 40, 64]) expect(never(nested(depth, tag))).toBeNull();
    }
    fc.assert(
      fc.property(fc.integer({ min: 33, max: 100_000 }), fc.constantFrom<6 | 7>(6, 7), (depth, tag) => {
        expect(never(nested(depth, tag))).toBeNull();
      }),
      { seed: 44, numRuns: 50 },
    );
    const huge = new Writer()
      .raw(head)
      .byte(6)
      .varint(2n ** 63n)
      .finish();
    expect(never(huge)).toBeNull();
  });
});
