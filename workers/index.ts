// The Worker's entry: the Hono app, and the Durable Object classes it exports (named one by one:
// `wrangler types` reads the names from here).
export {
  TallyUser,
  PassnoteRoom,
  MincaRoom,
  MincaMailbox,
  RelayKeys,
  MincaAccount,
  MincaSpace,
  RelayStats,
  PushGate,
  RelayLedger,
  RelayPolicy,
} from "../durable-objects/index";
// Reached only through the self-hosted relay's loopback admin socket (workers/admin.ts).
export { RelayAdmin } from "./admin";
import { app } from "./app";

export default app;
