// One handler per user across the clients of one browser profile (tabs): the clients of a user
// elect a leader with a lock (Web Locks in browsers), and only the leader connects to the relays,
// so each message is handled once between them; the others are told of each message the leader
// handled, and hand the messages they send to the leader, which sends them from its own outbox
// (the Tally protocol's outbox rules hold there: same id and bytes, retried until the receipt).
// When the leader closes, its lock frees and another client takes over. The lock and the channel
// are small interfaces, so this runs in Node with stand-ins (test/unit/clients/tally/tabs.test.ts).
import type { Emitter, InnerMessage, TallyClientEvents } from "./events";
import type { OutboxRetry } from "./outbox";
import type { OutboxItem, TallyStore } from "./store";
import type { Tracking } from "./tracking";

/** Web Locks' request, the part used here: `fn` runs once the lock is held, and holds it until its promise settles. */
export interface LeaderLocks {
  request(name: string, fn: (lock: unknown) => Promise<void>): Promise<unknown>;
}

/** BroadcastChannel, the part used here: every other client of the profile gets what one posts. */
export interface TabChannel {
  postMessage(message: unknown): void;
  addEventListener(type: "message", fn: (ev: { data: unknown }) => void): void;
  close(): void;
}

/** What the tabs tell each other. */
type TabMessage =
  | { t: "message"; inner: InnerMessage }
  | { t: "send"; item: OutboxItem }
  | { t: "took"; id: string }
  | { t: "receipt"; id: string; result: unknown; from: string }
  /** A client became the leader: the others hand it what their outboxes hold. */
  | { t: "lead" };

/** What the coordination needs of the client. */
interface TabHost {
  /** Starts the relay connections (the leader's). */
  lead(): void;
  /** A message sent by a follower: into this client's outbox and on its way. */
  adopt(item: OutboxItem): Promise<void>;
  /** A follower's own outbox item the leader took: it leaves this client's outbox. */
  handedOver(id: string): Promise<void>;
  /** This follower's outbox, to hand to a new leader. */
  outbox(): Promise<OutboxItem[]>;
  /** The leader handled a message (a follower's app is told). */
  handledElsewhere(inner: InnerMessage): void;
  /** A receipt the leader got for a message a follower handed over. */
  receiptElsewhere(id: string, result: unknown, from: string): void;
}

/** The parts of a client its tabs coordinate. */
interface TabClient {
  npub: string;
  store: TallyStore;
  tracking: Tracking;
  outbox: OutboxRetry;
  events: Emitter<TallyClientEvents>;
  /** Starts the relay connections (once this client leads). */
  lead(): void;
}

/**
 * Joins the user's other clients of this profile as `choice` names them: "browser" takes the
 * browser's Web Locks and BroadcastChannel, else the lock and channel given. Undefined when the
 * browser has neither.
 */
export function joinTabs(choice: "browser" | { locks: LeaderLocks; channel: TabChannel }, c: TabClient): TabCoordinator | undefined {
  const g = globalThis as { navigator?: { locks?: LeaderLocks }; BroadcastChannel?: new (name: string) => TabChannel };
  const parts =
    choice === "browser"
      ? g.navigator?.locks && g.BroadcastChannel
        ? { locks: g.navigator.locks, channel: new g.BroadcastChannel(`tally:${c.npub}`) }
        : undefined
      : choice;
  if (!parts) return undefined;
  return new TabCoordinator(c.npub, parts.locks, parts.channel, {
    lead: () => c.lead(),
    adopt: async (item) => {
      if (!(await c.store.getOutbox(item.id))) await c.store.putOutbox(item);
      c.tracking.begin(item.id);
      await c.outbox.tryQueue(item);
    },
    handedOver: async (id) => {
      if (await c.store.getOutbox(id)) await c.store.deleteOutbox(id);
    },
    outbox: () => c.store.listOutbox(),
    handledElsewhere: (inner) => void c.events.emit("handled_elsewhere", inner),
    receiptElsewhere: (id, result, from) => void c.events.emit("receipt", id, result, from),
  });
}

export class TabCoordinator {
  private leading = false;
  private closed = false;
  private releaseLock: (() => void) | undefined;
  /** Ids the leader took from followers, so their receipts are told back. */
  private readonly fromFollowers = new Set<string>();

  constructor(
    npub: string,
    locks: LeaderLocks,
    private readonly channel: TabChannel,
    private readonly host: TabHost,
  ) {
    channel.addEventListener("message", (ev) => void this.onMessage(ev.data as TabMessage));
    void locks.request(`tally-leader:${npub}`, () => {
      if (this.closed) return Promise.resolve();
      this.leading = true;
      this.host.lead();
      this.channel.postMessage({ t: "lead" } satisfies TabMessage);
      return new Promise<void>((resolve) => (this.releaseLock = resolve));
    });
  }

  /** Whether this client leads (it alone is connected to the relays). */
  get leader(): boolean {
    return this.leading;
  }

  /** A message this client handled as the leader: the other tabs are told. */
  handled(inner: InnerMessage): void {
    if (this.leading) this.channel.postMessage({ t: "message", inner } satisfies TabMessage);
  }

  /** A message this follower sent: handed to the leader (it stays in this outbox until the leader took it). */
  sent(item: OutboxItem): void {
    if (!this.leading) this.channel.postMessage({ t: "send", item } satisfies TabMessage);
  }

  /** A receipt arrived at the leader: a follower that handed the message over is told. */
  receipt(id: string, result: unknown, from: string): void {
    if (this.fromFollowers.delete(id)) this.channel.postMessage({ t: "receipt", id, result, from } satisfies TabMessage);
  }

  close(): void {
    this.closed = true;
    this.leading = false;
    this.releaseLock?.();
    this.channel.close();
  }

  private async onMessage(m: TabMessage): Promise<void> {
    if (this.closed) return;
    if (m.t === "send" && this.leading) {
      this.fromFollowers.add(m.item.id);
      await this.host.adopt(m.item);
      this.channel.postMessage({ t: "took", id: m.item.id } satisfies TabMessage);
    } else if (m.t === "took" && !this.leading) await this.host.handedOver(m.id);
    else if (m.t === "message" && !this.leading) this.host.handledElsewhere(m.inner);
    else if (m.t === "lead" && !this.leading) for (const item of await this.host.outbox()) this.sent(item);
    else if (m.t === "receipt" && !this.leading) this.host.receiptElsewhere(m.id, m.result, m.from);
  }
}
