// What a Minca host answers an account about what it holds for it (GET /minca/v1/host/accounts/<did>,
// docs/hosting.md): only to a request proven with its carry space's read key — none 401; a wrong
// one, or any for an account the host does not carry for, 403; the closed carry space's key: 410.
import { base64urlDecode } from "../../shared/encoding";
import { checkStatusProof } from "../../server/minca/binding";
import type { AccountStatus } from "../../server/minca/host-wire";
import { readKeyDid, readSeedOf } from "../../shared/minca/space";
import type { AccountStore } from "./account-store";
import { fail, type ObjectResult } from "../base/result";

export function accountStatus(
  store: AccountStore,
  proof: { authorization: string | null; time: string | null },
  held: {
    account: string;
    /** The carry space of a binding that holds now, or null. */
    carry: string | null;
    /** What the account is charged: its carried spaces' versions and its own rows (binding, links). */
    bytes: () => number;
  },
  now = Date.now(),
): ObjectResult<AccountStatus> {
  const { carry } = held;
  const closedSpace = store.meta.get("closed_space");
  const closedKey = store.meta.get("closed_read_key");
  const target =
    carry !== null
      ? { space: carry, readKey: readKeyDid(readSeedOf(base64urlDecode(store.meta.get("carry_key")!))) }
      : closedSpace !== null && closedKey !== null
        ? { space: closedSpace, readKey: closedKey }
        : null;
  const verdict = checkStatusProof(proof, target, Math.floor(now / 1000));
  if (verdict === "missing")
    return fail(
      401,
      "read_proof_required",
      "an account's status is answered only to its carry space's read key (Authorization: MincaRead)",
    );
  if (verdict === "invalid")
    return fail(403, "read_proof_invalid", "the proof does not verify with the read key of a carry space this host holds for that account");
  if (carry === null) return fail(410, "carry_closed", "the account closed its carry space: the host holds nothing for it");
  const versions = store.sql.exec<{ v: number }>("SELECT COALESCE(SUM(versions), 0) AS v FROM usage").one().v;
  return {
    ok: true,
    value: {
      account: held.account,
      name: store.meta.get("name"),
      carry_space: carry,
      spaces: store.count("passes"),
      links: store.count("links"),
      wakes: store.count("wakes"),
      receivers: store.count("receivers"),
      versions,
      bytes: held.bytes(),
    },
  };
}
