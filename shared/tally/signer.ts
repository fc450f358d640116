// Who holds a Tally user's key (docs/sdk.md, "Signers"). Everything a client does with its key
// goes through a signer: the authorship proof and the register answer are Nostr events (signEvent),
// and a version 3 envelope is a NIP-44 v2 payload between two keys (nip44Encrypt / nip44Decrypt).
// So a key kept in a browser extension (NIP-07's window.nostr) or a hardware device serves as well
// as a key in memory, and the client never needs the secret itself.
//
// Decision (a signer that fails is not a verdict on the message): an extension can refuse, be
// locked, or hang. Its errors come out as SignerError, and a receiver treats an envelope it could
// not open that way as not received (no ack, tried again), never as a bad envelope to drop. What a
// provider hands back is checked before it is used: a signed event must verify, be signed by this
// user and carry exactly the template asked for; a ciphertext must be a well-formed NIP-44 v2 payload.
import { finalizeEvent, verifyEvent, type EventTemplate, type NostrEvent } from "../nostr/event";
import { checkPayload, decrypt as nip44Decrypt, encrypt as nip44Encrypt } from "./nip44";
import { conversationKey, legacyV2Decrypt } from "./keys-cache";
import { getPublicKeyHex } from "./keys";

export type { EventTemplate, NostrEvent };

/** What a Tally client needs of whoever holds its key; every method may take its time. */
export interface TallySigner {
  /** The user's public key, 64 lowercase hex. */
  getPublicKey(): Promise<string>;
  /** The template signed by the user's key (id, pubkey and sig filled in). */
  signEvent(template: EventTemplate): Promise<NostrEvent>;
  /** A NIP-44 v2 payload of `plaintext` for the peer (64 hex public key). */
  nip44Encrypt(peerPubkeyHex: string, plaintext: string): Promise<string>;
  /** The plaintext of a NIP-44 v2 payload from the peer. */
  nip44Decrypt(peerPubkeyHex: string, payload: string): Promise<string>;
  /**
   * Opens a version 2 (legacy, AES-256-GCM) envelope's ciphertext from the peer. Only a signer
   * holding the key itself can: without it such envelopes are kept at the relay, not opened.
   */
  legacyDecrypt?(peerPubkeyHex: string, ciphertext: string): Promise<string>;
}

/** The signer failed or refused (a browser extension locked, a prompt declined, a bad answer). */
export class SignerError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SignerError";
  }
}

/** The default: the key in memory, what `secretKey` in the client's options means. */
export function secretKeySigner(secretKey: Uint8Array): TallySigner {
  const pubkey = getPublicKeyHex(secretKey);
  return {
    getPublicKey: async () => pubkey,
    signEvent: async (template) => finalizeEvent(template, secretKey),
    nip44Encrypt: async (peer, plaintext) => nip44Encrypt(plaintext, conversationKey(secretKey, peer)),
    nip44Decrypt: async (peer, payload) => nip44Decrypt(payload, conversationKey(secretKey, peer)),
    legacyDecrypt: async (peer, ciphertext) => legacyV2Decrypt(ciphertext, secretKey, peer),
  };
}

/** The methods of NIP-07's `window.nostr` a Tally client uses; nothing else of it is touched. */
export interface Nip07Provider {
  getPublicKey(): Promise<string>;
  signEvent(event: EventTemplate): Promise<NostrEvent>;
  nip44?: {
    encrypt(pubkey: string, plaintext: string): Promise<string>;
    decrypt(pubkey: string, ciphertext: string): Promise<string>;
  };
}

const HEX64 = /^[0-9a-f]{64}$/;

function sameTemplate(ev: NostrEvent, t: EventTemplate): boolean {
  return (
    ev.kind === t.kind && ev.created_at === t.created_at && ev.content === t.content && JSON.stringify(ev.tags) === JSON.stringify(t.tags)
  );
}

/**
 * A signer over a NIP-07 provider (a browser extension's `window.nostr`). The provider is asked
 * one thing at a time, in the order the client needs them (extensions prompt, and some mix up
 * answers to overlapping calls); its public key is asked once. Every failure is a SignerError.
 */
export function nip07Signer(provider: Nip07Provider): TallySigner {
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(what: string, call: () => Promise<T>): Promise<T> => {
    const run = queue.then(async () => {
      try {
        return await call();
      } catch (err) {
        if (err instanceof SignerError) throw err;
        throw new SignerError(`the NIP-07 provider failed to ${what}`, { cause: err });
      }
    });
    queue = run.catch(() => undefined);
    return run;
  };
  let pubkey: Promise<string> | undefined;
  const getPublicKey = (): Promise<string> => {
    pubkey ??= serial("give its public key", async () => {
      const hex = await provider.getPublicKey();
      if (typeof hex !== "string" || !HEX64.test(hex)) throw new SignerError("the NIP-07 provider's public key is not 64 lowercase hex");
      return hex;
    });
    pubkey.catch(() => {
      pubkey = undefined; // asked again next time
    });
    return pubkey;
  };
  const nip44 = () => {
    const api = provider.nip44;
    if (!api) throw new SignerError("the NIP-07 provider has no nip44 (encrypt / decrypt)");
    return api;
  };
  return {
    getPublicKey,
    signEvent: async (template) => {
      const me = await getPublicKey();
      const copy: EventTemplate = {
        kind: template.kind,
        created_at: template.created_at,
        tags: template.tags.map((t) => [...t]),
        content: template.content,
      };
      return serial("sign an event", async () => {
        const ev = await provider.signEvent(copy);
        if (!verifyEvent(ev) || ev.pubkey !== me || !sameTemplate(ev, template)) {
          throw new SignerError("the NIP-07 provider returned an event that is not the template signed by its key");
        }
        return ev;
      });
    },
    nip44Encrypt: (peer, plaintext) =>
      serial("encrypt", async () => {
        const payload = await nip44().encrypt(peer, plaintext);
        try {
          checkPayload(payload);
        } catch (err) {
          throw new SignerError("the NIP-07 provider returned no NIP-44 v2 payload", { cause: err });
        }
        return payload;
      }),
    nip44Decrypt: (peer, payload) =>
      serial("decrypt", async () => {
        const plaintext = await nip44().decrypt(peer, payload);
        if (typeof plaintext !== "string") throw new SignerError("the NIP-07 provider's decrypt gave no string");
        return plaintext;
      }),
  };
}
