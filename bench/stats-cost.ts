// What keeping the operator's counters costs (docs/browser.md): Tally envelopes between online
// users through a real relay, timed from queue_peer_envelope to the recipient's copy. Run it on
// two builds (with the counters, and a checkout from before them) and compare:
//   npm run -s bench:stats          (SENDERS=20 PER_SENDER=100 by default)
// Senders pace themselves under the per-socket rate limit (50/s); every sender is its own user
// object, so the per-object StatsReporter and the one RelayStats object are both exercised.
import { makeAuthEvent } from "../shared/tally/auth";
import { generateSecretKey, getPublicKeyHex, npubEncode } from "../shared/tally/keys";
import { base64Encode, randomBytes } from "../shared/encoding";
import { startRelay } from "../test/helpers/relay-process";

const SENDERS = Number(process.env.SENDERS ?? 20);
const PER_SENDER = Number(process.env.PER_SENDER ?? 100);
const RATE = 40; // per sender per second, under the limit

interface U {
  sk: Uint8Array;
  npub: string;
}
const user = (): U => {
  const sk = generateSecretKey();
  return { sk, npub: npubEncode(getPublicKeyHex(sk)) };
};

function open(ws: string, u: U): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const s = new WebSocket(`${ws}/tally/v1/${u.npub}`);
    s.onmessage = (ev) => {
      const m = JSON.parse(String(ev.data));
      if (m.type === "challenge")
        s.send(
          JSON.stringify({
            type: "register",
            user_id: u.npub,
            auth: makeAuthEvent({ secretKey: u.sk, challenge: m.challenge, relayUrl: ws }),
          }),
        );
      if (m.type === "queue_drained") resolve(s);
    };
    s.onerror = () => reject(new Error("socket error"));
  });
}

const relay = await startRelay();
try {
  const ws = relay.wsUrl;
  const bob = user();
  const bobSocket = await open(ws, bob);
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  bobSocket.onmessage = (ev) => {
    const m = JSON.parse(String(ev.data));
    if (m.type !== "peer_envelope") return;
    latencies.push(performance.now() - sentAt.get(m.id)!);
    if (latencies.length === SENDERS * PER_SENDER) done();
  };
  const senders = await Promise.all(
    Array.from({ length: SENDERS }, async () => {
      const u = user();
      return { u, s: await open(ws, u) };
    }),
  );
  const t0 = performance.now();
  await Promise.all(
    senders.map(async ({ u, s }, k) => {
      for (let i = 0; i < PER_SENDER; i++) {
        const id = `${k}-${i}`;
        sentAt.set(id, performance.now());
        s.send(
          JSON.stringify({
            type: "queue_peer_envelope",
            envelope: {
              type: "peer_envelope",
              envelope_version: 3,
              id,
              from_user_id: u.npub,
              to_user_id: bob.npub,
              ciphertext: base64Encode(randomBytes(64)),
            },
          }),
        );
        await new Promise((r) => setTimeout(r, 1000 / RATE));
      }
    }),
  );
  await all;
  const wall = performance.now() - t0;
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))].toFixed(1);
  // Counts arrive within the flush interval (2 s); read them after it.
  await new Promise((r) => setTimeout(r, 3_000));
  const status = await fetch(`${relay.url}/status.json`)
    .then((r) => (r.ok ? (r.json() as Promise<{ per_minute?: { deliveries?: { total?: number[] } } }>) : null))
    .catch(() => null);
  console.log(
    JSON.stringify({
      envelopes: latencies.length,
      wall_ms: Math.round(wall),
      per_second: Math.round(latencies.length / (wall / 1000)),
      latency_ms: { p50: q(0.5), p95: q(0.95), p99: q(0.99) },
      counted_deliveries: status ? status.per_minute?.deliveries?.total?.reduce((a: number, b: number) => a + b, 0) : "no /status.json",
    }),
  );
  for (const { s } of senders) s.close();
  bobSocket.close();
} finally {
  await relay.stop();
}
