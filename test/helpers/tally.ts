// Tally test helpers: users, devices and raw registered sockets against a relay URL.
import { TallyClient, memoryStore, type TallyClientOptions } from "../../clients/tally/index";
import { makeAuthEvent } from "../../shared/tally/auth";
import { generateSecretKey, getPublicKeyHex, npubEncode } from "../../shared/tally/keys";
import { base64Encode, randomBytes } from "../../shared/encoding";
import { TestSocket } from "./socket";

export interface User {
  secretKey: Uint8Array;
  hex: string;
  npub: string;
}

export function newUser(): User {
  const secretKey = generateSecretKey();
  const hex = getPublicKeyHex(secretKey);
  return { secretKey, hex, npub: npubEncode(hex) };
}

export function wsBase(httpUrl: string): string {
  return httpUrl.replace(/^http/, "ws");
}

/** A connected, registered client for `user` (a new device). */
export async function device(
  relayUrl: string,
  user: User,
  opts: Partial<TallyClientOptions> = {},
  before?: (c: TallyClient) => void,
): Promise<TallyClient> {
  const client = new TallyClient({ relayUrl: wsBase(relayUrl), secretKey: user.secretKey, store: memoryStore(), ...opts });
  before?.(client);
  await client.connect();
  await new Promise<void>((resolve) => (client.drained ? resolve() : client.on("drained", () => resolve())));
  return client;
}

/**
 * An envelope exchange between two users (a message and its receipt), which the relay requires
 * before it answers connect_peer between them (docs/tally.md, "Signaling").
 */
export async function exchange(from: TallyClient, to: string): Promise<void> {
  const id = await from.send(to, "hello", {});
  await new Promise<void>((resolve) => from.on("receipt", (m) => void (m === id && resolve())));
}

/** Two devices of one user. */
export async function twoDevices(relayUrl: string, user: User = newUser()) {
  const a = await device(relayUrl, user);
  const b = await device(relayUrl, user);
  return { user, a, b };
}

/** A raw socket registered as `user`; returns it after `registered` (not waiting for the flush). */
export async function rawRegistered(
  relayUrl: string,
  user: User,
  opts: { acks?: boolean; headers?: Record<string, string> } = {},
): Promise<TestSocket> {
  const url = wsBase(relayUrl);
  const s = await TestSocket.open(`${url}/tally/v1/${user.npub}`, opts.headers);
  const { challenge } = await s.next("challenge");
  s.send({
    type: "register",
    user_id: user.npub,
    auth: makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: url }),
    acks: opts.acks,
  });
  await s.next("registered");
  return s;
}

/** An envelope the relay accepts (it never decrypts): for tests of the relay's own rules. */
export function opaqueEnvelope(from: User, to: User, id: string, extra: Record<string, unknown> = {}) {
  return {
    type: "peer_envelope",
    envelope_version: 3,
    id,
    from_user_id: from.npub,
    to_user_id: to.npub,
    ciphertext: base64Encode(randomBytes(48)),
    ...extra,
  };
}

/**
 * Two clients (alice's and bob's) joined by a direct channel each way that only records frames:
 * a test hands them over with handleDirectFrame, one at a time.
 */
export function directPair() {
  const alice = newUser();
  const bob = newUser();
  const a = new TallyClient({ relayUrl: "ws://unused", secretKey: alice.secretKey, store: memoryStore() });
  const b = new TallyClient({ relayUrl: "ws://unused", secretKey: bob.secretKey, store: memoryStore() });
  const aToB: string[] = [];
  const bToA: string[] = [];
  a.addDirectChannel(b.npub, { send: (f) => void aToB.push(f) });
  b.addDirectChannel(a.npub, { send: (f) => void bToA.push(f) });
  return { alice, bob, a, b, aToB, bToA };
}
