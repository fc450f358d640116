// An in-memory stand-in for a sync room, for unit tests: the same peers, join/leave reports and
// per-sender ordered, byte-exact delivery as the relay, with no network. Delivery is
// asynchronous (a macrotask per frame), so ordering bugs show up as they would on a socket.
import { bytesToHex, randomBytes } from "../../shared/encoding";
import { BROADCAST } from "../../shared/passnote/room";
import { Listeners, type Transport, type TransportEvents } from "./transport";

export class MemoryBus {
  private readonly members = new Map<string, MemoryTransport>();

  /** Joins the bus as a new peer; resolves once welcomed. */
  async connect(): Promise<MemoryTransport> {
    let id: string;
    do id = bytesToHex(randomBytes(8));
    while (id === BROADCAST || this.members.has(id));
    const others = [...this.members.keys()];
    const t = new MemoryTransport(this, id);
    this.members.set(id, t);
    await tick();
    t.deliver("welcome", id, others);
    for (const o of others) this.members.get(o)?.deliver("join", id);
    return t;
  }

  /** @internal */
  route(from: string, to: string, frame: Uint8Array): Promise<void> {
    const targets = to === BROADCAST ? [...this.members.keys()].filter((p) => p !== from) : [to];
    const copies = targets.map((p) => this.members.get(p)).filter((t): t is MemoryTransport => !!t && t.id !== from);
    if (to !== BROADCAST && copies.length === 0) return Promise.reject(new Error(`no peer ${to}`));
    return Promise.all(copies.map((t) => t.enqueue(from, frame.slice()))).then(() => undefined);
  }

  /** @internal */
  leave(id: string): void {
    if (!this.members.delete(id)) return;
    for (const t of this.members.values()) t.deliver("leave", id);
  }

  ids(): string[] {
    return [...this.members.keys()];
  }
}

const tick = () => new Promise<void>((r) => setTimeout(r, 0));

export class MemoryTransport implements Transport {
  private readonly listeners = new Listeners();
  private readonly known = new Set<string>();
  private chain: Promise<void> = Promise.resolve();
  private open = true;
  self: string | undefined;

  constructor(
    private readonly bus: MemoryBus,
    readonly id: string,
  ) {}

  peers(): string[] {
    return [...this.known];
  }

  send(to: string, frame: Uint8Array): Promise<void> {
    if (!this.open) return Promise.reject(new Error("transport closed"));
    return this.bus.route(this.id, to, frame);
  }

  subscribe(l: Partial<TransportEvents>): () => void {
    return this.listeners.add(l);
  }

  close(): void {
    if (!this.open) return;
    this.open = false;
    this.bus.leave(this.id);
    this.listeners.emit("close", 1000, "closed");
  }

  /** @internal Delivers in order: each frame is one macrotask after the previous one. */
  enqueue(from: string, frame: Uint8Array): Promise<void> {
    const run = this.chain.then(async () => {
      await tick();
      if (this.open) this.listeners.emit("frame", from, frame);
    });
    this.chain = run;
    return run;
  }

  /** @internal */
  deliver(event: "welcome" | "join" | "leave", a: string, b?: string[]): void {
    if (!this.open) return;
    if (event === "welcome") {
      this.self = a;
      for (const p of b ?? []) this.known.add(p);
      this.listeners.emit("welcome", a, b ?? []);
    } else if (event === "join") {
      this.known.add(a);
      this.listeners.emit("join", a);
    } else {
      this.known.delete(a);
      this.listeners.emit("leave", a);
    }
  }
}
