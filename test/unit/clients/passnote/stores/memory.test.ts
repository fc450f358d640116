import { MemoryStore } from "../../../../../shared/passnote/records";
import { storeContract } from "../../../../helpers/passnote-store-contract";
import { instanceOf } from "../../../../helpers/passnote-store-harness";

// The memory store keeps nothing past its instance: each open is a new, empty database.
storeContract("memory", () => ({ persistent: false, open: async () => instanceOf(new MemoryStore()) }));
