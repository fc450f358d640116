// WebRTC roles for a direct channel (the Tally protocol sections 6.3 and 13.1): "perfect negotiation",
// where both ends may offer at once and the polite end yields. The role comes from a
// lexicographic comparison of the two ends' keys: the users' ids between two users, the device
// ids between two devices of one user (13.1). The Tally protocol §2: a user id or key is the npub unless hex is
// stated, and 13.1 states none, so two users compare their npubs (the bech32 strings; the order
// differs from the hex order for about 61% of pairs).
// Decision: the end with the smaller key is the polite one.
import * as z from "zod";

interface DeviceAddress {
  /** npub of the user. */
  userId: string;
  /** The device id the relay gave that device's connection. */
  deviceId: string;
}

/** The key an end is compared by on a channel between `local` and `remote`. */
function roleKeys(local: DeviceAddress, remote: DeviceAddress): [string, string] {
  if (local.userId === remote.userId) return [local.deviceId, remote.deviceId];
  return [local.userId, remote.userId];
}

/** Whether `local` is the polite end (it rolls back its own offer when offers collide). */
export function isPolite(local: DeviceAddress, remote: DeviceAddress): boolean {
  const [a, b] = roleKeys(local, remote);
  if (a === b) throw new Error("a device cannot negotiate with itself");
  return a < b;
}

/** What travels in webrtc_signal's `signal` (the relay forwards it as opaque JSON). */
export const rtcSignalSchema = z.union([
  z.object({
    description: z.object({ type: z.enum(["offer", "answer", "pranswer", "rollback"]), sdp: z.string().optional() }),
  }),
  z.object({
    candidate: z
      .object({
        candidate: z.string(),
        sdpMid: z.string().nullish(),
        sdpMLineIndex: z.number().int().nullish(),
        usernameFragment: z.string().nullish(),
      })
      .nullable(),
  }),
]);

export type RtcSignal = z.infer<typeof rtcSignalSchema>;
