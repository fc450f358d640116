// A child process for the keys-first test (test/unit/clients/passnote/stores/crash.test.ts): on
// the SQLite database at argv[2] it founds a group as docs/sdk.md shows (a peer given a new
// identity), writes three records in the same turn, says "put", and then blocks that turn for
// ever, so that nothing the turn left to later (a promise, a timer) ever runs: the parent kills
// it with SIGKILL and reads the file as the kill left it.
import { MemoryBus } from "../../clients/passnote/memory-bus";
import { PassnotePeer } from "../../clients/passnote/peer";
import { SqliteStore } from "../../clients/passnote/stores/sqlite";
import { foundGroup } from "../../clients/passnote/protocol/roster";
import { writeSync } from "node:fs";

const store = await SqliteStore.open(process.argv[2]);
const transport = await new MemoryBus().connect();
const peer = new PassnotePeer({ transport, store, identity: foundGroup(), antiEntropyIntervalMs: 0 });
for (let i = 0; i < 3; i++) peer.put("notes", `n${i}`, { i });
writeSync(1, "put\n");
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); // the first turn never ends
