export { PassnotePeer, type PassnotePeerOptions } from "./peer";
export { MemoryBus, MemoryTransport } from "./memory-bus";
export { RelayTransport, RelayTransportError, type RelayTransportOptions } from "./relay-transport";
export type { Transport, TransportEvents } from "./transport";
export { WriteRefusedError } from "../../shared/passnote/records";
export { MemoryStore, type PassnoteStore, type StoredKeys } from "../../shared/passnote/records";
export { IndexedDbStore, type IndexedDbStoreOptions } from "./stores/indexeddb";
export { derivePassphraseKey, derivePassphraseKeySync } from "../../shared/passnote/passphrase";
export { foundGroup, newDeviceKey, devicePublicKey, type DeviceIdentity, type GroupCredentials } from "../../shared/passnote/roster";
