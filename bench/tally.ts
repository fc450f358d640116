// Tally load against a running relay, with raw WebSockets (the `ws` package) and pre-made opaque
// envelopes: the relay's own work is measured, not the client's crypto. Every socket stays within
// the per-socket rate limit's burst (shared/limits.ts), so no figure is the rate limiter's.
import WebSocket from "ws";
import { makeAuthEvent } from "../shared/tally/auth";
import { COMMON_LIMITS, TALLY_LIMITS } from "../shared/limits";
import { newUser, opaqueEnvelope, wsBase, type User } from "../test/helpers/tally";

/** The relay frames the bench listens for, with the fields it reads. */
export interface Frames {
  challenge: { challenge: string };
  queue_drained: unknown;
  error: { code: string; message: string };
  /** The bench's envelopes carry the time they were sent. */
  peer_envelope: { sent_at: number };
  queued: { id: string; status: string };
  pong: unknown;
}

export interface Conn {
  ws: WebSocket;
  user: User;
  on<T extends keyof Frames>(type: T, fn: (m: Frames[T]) => void): void;
  send(msg: unknown): void;
  close(): Promise<void>;
}

/** Opens a socket for `user`, registers it, and resolves once its queue is drained. */
export async function connect(relayUrl: string, user: User, opts: { beforeRegister?: (c: Conn) => void } = {}): Promise<Conn> {
  const url = wsBase(relayUrl);
  const ws = new WebSocket(`${url}/tally/v1/${user.npub}`);
  const handlers = new Map<string, Array<(m: unknown) => void>>();
  const conn: Conn = {
    ws,
    user,
    on(type, fn) {
      handlers.set(type, [...(handlers.get(type) ?? []), fn as (m: unknown) => void]);
    },
    send(msg) {
      ws.send(typeof msg === "string" ? msg : JSON.stringify(msg));
    },
    close() {
      return new Promise((resolve) => {
        if (ws.readyState === WebSocket.CLOSED) return resolve();
        ws.once("close", () => resolve());
        ws.close();
      });
    },
  };
  ws.on("message", (data) => {
    const m = JSON.parse(String(data));
    for (const fn of handlers.get(m.type) ?? []) fn(m);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once("error", reject);
    conn.on("challenge", ({ challenge }) => {
      opts.beforeRegister?.(conn);
      conn.send({ type: "register", user_id: user.npub, auth: makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: url }) });
    });
    conn.on("queue_drained", () => resolve());
    conn.on("error", (m) => reject(new Error(`relay error while registering: ${m.code} ${m.message}`)));
  });
  return conn;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Largest number of messages one socket may send in a burst, leaving room for register. */
const BURST = COMMON_LIMITS.rate_burst - 10;

export interface DeliveryResult {
  messages: number;
  perSecond: number;
  p50: number;
  p99: number;
}

/**
 * Online to online: `pairs` sender/recipient pairs, each sender keeping `inFlight` envelopes
 * unanswered (until its `queued`), `perSender` envelopes each; the recipient has `devices` devices
 * online (fan-out). Latency is from send to arrival at each device (one process holds both ends,
 * so one clock).
 */
export async function onlineDelivery(
  relayUrl: string,
  o: { pairs: number; inFlight: number; perSender: number; devices?: number },
): Promise<DeliveryResult> {
  const perSender = Math.min(o.perSender, BURST);
  const devices = o.devices ?? 1;
  const pairs = await Promise.all(
    Array.from({ length: o.pairs }, async () => {
      const [from, to] = [newUser(), newUser()];
      const recipients: Conn[] = [];
      for (let d = 0; d < devices; d++) recipients.push(await connect(relayUrl, to));
      const sender = await connect(relayUrl, from);
      const frames = Array.from({ length: perSender }, (_, k) => ({ id: `m${k}`, env: opaqueEnvelope(from, to, `m${k}`) }));
      return { sender, recipients, frames };
    }),
  );
  const latencies: number[] = [];
  let received = 0;
  const total = o.pairs * perSender;
  const t0 = performance.now();
  await Promise.all(
    pairs.map(
      ({ sender, recipients, frames }) =>
        new Promise<void>((resolve, reject) => {
          let next = 0;
          let answered = 0;
          let got = 0;
          const sendOne = () => {
            const f = frames[next++];
            sender.send(`{"type":"queue_peer_envelope","envelope":${JSON.stringify({ ...f.env, sent_at: performance.now() })}}`);
          };
          const done = () => answered === frames.length && got === frames.length * devices && resolve();
          for (const recipient of recipients) {
            recipient.on("peer_envelope", (e) => {
              latencies.push(performance.now() - e.sent_at);
              got++;
              received++;
              done();
            });
          }
          sender.on("queued", (q) => {
            // A sender the recipient never wrote to is a stranger: its answer is `stored` whether or
            // not a device took the envelope (presence is not told to strangers); the copies counted
            // at the recipients are what says it was delivered.
            if (q.status !== "delivered" && q.status !== "stored") return reject(new Error(`online delivery answered ${q.status}`));
            answered++;
            if (next < frames.length) sendOne();
            done();
          });
          sender.on("error", (m) => reject(new Error(`relay error: ${m.code} ${m.message}`)));
          for (let k = 0; k < o.inFlight && next < frames.length; k++) sendOne();
        }),
    ),
  );
  const seconds = (performance.now() - t0) / 1000;
  await Promise.all(pairs.flatMap((p) => [p.sender.close(), ...p.recipients.map((r) => r.close())]));
  latencies.sort((a, b) => a - b);
  return { messages: received, perSecond: total / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

export interface StoreFlushResult {
  stored: number;
  storePerSecond: number;
  flushMs: number;
  flushPerSecond: number;
}

/** Offline: `senders` senders store `perSender` envelopes each for one offline recipient, which
 * then registers and receives them all before queue_drained. */
export async function storeThenFlush(
  relayUrl: string,
  o: { senders: number; perSender: number; inFlight: number },
): Promise<StoreFlushResult> {
  const st = await storeFor(relayUrl, o);
  const flushMs = await flushTo(relayUrl, st.to, st.stored);
  return { stored: st.stored, storePerSecond: st.storePerSecond, flushMs, flushPerSecond: st.stored / (flushMs / 1000) };
}

/** The store half: `senders` senders store `perSender` envelopes each for a new, offline user `to`. */
export async function storeFor(
  relayUrl: string,
  o: { senders: number; perSender: number; inFlight: number },
): Promise<{ to: User; stored: number; storePerSecond: number }> {
  const perSender = Math.min(o.perSender, BURST, TALLY_LIMITS.queue_max_per_sender);
  const to = newUser();
  // The senders are the recipient's correspondents: it wrote to each of them before (stored for
  // them, flushed when they register), as a real user's queue fills with its contacts' envelopes
  // (strangers together may hold only half a queue).
  const users = Array.from({ length: o.senders }, () => newUser());
  const recipient = await connect(relayUrl, to);
  await new Promise<void>((resolve, reject) => {
    let answered = 0;
    recipient.on("queued", (q) => {
      if (q.status !== "delivered" && q.status !== "stored") return reject(new Error(`a first envelope answered ${q.status}`));
      if (++answered === users.length) resolve();
    });
    for (const [i, u] of users.entries()) recipient.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(to, u, `hello${i}`) });
  });
  await recipient.close();
  const senders = await Promise.all(users.map((u) => connect(relayUrl, u)));
  const t0 = performance.now();
  await Promise.all(
    senders.map(
      (s) =>
        new Promise<void>((resolve, reject) => {
          let next = 0;
          let answered = 0;
          const sendOne = () => {
            const id = `m${next++}`;
            s.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(s.user, to, id) });
          };
          s.on("queued", (q) => {
            if (q.status !== "stored") return reject(new Error(`offline delivery answered ${q.status}`));
            answered++;
            if (next < perSender) sendOne();
            if (answered === perSender) resolve();
          });
          for (let k = 0; k < o.inFlight && next < perSender; k++) sendOne();
        }),
    ),
  );
  const storeSeconds = (performance.now() - t0) / 1000;
  await Promise.all(senders.map((s) => s.close()));
  const stored = o.senders * perSender;
  return { to, stored, storePerSecond: stored / storeSeconds };
}

/** The flush half: `to` registers and receives its `stored` envelopes; ms from challenge to queue_drained. */
export async function flushTo(relayUrl: string, to: User, stored: number): Promise<number> {
  let flushed = 0;
  let t1 = 0;
  const recipient = await connect(relayUrl, to, {
    beforeRegister: (c) => {
      t1 = performance.now();
      c.on("peer_envelope", () => void flushed++);
    },
  });
  const flushMs = performance.now() - t1;
  await recipient.close();
  if (flushed !== stored) throw new Error(`flushed ${flushed} of ${stored} stored envelopes`);
  return flushMs;
}

/**
 * Connect cost: open, challenge, register (a Schnorr verify on the relay), queue_drained, close,
 * for each of `users` (new users the first time, returning users, whose objects exist, after).
 */
export async function registers(relayUrl: string, o: { users: User[]; concurrency: number }): Promise<{ perSecond: number }> {
  const users = o.users;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: o.concurrency }, async () => {
      while (next < users.length) {
        const c = await connect(relayUrl, users[next++]);
        await c.close();
      }
    }),
  );
  return { perSecond: users.length / ((performance.now() - t0) / 1000) };
}

/**
 * Memory per idle connection: the resident memory of the server's process tree (`rssKb`) before
 * and after `count` users each connect and register one device and then stay idle for `idleMs`.
 */
export async function idleMemory(
  relayUrl: string,
  rssKb: () => number,
  o: { count: number; idleMs: number },
): Promise<{ kbPerConnection: number }> {
  const before = rssKb();
  const conns: Conn[] = [];
  for (let i = 0; i < o.count; i += 8) {
    conns.push(...(await Promise.all(Array.from({ length: Math.min(8, o.count - i) }, () => connect(relayUrl, newUser())))));
  }
  await new Promise((r) => setTimeout(r, o.idleMs));
  const after = rssKb();
  await Promise.all(conns.map((c) => c.close()));
  return { kbPerConnection: (after - before) / o.count };
}

/** Sends one envelope from `from` to `to`, who is offline, and waits for its `stored` answer. */
export function storedTo(from: Conn, to: User, id: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    from.on("queued", (q) => (q.id === id ? (q.status === "stored" ? resolve() : reject(new Error(`answered ${q.status}`))) : undefined));
    from.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(from.user, to, id) });
  });
}
