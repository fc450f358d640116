// An account's device saved as JSON (what the move CLI reads): the root and session keys as JWKs
// (the keys must be extractable: newAccount(cmd, { extractable: true })), the account key, the
// session's note, the revokes the device knows and the latest `at` its session wrote — kept with
// the account, so a device that restarts signs out with the right cutoff. The file holds the
// account's secrets: write it readable by its owner only.
import { base64urlDecode, base64urlEncode } from "../../shared/encoding";
import type { RevokeBody } from "../../shared/minca/carry";
import { p256KeyFromJwk, p256KeyToJwk } from "../../shared/minca/es256";
import type { Note } from "../../shared/minca/note";
import type { MincaAccount } from "./account";

export interface AccountFile {
  v: 1;
  root: JsonWebKey;
  accountKey: string;
  session: JsonWebKey;
  note: Note;
  revoked: RevokeBody[];
  wroteUntil?: number;
}

export async function accountToJson(account: MincaAccount): Promise<AccountFile> {
  return {
    v: 1,
    root: await p256KeyToJwk(account.root),
    accountKey: base64urlEncode(account.accountKey),
    session: await p256KeyToJwk(account.session),
    note: account.note,
    revoked: account.revoked ?? [],
    ...(account.wroteUntil !== undefined ? { wroteUntil: account.wroteUntil } : {}),
  };
}

export async function accountFromJson(file: AccountFile): Promise<MincaAccount> {
  if (file.v !== 1) throw new Error("not an account file (v: 1)");
  return {
    root: await p256KeyFromJwk(file.root),
    accountKey: base64urlDecode(file.accountKey),
    session: await p256KeyFromJwk(file.session),
    note: file.note,
    revoked: file.revoked ?? [],
    ...(file.wroteUntil !== undefined ? { wroteUntil: file.wroteUntil } : {}),
  };
}
