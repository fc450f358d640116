// Passnote room load against a running relay (or a baseline speaking the same room protocol), with
// raw WebSockets: frames are opaque bytes to the relay, so no sync engine runs here. Each peer
// broadcasts to the room; the arrival of its frame at the next peer in the ring releases its next
// one (a closed loop of `inFlight` frames per sender, one process holding every end, so one clock).
// Every socket stays within the rate limit's burst.
import WebSocket from "ws";
import { COMMON_LIMITS } from "../shared/limits";
import { roomKeys, signJoin } from "../shared/passnote/room";
import { randomBytes } from "../shared/encoding";
import { wsBase } from "../test/helpers/tally";
import { percentile } from "./tally";

interface Peer {
  ws: WebSocket;
  id: string;
}

async function joinRoom(relayUrl: string, keys: ReturnType<typeof roomKeys>): Promise<Peer> {
  const ws = new WebSocket(`${wsBase(relayUrl)}/passnote/v2/${keys.roomId}`);
  return new Promise((resolve, reject) => {
    ws.once("error", reject);
    const onMessage = (data: WebSocket.RawData, isBinary: boolean) => {
      if (isBinary) return;
      const m = JSON.parse(String(data));
      if (m.type === "challenge") ws.send(JSON.stringify({ type: "join", sig: signJoin(keys, m.challenge) }));
      else if (m.type === "welcome") {
        ws.off("message", onMessage);
        resolve({ ws, id: m.peer });
      } else if (m.type === "error") reject(new Error(`room error: ${m.code} ${m.message}`));
    };
    ws.on("message", onMessage);
  });
}

export interface RoomResult {
  /** Frames delivered (a broadcast to n-1 peers counts n-1). */
  deliveries: number;
  deliveriesPerSecond: number;
  framesSentPerSecond: number;
  p50: number;
  p99: number;
}

/** A room of `peers`, each broadcasting `perSender` frames of `bytes` bytes, `inFlight` at a time. */
export async function roomTraffic(
  relayUrl: string,
  o: { peers: number; perSender: number; inFlight: number; bytes: number },
): Promise<RoomResult> {
  const perSender = Math.min(o.perSender, COMMON_LIMITS.rate_burst - 10);
  const keys = roomKeys(randomBytes(32));
  const peers: Peer[] = [];
  for (let i = 0; i < o.peers; i++) peers.push(await joinRoom(relayUrl, keys));
  // The frame: the all-zero (broadcast) prefix, then sender index (1 byte), then send time (float64), then padding.
  const frame = (from: number) => {
    const buf = new Uint8Array(8 + Math.max(9, o.bytes));
    const view = new DataView(buf.buffer);
    buf[8] = from;
    view.setFloat64(9, performance.now());
    return buf;
  };
  const latencies: number[] = [];
  const expected = o.peers * perSender * (o.peers - 1);
  let deliveries = 0;
  const sent = new Array<number>(o.peers).fill(0);
  const t0 = performance.now();
  await new Promise<void>((resolve) => {
    const sendNext = (i: number) => {
      if (sent[i] >= perSender) return;
      sent[i]++;
      peers[i].ws.send(frame(i));
    };
    peers.forEach((p, k) => {
      p.ws.on("message", (data: Buffer, isBinary: boolean) => {
        if (!isBinary) return;
        const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
        const from = data[8];
        latencies.push(performance.now() - view.getFloat64(9));
        deliveries++;
        if ((from + 1) % o.peers === k) sendNext(from);
        if (deliveries === expected) resolve();
      });
    });
    for (let i = 0; i < o.peers; i++) for (let k = 0; k < o.inFlight; k++) sendNext(i);
  });
  const seconds = (performance.now() - t0) / 1000;
  await Promise.all(
    peers.map(
      (p) =>
        new Promise<void>((resolve) => {
          p.ws.once("close", () => resolve());
          p.ws.close();
        }),
    ),
  );
  latencies.sort((a, b) => a - b);
  return {
    deliveries,
    deliveriesPerSecond: deliveries / seconds,
    framesSentPerSecond: (o.peers * perSender) / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}
