export { PassnotePeer, WHEN_SYNCED_ASK_MS, WHEN_SYNCED_TIMEOUT_MS, type DeviceInfo, type PassnotePeerOptions } from "./peer";
export type { PassnotePeerEvents, PeerChange, PeerStatus } from "./peer-events";
export { ListenerError, StoreFailedError } from "./protocol/events";
export type { Durable, HeadColumns, RecordRow, StorageAdapter } from "./stores/adapter";
export { AdapterStore, openStore, type AdapterStoreOptions } from "./stores/adapter-store";
export { MemoryAdapter } from "./stores/memory";
export { MemoryBus, MemoryTransport } from "./memory-bus";
export { RelayTransport, RelayTransportError, type RelayTransportOptions } from "./relay-transport";
export type { Transport, TransportEvents } from "./transport";
export { WriteRefusedError } from "./protocol/records";
export { Double, type Value } from "./protocol/codec";
export { MemoryStore, type PassnoteStore, type StoredKeys } from "./protocol/records";
export { IndexedDbAdapter, IndexedDbStore, type IndexedDbStoreOptions } from "./stores/indexeddb";
export { derivePassphraseKey, derivePassphraseKeySync } from "./protocol/passphrase";
export {
  foundGroup,
  newDeviceKey,
  devicePublicKey,
  deviceIdOf,
  type DeviceIdentity,
  type GroupCredentials,
} from "./protocol/roster";
