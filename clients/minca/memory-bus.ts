// An in-memory stand-in for the relay's code-channel rooms, for tests: the same RoomTransport,
// the same rules (a fresh did:key per peer, welcome with the peers present, peer and gone
// notices, `from` set by the bus, `to` or every other peer), delivery on a later tick, and a
// record of everything that crossed it, as a relay (or someone recording it) would see.
import { newP256Key } from "../../shared/minca/es256";
import { EventQueue, type JoinRoom, type RoomMessage, type RoomTransport } from "./protocol/transport";

interface BusRecord {
  room: string;
  type: string;
  from: string;
  to?: string;
  payload?: unknown;
}

interface Member {
  did: string;
  events: EventQueue;
  open: boolean;
}

export class MemoryBus {
  readonly recorded: BusRecord[] = [];
  private rooms = new Map<string, Map<string, Member>>();

  readonly join: JoinRoom = async (room) => {
    const { did } = await newP256Key();
    const members = this.rooms.get(room) ?? new Map<string, Member>();
    this.rooms.set(room, members);
    const peers = [...members.keys()];
    const me: Member = { did, events: new EventQueue(), open: true };
    members.set(did, me);
    for (const m of members.values()) if (m !== me) this.later(m, { kind: "peer", did });
    const transport: RoomTransport = {
      did,
      peers,
      send: (msg: RoomMessage) => {
        if (!me.open) return;
        this.recorded.push({ room, type: msg.type, from: did, to: msg.to, payload: msg.payload });
        const copy = msg.payload === undefined ? undefined : JSON.parse(JSON.stringify(msg.payload));
        for (const m of members.values()) {
          if (m === me || (msg.to !== undefined && m.did !== msg.to)) continue;
          this.later(m, { kind: "message", type: msg.type, from: did, payload: copy });
        }
      },
      listen: (l) => me.events.listen(l),
      close: () => {
        if (!me.open) return;
        me.open = false;
        members.delete(did);
        for (const m of members.values()) this.later(m, { kind: "gone", did });
      },
    };
    return transport;
  };

  private later(m: Member, e: Parameters<EventQueue["emit"]>[0]): void {
    setTimeout(() => {
      if (m.open) m.events.emit(e);
    }, 0);
  }
}
