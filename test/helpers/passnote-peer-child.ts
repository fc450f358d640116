// A Passnote device in its own process, on a SQLite database (test/e2e/passnote-persistent.test.ts).
// argv: relayUrl dbPath records [identity JSON, first life only]. On a database without records it
// connects, writes `records` records "b<i>" and says "written" once they are durable; on every change it says "have <n>" (records in "notes"), and "digest <hex>" once it holds
// 2 × records. A reopened database brings back the keys, the records and the clock: nothing else
// is given.
import { PassnotePeer } from "../../clients/passnote/peer";
import { RelayTransport } from "../../clients/passnote/relay-transport";
import { SqliteStore } from "../../clients/passnote/stores/sqlite";
import { hexToBytes } from "../../shared/encoding";
import type { DeviceIdentity } from "../../shared/passnote/roster";
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
  const writes = store.size("notes") === 0;
  const transport = await RelayTransport.connect({ relayUrl, rosterKey });
  const peer = new PassnotePeer({ transport, store, identity, antiEntropyIntervalMs: 2_000 });
  const report = () => {
    const n = store.size("notes");
    say(`have ${n}`);
    if (n === 2 * records) say(`digest ${digest(store)}`);
  };
  peer.engine.on("change", report);
  if (writes) {
    // The first life writes in the turn it starts, before any frame is handled: every record is
    // acknowledged (durable) before sync can begin.
    for (let i = 0; i < records; i++) peer.put("notes", `b${i}`, { from: "b", i });
    await peer.flushed();
    say("written");
  }
  report();
}
