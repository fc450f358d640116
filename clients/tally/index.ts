// The Tally client SDK: what apps import.
export { TallyClient, newMessageId, RECEIPT_TYPE, SELF_SYNC_TYPES, IGNORED } from "./client";
export { TallyRelayError, FINAL_REFUSALS } from "./connection";
export type {
  InnerMessage,
  TallyClientOptions,
  TallyClientEvents,
  DirectChannel,
  SendOptions,
  Delivery,
  PayloadSchema,
  Tracked,
  MessageState,
  Receipt,
  RelayAnswer,
} from "./client";
export type { RelayMode } from "./relays";
export type { LeaderLocks, TabChannel } from "./tabs";
export { MAX_STORE_SLOTS } from "./store-slots";
export { defaultStore } from "./default-store";
export { IndexedDbKeyValue } from "./indexeddb";
export { CLIENT_LIMITS } from "./limits";
export { KeyValueTallyStore, MapKeyValue, WebStorageKeyValue, memoryStore } from "./store";
export type { TallyStore, KeyValue, OutboxItem, ProcessedRecord, MessageKey } from "./store";
export { secretKeySigner, nip07Signer, SignerError } from "../../shared/tally/signer";
export type { TallySigner, Nip07Provider, EventTemplate, NostrEvent } from "../../shared/tally/signer";
export { generateSecretKey, getPublicKeyHex, npubEncode, npubDecode } from "../../shared/tally/keys";
export { connectInMemory, dataChannelAdapter } from "./direct";
export type { DataChannelLike } from "./direct";
export { SyncEngine } from "./sync";
export type { SyncOptions, SyncHost } from "./sync";
export type { LedgerEntry } from "./protocol/ledger";
