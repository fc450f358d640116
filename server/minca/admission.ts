// Who may connect a Minca host (docs/hosting.md): the operator's choice, a setting
// MINCA_HOST_ADMISSION checked on the CarryGrant POST before anything is stored.
//   open       anyone (the local default);
//   allowlist  only the account dids listed in MINCA_HOST_ALLOWLIST (comma- or space-separated);
//   token      only a request with `Authorization: Bearer <MINCA_HOST_ADMISSION_TOKEN>`, a token
//              the operator hands out.
// Any other value, and `token` with no token set, admits no one (a host never opens by mistake).
import { utf8Encode } from "../../shared/encoding";
import type { ErrorCode } from "../../shared/errors";

const ADMISSION_MODES = ["open", "allowlist", "token"] as const;

interface AdmissionSettings {
  MINCA_HOST_ADMISSION?: string;
  MINCA_HOST_ALLOWLIST?: string;
  MINCA_HOST_ADMISSION_TOKEN?: string;
}

export type Admission =
  | { mode: "open" }
  | { mode: "allowlist"; dids: ReadonlySet<string> }
  | { mode: "token"; token: string }
  | { mode: "closed"; why: string };

export function admissionOf(env: AdmissionSettings): Admission {
  const mode = (env.MINCA_HOST_ADMISSION ?? "").trim() || "open";
  switch (mode) {
    case "open":
      return { mode: "open" };
    case "allowlist":
      return { mode: "allowlist", dids: new Set((env.MINCA_HOST_ALLOWLIST ?? "").split(/[\s,]+/).filter(Boolean)) };
    case "token": {
      const token = (env.MINCA_HOST_ADMISSION_TOKEN ?? "").trim();
      return token === ""
        ? { mode: "closed", why: "MINCA_HOST_ADMISSION is token but MINCA_HOST_ADMISSION_TOKEN is not set" }
        : { mode: "token", token };
    }
    default:
      return { mode: "closed", why: `MINCA_HOST_ADMISSION is ${JSON.stringify(mode)}, not one of ${ADMISSION_MODES.join(", ")}` };
  }
}

type AdmissionCheck = { ok: true } | { ok: false; status: 401 | 403; code: ErrorCode; message: string };

/** Whether a CarryGrant for `account`, posted with `authorization`, is admitted. */
export function admit(a: Admission, account: string, authorization: string | null): AdmissionCheck {
  switch (a.mode) {
    case "open":
      return { ok: true };
    case "allowlist":
      return a.dids.has(account)
        ? { ok: true }
        : { ok: false, status: 403, code: "not_admitted", message: "this host carries only the accounts its operator lists" };
    case "token": {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
      if (!m)
        return {
          ok: false,
          status: 401,
          code: "admission_required",
          message: "this host needs an admission token: Authorization: Bearer <token>",
        };
      return sameBytes(m[1], a.token)
        ? { ok: true }
        : { ok: false, status: 403, code: "not_admitted", message: "the admission token is not this host's" };
    }
    case "closed":
      return { ok: false, status: 403, code: "not_admitted", message: "this host admits no account (its admission setting is invalid)" };
  }
}

/** Compares two strings in time that depends on their lengths only. */
function sameBytes(a: string, b: string): boolean {
  const x = utf8Encode(a);
  const y = utf8Encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}
