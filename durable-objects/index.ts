// Every Durable Object class the Worker exports (workers/index.ts), one line each.
export { TallyUser } from "./tally-user";
export { PassnoteRoom } from "./passnote-room";
export { MincaRoom } from "./minca-room";
export { MincaMailbox } from "./minca-mailbox";
export { RelayKeys } from "./relay-keys";
export { MincaAccount } from "./minca-account";
export { MincaSpace } from "./minca-space";
export { RelayStats } from "./relay-stats";
export { PushGate } from "./push-gate";
export { RelayLedger } from "./relay-ledger";
export { RelayPolicy } from "./relay-policy";
