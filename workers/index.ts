// The Worker's entry: the Hono app, and the Durable Object classes it exports.
export { TallyUser, PassnoteRoom, MincaRoom, MincaMailbox, MincaAccount, MincaSpace, RelayKeys, RelayStats, RelayLedger, PushGate } from "../durable-objects/index";
// Reached only through the self-hosted relay's loopback admin socket (workers/admin.ts).
export { RelayAdmin } from "./admin";
import { app } from "./app";

export default app;
