// What a Tally client does with each relay's frames and the end of each relay connection (the Tally
// protocol sections 6, 8.2, 8.3, 12.2, 13): registration, the flush and queue_drained, envelopes
// into the inbound pipeline, relay answers, presence and signals. Split from client.ts, which
// builds the parts this works with and hands them here as a host.
import type { ServerMessage } from "../../shared/tally/messages";
import type { Emitter, TallyClientEvents } from "./events";
import type { InboundPipeline } from "./inbound";
import { CLIENT_LIMITS } from "./limits";
import { TallyRelayError } from "./connection";
import type { OutboxRetry } from "./outbox";
import type { Paths } from "./paths";
import type { Relay, RelaySet } from "./relays";
import type { TallyStore } from "./store";
import type { SyncEngine } from "./sync";
import type { Tracking } from "./tracking";
import { assertNever } from "../assert-never";

/** What the frame handling needs of the client. */
interface RelayFramesHost {
  readonly relays: RelaySet;
  readonly sync: SyncEngine;
  readonly outbox: OutboxRetry;
  readonly events: Emitter<TallyClientEvents>;
  readonly paths: Paths;
  readonly inbound: InboundPipeline;
  readonly tracking: Tracking;
  readonly store: TallyStore;
  /** Relays whose attempt failed since connect() was called. */
  readonly failedAttempts: Set<number>;
  /** connect() calls waiting for the first registration. */
  readonly registeredWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }>;
  connected(): boolean;
  /** Takes over what free store slots left (slot-adopt.ts). */
  adoptSlots(): Promise<void>;
}

export class RelayFrames {
  private pruneTimer: ReturnType<typeof setInterval> | undefined;
  private lastPrune = 0;

  constructor(private readonly host: RelayFramesHost) {}

  /** The client closed: no more pruning. */
  stop(): void {
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    this.pruneTimer = undefined;
  }

  onClosed(relay: Relay, code: number, reason: string): void {
    const h = this.host;
    relay.deviceId = undefined;
    relay.drained = false;
    // The devices this relay announced are gone from its view; presence from other relays stays.
    for (const [user, device] of h.relays.dropDevicesOf(relay)) h.sync.onPeerDisconnect(user, device);
    if (!h.connected()) {
      h.outbox.stop();
      h.sync.onClose();
    }
    void h.events.emit("close", code, reason, relay.url);
    h.failedAttempts.add(relay.index);
    if (h.failedAttempts.size >= h.relays.relays.length) {
      const refusal = relay.conn.refusal;
      for (const w of h.registeredWaiters.splice(0))
        w.reject(
          refusal ? new TallyRelayError(refusal.code, refusal.message, code) : new Error(`relay closed the connection (${code} ${reason})`),
        );
    }
  }

  onMessage(relay: Relay, msg: ServerMessage): void {
    const h = this.host;
    switch (msg.type) {
      case "registered":
        relay.deviceId = msg.device_id;
        relay.drained = false;
        // 8.2, 8.3: a relay (re)registered: it may have restarted, everything is queued again.
        h.outbox.newSession();
        for (const w of h.registeredWaiters.splice(0)) w.resolve();
        void h.events.emit("registered", msg.device_id, msg.queued, relay.url);
        return;
      case "queue_drained":
        // Envelopes of the flush are processed in order before drained is announced.
        h.inbound.enqueue(async () => {
          relay.drained = true;
          await h.events.emit("drained", relay.url);
          // A slot freed since (another tab or process closed): its outbox is sent from here.
          await h.adoptSlots();
          await h.outbox.flush(true);
          h.outbox.start();
          this.startPruning();
          await h.sync.onDrained();
        });
        return;
      case "peer_envelope":
        h.inbound.enqueue(() => h.inbound.receiveEnvelope(msg, "relay", () => h.paths.ack(relay, msg)));
        return;
      case "queued":
        h.tracking.onQueued(msg.id, msg.status, relay.url);
        // "first" mode: a relay that did not store it (not_stored) hands the envelope on, as a refusal does.
        if (h.paths.firstMode && msg.status === "not_stored") void this.nextRelay(relay, msg.id);
        void h.events.emit("queued", msg.id, msg.status, relay.url);
        return;
      case "peer_connect":
        h.relays.noteDevice(relay, msg.peer_user_id, msg.peer_device_id);
        h.inbound.enqueue(h.sync.onPeerConnect(msg.peer_user_id, msg.peer_device_id));
        void h.events.emit("peer_connect", msg.peer_user_id, msg.peer_device_id);
        return;
      case "peer_disconnect":
        h.relays.forgetDevice(msg.peer_user_id, msg.peer_device_id);
        h.sync.onPeerDisconnect(msg.peer_user_id, msg.peer_device_id);
        void h.events.emit("peer_disconnect", msg.peer_user_id, msg.peer_device_id);
        return;
      case "webrtc_signal":
        h.relays.noteDevice(relay, msg.peer_user_id, msg.peer_device_id);
        void h.events.emit("signal", msg.peer_user_id, msg.peer_device_id, msg.signal);
        return;
      case "error":
        if (h.paths.firstMode && msg.id !== undefined && msg.code !== "rate_limited") void this.nextRelay(relay, msg.id);
        void h.events.emit("relay_error", msg.code, msg.message, msg.id, relay.url);
        return;
      case "challenge":
      case "pong":
        return;
      default:
        assertNever(msg, "relay frame");
    }
  }

  /** "first" mode: a relay refused or did not store an outbox message; the next registered relay gets it now. */
  private async nextRelay(relay: Relay, id: string): Promise<void> {
    const h = this.host;
    const item = await h.store.getOutbox(id);
    if (item) h.paths.queueAfter(relay, item.envelope);
  }

  /** Keeps the store within its bounds (TallyStore.prune): now (at most once a minute) and every prune_interval_ms. */
  private startPruning(): void {
    const h = this.host;
    const prune = () => {
      if (!h.store.prune || Date.now() - this.lastPrune < 60_000) return;
      this.lastPrune = Date.now();
      h.store.prune().catch((err) => console.warn("tally client: pruning the store failed", err));
    };
    prune();
    this.pruneTimer ??= setInterval(prune, CLIENT_LIMITS.prune_interval_ms);
  }
}
