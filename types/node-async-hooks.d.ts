// The one Node module the Worker uses (nodejs_compat), typed for tsconfig.worker.json alone: the
// other configs take @types/node, which types it in full.
declare module "node:async_hooks" {
  export class AsyncLocalStorage<T> {
    getStore(): T | undefined;
    run<R>(store: T, fn: () => R): R;
  }
}
