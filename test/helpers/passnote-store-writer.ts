// A child process for the crash test (test/unit/clients/passnote/stores/crash.test.ts): opens the
// SQLite store at argv[2] and writes records for ever, printing "ack <n> <collection> <key> <hlc>"
// after each write is acknowledged (merge returned and flushed() resolved), until it is killed.
import { SqliteStore } from "../../clients/passnote/stores/sqlite";
import { HlcClock } from "../../clients/passnote/protocol/hlc";

const store = await SqliteStore.open(process.argv[2]);
const clock = new HlcClock(process.argv[3] ?? "writer");
clock.observe(store.clock());
for (let n = 0; ; n++) {
  // New documents, and new versions of a few hot ones, in two collections.
  const collection = n % 3 === 0 ? "diary" : "notes";
  const key = n % 4 === 0 ? `hot${n % 20}` : `doc${n}`;
  const hlc = clock.tick();
  store.merge(collection, { key, value: { n, text: "x".repeat(n % 500), list: [n, n / 2, `${n}`] }, is_deleted: false, hlc });
  await store.flushed();
  process.stdout.write(`ack ${n} ${collection} ${key} ${hlc}\n`);
  if (n % 64 === 0) await new Promise((r) => setImmediate(r));
}
