export { PassnotePeer, type PassnotePeerOptions } from "./peer";
export { MemoryBus, MemoryTransport } from "./memory-bus";
export { RelayTransport, RelayTransportError, type RelayTransportOptions } from "./relay-transport";
export type { Transport, TransportEvents } from "./transport";
export { WriteRefusedError } from "../../shared/passnote/records";
export { Double, type Value } from "../../shared/passnote/codec";
