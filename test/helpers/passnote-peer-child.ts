// A Passnote device in its own process, on a SQLite database (test/e2e/passnote-persistent.test.ts).
// argv: relayUrl dbPath records [identity JSON, first life only]. It connects and, while it
// syncs, writes the records "b0".."b<records - 1>" its database lacks, a few per turn, saying
// "ack <i>" once "b0".."b<i>" are durable, and "written" after the last. On every change it
// says "have <n> <a>" (records in "notes", of them alice's "a…"), once the change is in its
// database, and "digest <hex>" once it holds 2 × records. A reopened database brings back the
// keys, the records and the clock: nothing else is given.
import { PassnotePeer } from "../../clients/passnote/peer";
import { RelayTransport } from "../../clients/passnote/relay-transport";
import { SqliteStore } from "../../clients/passnote/stores/sqlite";
import { hexToBytes } from "../../shared/encoding";
import type { DeviceIdentity } from "../../clients/passnote/protocol/roster";
import { digest } from "./passnote-data";

const [relayUrl, dbPath, recordsArg, identityArg] = process.argv.slice(2);
const records = Number(recordsArg);
const say = (line: string) => process.stdout.write(`${line}\n`);

{
  const store = await SqliteStore.open(dbPath);
  let identity: DeviceIdentity | undefined;
  if (identityArg) {
    const o = JSON.parse(identityArg) as Record<string, string>;
    identity = {
      deviceKey: hexToBytes(o.deviceKey),
      group: { rosterKey: hexToBytes(o.rosterKey), groupKey: hexToBytes(o.groupKey), owner: hexToBytes(o.owner) },
    };
  }
  const held = store.keys();
  const rosterKey = (identity ?? (held && "identity" in held ? held.identity : undefined))!.group.rosterKey;
  const transport = await RelayTransport.connect({ relayUrl, rosterKey });
  const peer = new PassnotePeer({ transport, store, identity, antiEntropyIntervalMs: 2_000 });
  let fromAlice = store.all("notes").filter((r) => r.key.startsWith("a")).length;
  const report = () => {
    const n = store.size("notes");
    say(`have ${n} ${fromAlice}`);
    if (n === 2 * records) say(`digest ${digest(store)}`);
  };
  let syncing: () => void = () => undefined;
  const synced = new Promise<void>((r) => (syncing = r));
  if (fromAlice) syncing(); // a reopened database already holds some
  peer.engine.on("change", (collection, changed) => {
    if (collection === "notes") fromAlice += changed.filter((r) => r.key.startsWith("a")).length;
    if (fromAlice) syncing();
    report();
  });
  report();
  // Written while the sync runs: 20 records, then a pause of a few milliseconds; the second half
  // once alice's records are coming in, so the kill lands mid-write and mid-sync. A reopened
  // database resumes with the records it lacks.
  for (let i = 0; i < records; i++) {
    if (i === records / 2) await synced;
    if (!store.get("notes", `b${i}`)) peer.put("notes", `b${i}`, { from: "b", i });
    if (i % 20 === 19 || i === records - 1) {
      await peer.flushed();
      say(`ack ${i}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  say("written");
  report();
}
