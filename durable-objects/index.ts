// Every Durable Object class the relay runs (the Worker exports them from here; wrangler.toml binds them).
export { TallyUser } from "./tally/tally-user";
export { PassnoteRoom } from "./passnote/passnote-room";
export { MincaRoom } from "./minca-rooms/minca-room";
export { MincaMailbox } from "./mailbox/minca-mailbox";
export { MincaAccount } from "./minca-host/minca-account";
export { MincaSpace } from "./minca-host/minca-space";
export { RelayKeys } from "./relay/relay-keys";
export { RelayStats } from "./relay/relay-stats";
export { RelayLedger } from "./relay/relay-ledger";
export { PushGate } from "./push/push-gate";
export { RelayPolicy } from "./relay/relay-policy";
