// The Worker's entry: the Hono app, and the Durable Object classes it exports.
export { TallyUser } from "../durable-objects/tally-user";
import { app } from "./app";

export default app;
