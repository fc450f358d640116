// A NIP-07 provider for tests: an object with window.nostr's methods (getPublicKey, signEvent,
// nip44.encrypt / nip44.decrypt) over a key the test holds, made with nostr-tools (another
// implementation than the SDK's, as an extension's would be). Every property the client reads
// of it, at any depth, is recorded; `locked` makes every call fail as a locked extension's does.
import { decrypt, encrypt, getConversationKey } from "nostr-tools/nip44";
import { finalizeEvent, getPublicKey } from "nostr-tools/pure";
import type { EventTemplate, Nip07Provider, NostrEvent } from "../../clients/tally/index";

export interface TestProvider {
  provider: Nip07Provider;
  /** Every property read, as a path ("signEvent", "nip44.encrypt"), in order. */
  reads: string[];
  /** Calls made, by method path. */
  calls: string[];
  locked: boolean;
}

/** The property paths a Tally client may read of window.nostr. */
export const NIP07_METHODS = ["getPublicKey", "signEvent", "nip44", "nip44.encrypt", "nip44.decrypt"];

function recorded<T extends object>(target: T, prefix: string, reads: string[]): T {
  return new Proxy(target, {
    get(t, key, receiver) {
      reads.push(prefix + String(key));
      const v = Reflect.get(t, key, receiver);
      return typeof v === "object" && v !== null ? recorded(v, `${prefix}${String(key)}.`, reads) : v;
    },
    has(t, key) {
      reads.push(`${prefix}${String(key)} (in)`);
      return Reflect.has(t, key);
    },
    ownKeys(t) {
      reads.push(`${prefix}(keys)`);
      return Reflect.ownKeys(t);
    },
  });
}

/** `delay(n)`: milliseconds the n-th call (from 0) takes to answer; default none. */
export function testProvider(secretKey: Uint8Array, delay: (call: number) => number = () => 0): TestProvider {
  const reads: string[] = [];
  const calls: string[] = [];
  const state: TestProvider = { provider: undefined as unknown as Nip07Provider, reads, calls, locked: false };
  const gate = async (what: string) => {
    const ms = delay(calls.length);
    calls.push(what);
    if (ms > 0) await new Promise((r) => setTimeout(r, ms));
    if (state.locked) throw new Error("the extension is locked");
  };
  const target: Nip07Provider = {
    async getPublicKey() {
      await gate("getPublicKey");
      return getPublicKey(secretKey);
    },
    async signEvent(event: EventTemplate): Promise<NostrEvent> {
      await gate("signEvent");
      return finalizeEvent(event, secretKey);
    },
    nip44: {
      async encrypt(pubkey: string, plaintext: string) {
        await gate("nip44.encrypt");
        return encrypt(plaintext, getConversationKey(secretKey, pubkey));
      },
      async decrypt(pubkey: string, ciphertext: string) {
        await gate("nip44.decrypt");
        return decrypt(ciphertext, getConversationKey(secretKey, pubkey));
      },
    },
  };
  state.provider = recorded(target, "", reads);
  return state;
}
