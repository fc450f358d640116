// The room contract and the Minca protocol section 3's list, over the in-memory bus.
import { MemoryBus } from "../../../../clients/minca/memory-bus";
import { roomContract } from "../../../helpers/minca-contract";

roomContract("in-memory bus", () => new MemoryBus().join);
