// The in-memory bus runs the same transport contract as the relay's sync rooms (the relay runs it
// in test/e2e/passnote-sync.test.ts).
import { MemoryBus } from "../../../../clients/passnote/memory-bus";
import { transportContract } from "../../../helpers/passnote";

transportContract("in-memory bus", () => {
  const bus = new MemoryBus();
  return () => bus.connect();
});
