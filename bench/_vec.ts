import { MemoryStore } from "../shared/passnote/records";
import { openingProbe2, respondToReconcile2 } from "../shared/passnote/reconcile2";
import { formatHlc } from "../shared/passnote/hlc";
import { encodeMessage, decodeMessage } from "../shared/passnote/wire";
import { bytesToHex } from "../shared/encoding";
const T = 1_700_000_000_000;
const rec = (key: string, wall: number, node: string) => ({ key, value: key, is_deleted: false, hlc: formatHlc({ wall, counter: 0, node }) });
const a = new MemoryStore(), b = new MemoryStore();
for (let i = 0; i < 40; i++) {
  const r = rec(`k${String(i).padStart(2, "0")}`, T + (i < 30 ? i * 1000 : 30_000), "b");
  b.merge("v", r);
  if (i !== 7 && i !== 35) a.merge("v", r);
}
a.merge("v", rec("a1", T + 50_000, "a"));
let msg: any = openingProbe2(a, "v");
let turn = 1; const s = [a, b];
console.log("A", bytesToHex(encodeMessage(msg)));
while (msg) { const { ship, reply } = respondToReconcile2(s[turn], msg); console.log(turn ? "B" : "A", ship.map(r => r.key).join(","), reply ? bytesToHex(encodeMessage(reply)) : null); if (reply) console.log(JSON.stringify(decodeMessage(encodeMessage(reply)), (k, v) => v instanceof Uint8Array ? bytesToHex(v) : v === Infinity ? "inf" : v)); for (const r of ship) s[1-turn].merge("v", r); msg = reply; turn = 1 - turn; }
