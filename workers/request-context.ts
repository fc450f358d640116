// The request a log line is written for: the Worker runs each request's handling inside this
// context, so every line logged meanwhile (server/log.ts) carries its request id, whichever module
// writes it. AsyncLocalStorage comes with the nodejs_compat flag (wrangler.toml); the Worker's
// tsconfig types it from types/node-async-hooks.d.ts.
import { AsyncLocalStorage } from "node:async_hooks";
import { setLogContext } from "../server/log";

type Store = {
  request_id: string;
};
const current: { run<T>(store: Store, f: () => T): T; getStore(): Store | undefined } = new AsyncLocalStorage();
setLogContext(() => current.getStore());

export function withRequestId<T>(requestId: string, f: () => Promise<T>): Promise<T> {
  return current.run({ request_id: requestId }, f);
}
