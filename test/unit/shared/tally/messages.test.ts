import { describe, expect, it } from "vitest";
import { signalFrame, storedEnvelope } from "../../../../shared/tally/messages";

describe("frames the relay builds from raw text", () => {
  it("6.2: a stored envelope is the text as sent, with only queued_at added", () => {
    const raw = '{"type":"peer_envelope","id":"x","n":1.50,"e":"\\u00e9"}';
    const at = new Date("2026-12-02T00:00:00.000Z");
    expect(storedEnvelope(raw, at)).toBe('{"type":"peer_envelope","id":"x","n":1.50,"e":"\\u00e9","queued_at":"2026-12-02T00:00:00.000Z"}');
  });

  it("6.2: an envelope that already carries queued_at is stored unchanged", () => {
    const raw = '{"id":"x","queued_at":"mine"}';
    expect(storedEnvelope(raw, new Date())).toBe(raw);
  });

  it("a webrtc_signal names the sender's user and device and keeps the signal's JSON as sent", () => {
    const frame = signalFrame("npub1a", "00112233aabbccdd", '{"sdp":"v=0","n":1.0}');
    expect(frame).toBe(
      '{"type":"webrtc_signal","peer_user_id":"npub1a","peer_device_id":"00112233aabbccdd","signal":{"sdp":"v=0","n":1.0}}',
    );
    expect(JSON.parse(frame).signal).toEqual({ sdp: "v=0", n: 1 });
  });
});
