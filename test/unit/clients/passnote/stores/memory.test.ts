import type { RecordRow } from "../../../../../clients/passnote/stores/adapter";
import { MemoryAdapter } from "../../../../../clients/passnote/stores/memory";
import { MemoryStore } from "../../../../../clients/passnote/protocol/records";
import { adapterContract } from "../../../../helpers/passnote-adapter-contract";
import { storeContract } from "../../../../helpers/passnote-store-contract";
import { instanceOf } from "../../../../helpers/passnote-store-harness";

// The index alone: a peer that keeps nothing.
storeContract("memory", () => ({ persistent: false, open: async () => instanceOf(new MemoryStore()) }));

// The in-memory adapter: a database of two Maps, reopened by name.
const databases = new Map<string, [Map<string, RecordRow>, Map<string, Uint8Array>]>();
adapterContract("in-memory (MemoryAdapter)", () => ({
  persistent: true,
  open: async (name) => {
    if (!databases.has(name)) databases.set(name, [new Map(), new Map()]);
    const [records, meta] = databases.get(name)!;
    return new MemoryAdapter(records, meta);
  },
}));
