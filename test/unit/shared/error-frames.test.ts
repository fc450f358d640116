// clients read relay errors leniently. A newer relay may send an error code this SDK
// does not list (ERROR_CODES); the frame must still parse, so it reaches the app (Tally's
// relay_error, a Passnote transport's errors) instead of being dropped as invalid.
import { describe, expect, it } from "vitest";
import { ERROR_CODES } from "../../../shared/errors";
import { roomServerMessageSchema } from "../../../shared/passnote/messages";
import { serverMessageSchema } from "../../../shared/tally/messages";

const future = { type: "error", code: "a_code_from_a_newer_relay", message: "m" };

describe("an error frame with a code this client does not know", () => {
  it("is not one of ERROR_CODES (the premise)", () => {
    expect((ERROR_CODES as readonly string[]).includes(future.code)).toBe(false);
  });

  it("parses as a Tally server message, code kept", () => {
    expect(serverMessageSchema.parse(future)).toMatchObject({ type: "error", code: future.code });
  });

  it("parses as a Passnote room message, code kept", () => {
    expect(roomServerMessageSchema.parse(future)).toMatchObject({ type: "error", code: future.code });
  });
});
