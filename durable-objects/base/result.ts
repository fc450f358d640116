// What an object's RPC method answers the Worker: a value, or the HTTP error the Worker turns it
// into (status, error code, message, and the wait a 429 or 503 asks for). The one result type:
// every object builds it with `ok` / `fail`, and the Worker answers it (workers/http.ts `answer`).
import type { ErrorCode } from "../../shared/errors";

export type ObjectResult<T> =
  | { ok: true; value: T }
  | { ok: false; status: number; code: ErrorCode; message: string; retryAfterSeconds?: number };

export const ok = <T>(value: T): ObjectResult<T> => ({ ok: true, value });

export const fail = (status: number, code: ErrorCode, message: string, retryAfterSeconds?: number): ObjectResult<never> =>
  retryAfterSeconds === undefined ? { ok: false, status, code, message } : { ok: false, status, code, message, retryAfterSeconds };
