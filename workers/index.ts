// The Worker's entry: the Hono app, and the Durable Object classes it exports.
export { TallyUser } from "../durable-objects/tally-user";
export { PassnoteRoom } from "../durable-objects/passnote-room";
export { MincaRoom } from "../durable-objects/minca-room";
export { MincaMailbox } from "../durable-objects/minca-mailbox";
export { RelayKeys } from "../durable-objects/relay-keys";
export { MincaAccount } from "../durable-objects/minca-host/minca-account";
export { MincaSpace } from "../durable-objects/minca-host/minca-space";
// Reached only through the self-hosted relay's loopback admin socket (workers/admin.ts).
export { RelayAdmin } from "./admin";
export { RelayStats } from "../durable-objects/relay-stats";
export { PushGate } from "../durable-objects/push-gate";
export { RelayLedger } from "../durable-objects/relay-ledger";
import { app } from "./app";

export default app;
