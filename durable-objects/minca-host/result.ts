// What the hosting objects' RPC methods answer: a value, or the HTTP error the Worker turns it
// into. One type for the space and the account; the Worker's routes read it.
import type { ErrorCode } from "../../shared/errors";

export type HostResult<T> =
  | { ok: true; value: T }
  | { ok: false; status: number; code: ErrorCode; message: string; retryAfterSeconds?: number };

export const fail = (status: number, code: ErrorCode, message: string): HostResult<never> => ({ ok: false, status, code, message });
