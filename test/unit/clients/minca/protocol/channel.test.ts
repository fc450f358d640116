import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { randomBytes } from "../../../../../shared/encoding";
import { channelKeys, commitment, keepsCommitment, newPoint, open, seal } from "../../../../../clients/minca/protocol/channel";

function exchange() {
  const secret = randomBytes(16);
  const home = newPoint();
  const program = newPoint();
  const atHome = channelKeys(secret, home.secret, program.point, home.point, program.point);
  const atProgram = channelKeys(secret, program.secret, home.point, home.point, program.point);
  return { secret, home, program, atHome, atProgram };
}

describe("the code channel (docs/minca-rooms.md profile)", () => {
  it("both ends derive the same keys and six-digit check; the two directions differ", () => {
    const { atHome, atProgram } = exchange();
    expect(atHome).toEqual(atProgram);
    expect(atHome.check).toMatch(/^\d{6}$/);
    expect(atHome.home).not.toEqual(atHome.program);
  });

  it("another code gives another channel, with the same points", () => {
    const { home, program, atHome } = exchange();
    const other = channelKeys(randomBytes(16), home.secret, program.point, home.point, program.point);
    expect(other.home).not.toEqual(atHome.home);
  });

  it("a point that gives no shared secret (all zero) is refused", () => {
    const { secret, home, program } = exchange();
    expect(() => channelKeys(secret, home.secret, new Uint8Array(32), home.point, program.point)).toThrow();
  });

  it("a commitment holds only for its own point", () => {
    const a = newPoint();
    const b = newPoint();
    expect(keepsCommitment(a.point, commitment(a.point))).toBe(true);
    expect(keepsCommitment(b.point, commitment(a.point))).toBe(false);
  });

  it("a sealed message opens only as its own type and number, with its own direction's key", () => {
    const { atHome } = exchange();
    const sealed = seal(atHome.home, "code:answer", 2, { grant: { v: 2 } });
    expect(open(atHome.home, "code:answer", 2, sealed)).toEqual({ grant: { v: 2 } });
    expect(open(atHome.home, "code:answer", 1, sealed)).toBeNull();
    expect(open(atHome.home, "code:heard", 2, sealed)).toBeNull();
    expect(open(atHome.program, "code:answer", 2, sealed)).toBeNull();
  });

  it("fuzz: opening arbitrary payloads never throws and opens nothing", () => {
    const { atHome } = exchange();
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.base64String(), fc.jsonValue()), (p) => {
        expect(open(atHome.home, "code:home", 0, p)).toBeNull();
      }),
      { numRuns: 500 },
    );
  });
});
