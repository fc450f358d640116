// What an app passes to a Tally client: its relays, key, store, and the timers of the connection,
// the outbox and sync; and the choices of one send.
import type { TallyStore } from "./store";
import { secretKeySigner, type TallySigner } from "../../shared/tally/signer";
import { getPublicKeyHex } from "../../shared/tally/keys";
import type { SyncOptions } from "./sync";
import type { RelayMode } from "./relays";
import type { ConnectionOptions } from "./connection";
import type { LeaderLocks, TabChannel } from "./tabs";

export interface TallyClientOptions {
  /** The relay: ws(s)://, http(s):// or a bare host (clients/relay-url.ts); /tally/v1/<npub> is added. */
  relayUrl?: string;
  /**
   * Several relays at once (6.5), instead of relayUrl: the client registers on each, receives from
   * all (copies dedup by id), acks each relay's own copy, and reconnects to each on its own.
   */
  relayUrls?: string[];
  /**
   * Where an envelope goes with several relays: "all" (default) hands it to every registered
   * relay; "first" to the first registered one in the list, and to the next when that one refuses
   * it (an error naming its id), does not store it (`queued` `not_stored`) or is not registered.
   * Retries start after the relay that last refused it, until a receipt arrives by any path.
   */
  relayMode?: RelayMode;
  /** The user's secret key, kept in memory (a `signer` instead keeps it elsewhere). */
  secretKey?: Uint8Array;
  /**
   * Who holds the key instead of `secretKey` (shared/tally/signer.ts): `nip07Signer(window.nostr)`
   * for a browser extension, or any TallySigner. With `new TallyClient`, `publicKey` must be given
   * too; `TallyClient.create` asks the signer for it.
   */
  signer?: TallySigner;
  /** The signer's public key (64 hex), for `new TallyClient` with a `signer`. */
  publicKey?: string;
  /** Where the outbox, ledger and processed set persist. Default: IndexedDB or a file (default-store.ts); "memory" keeps nothing. */
  store?: TallyStore | "memory";
  /** Ask the relay to keep envelopes until this device acks them (docs/tally.md). Default true. */
  acks?: boolean;
  /** Reconnect after a lost connection, with a jittered backoff. Default true. */
  reconnect?: boolean;
  /** First retry delay for outbox items, doubled per attempt up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
  /** A connection not registered this long after it opened is given up. Default CLIENT_LIMITS.connect_timeout_ms. */
  connectTimeoutMs?: number;
  /** Ping interval and pong timeout on the relay socket (connection.ts). */
  pingIntervalMs?: number;
  pongTimeoutMs?: number;
  /** A message whose handler failed is run again after this long, then doubling up to 30 s. Default CLIENT_LIMITS.handler_retry_first_ms. */
  handlerRetryMs?: number;
  /**
   * One handler per user across the clients of one browser profile (tabs.ts): "browser" uses
   * navigator.locks and a BroadcastChannel; or pass stand-ins (Node). Only the leader connects to
   * the relays; the others hand it what they send and hear of what it handled.
   */
  tabs?: "browser" | { locks: LeaderLocks; channel: TabChannel };
  /** Ledger sync (12, 13) settings. */
  sync?: SyncOptions;
  WebSocket?: typeof WebSocket;
}

export interface SendOptions {
  /** A message id chosen by the caller (it must be new); default a random 128-bit id. */
  id?: string;
  /** "auto": a direct channel if open, else the relay; "relay"; "direct"; "both" (9.5). */
  paths?: "auto" | "relay" | "direct" | "both";
}

/** The signer and public key the options name: `secretKey`, or `signer` with `publicKey`. */
export function signerOf(options: TallyClientOptions): { signer: TallySigner; pubkeyHex: string } {
  if (options.secretKey && options.signer) throw new Error("TallyClient: pass secretKey or signer, not both");
  if (options.secretKey) return { signer: secretKeySigner(options.secretKey), pubkeyHex: getPublicKeyHex(options.secretKey) };
  if (!options.signer) throw new Error("TallyClient: pass secretKey or signer");
  const hex = options.publicKey;
  if (typeof hex !== "string" || !/^[0-9a-f]{64}$/.test(hex)) {
    throw new Error("TallyClient: with a signer, pass publicKey (64 lowercase hex), or create the client with TallyClient.create");
  }
  return { signer: options.signer, pubkeyHex: hex };
}

/** What each relay connection is opened with (connection.ts), from the client's options. */
export function connectionOptions(
  options: TallyClientOptions,
  signer: TallySigner,
  npub: string,
  onSignerFailed: (error: unknown) => void,
): Omit<ConnectionOptions, "relayUrl"> {
  return {
    signer,
    onSignerFailed,
    npub,
    acks: options.acks ?? true,
    reconnect: options.reconnect ?? true,
    WebSocket: options.WebSocket ?? (globalThis as { WebSocket?: typeof WebSocket }).WebSocket,
    pingIntervalMs: options.pingIntervalMs,
    pongTimeoutMs: options.pongTimeoutMs,
    connectTimeoutMs: options.connectTimeoutMs,
  };
}
