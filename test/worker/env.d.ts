import type { Env as RelayEnv } from "../../workers/env";
declare global {
  namespace Cloudflare {
    interface Env extends RelayEnv {}
  }
}
export {};
