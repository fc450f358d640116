// Tally test helpers that need no relay: a client with nowhere to connect, the frames a peer would
// send over a direct channel (a sealed envelope, a plaintext receipt), and the default store's
// folder set for one test.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TallyClient, memoryStore, type InnerMessage, type TallyClientOptions } from "../../clients/tally/index";
import { sealEnvelope } from "../../shared/tally/envelope";
import { signInner } from "../../shared/tally/proof";
import type { User } from "./tally";

/** A client of `user` that never connects (its relay URL is unused); a memory store unless given one. */
export function offlineClient(user: Pick<User, "secretKey">, opts: Partial<TallyClientOptions> = {}): TallyClient {
  return new TallyClient({ relayUrl: "ws://unused", secretKey: user.secretKey, store: memoryStore(), ...opts });
}

/** An inner message from `from` to `to`, created now. */
export function innerMessage(from: string, to: string, id: string, type: string, payload: unknown = {}): InnerMessage {
  return { id, type, from_user_id: from, to_user_id: to, created_at: new Date().toISOString(), payload };
}

/** The JSON frame of `inner`, signed and sealed by `signer`, as a direct channel carries it. */
export function sealedFrame(signer: Pick<User, "secretKey">, inner: InnerMessage): string {
  return JSON.stringify(sealEnvelope(signInner(inner, signer.secretKey), signer.secretKey));
}

/** A plaintext transport-only receipt (the Tally protocol §3.2) from `from` to `to` for `messageId`. */
export function plaintextReceipt(from: string, to: string, messageId: string): string {
  return JSON.stringify(innerMessage(from, to, "r1", "received", { message_id: messageId, result: "processed" }));
}

/** Runs `fn` with TALLY_STORE_DIR set to a new folder (the default store's place in Node), then restores it. */
export async function withStoreDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "tally-store-"));
  const before = process.env.TALLY_STORE_DIR;
  process.env.TALLY_STORE_DIR = dir;
  try {
    await fn(dir);
  } finally {
    if (before === undefined) delete process.env.TALLY_STORE_DIR;
    else process.env.TALLY_STORE_DIR = before;
  }
}
