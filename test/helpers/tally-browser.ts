// What a Chromium test page gets of the Tally client (bundled by `bundleTallyHarness` and added to
// the page as a script): a client with a WebRTC mesh, and a log of what they did.
import { TallyClient } from "../../clients/tally/index";
import { DirectMesh, type DirectState } from "../../clients/tally/webrtc";
import { hexToBytes } from "../../shared/encoding";

export interface HarnessLog {
  states: Array<[user: string, device: string, state: DirectState]>;
  sync: Array<[type: string, via: string, from: string]>;
  dropped: string[];
}

export async function start(relayUrl: string, secretHex: string, allowanceMs = 15_000) {
  const client = new TallyClient({ relayUrl, secretKey: hexToBytes(secretHex), store: "memory", sync: { allowanceMs } });
  const log: HarnessLog = { states: [], sync: [], dropped: [] };
  client.on("sync_message", (m, via) => void log.sync.push([m.type, via, m.from_user_id]));
  client.on("peer_dropped", (u) => void log.dropped.push(u));
  const mesh = new DirectMesh(client, { onState: (u, d, s) => void log.states.push([u, d, s]) });
  await client.connect();
  return { client, mesh, log };
}

/** The default store in a browser: a client with no store, its outbox seen again by a second client. */
export async function defaultStoreRoundTrip(secretHex: string, peerNpub: string): Promise<{ sent: string; seen: string[]; kind: string }> {
  const sk = hexToBytes(secretHex);
  const first = new TallyClient({ relayUrl: "ws://unused", secretKey: sk });
  const sent = await first.send(peerNpub, "note", { n: 1 });
  first.close(); // as a reload: the next client of this user takes the same store
  await navigator.locks.request(`tally-store:${first.npub}:0`, () => {}); // its slot is free once released
  const second = new TallyClient({ relayUrl: "ws://unused", secretKey: sk });
  return {
    sent,
    seen: (await second.store.listOutbox()).map((i) => i.id),
    kind: (await (second.store as unknown as { kv: { inner: Promise<object> } }).kv.inner).constructor.name,
  };
}

/** A client with the default store (IndexedDB) that records what it handled: one tab as one device. */
export async function defaultStoreDevice(relayUrl: string, secretHex: string) {
  const client = new TallyClient({ relayUrl, secretKey: hexToBytes(secretHex) });
  const handled: string[] = [];
  client.on("message", (m) => void handled.push(m.id));
  await client.connect();
  return {
    client,
    handled,
    ledgerIds: async () => (await client.store.listLedger()).map((e) => e.id),
  };
}

/**
 * One tab of a user with `tabs: "browser"` (Web Locks and a BroadcastChannel) and the default
 * store: what it handled itself, what it heard the leader handled, and a send to await.
 */
export async function tabDevice(relayUrl: string, secretHex: string) {
  const client = new TallyClient({ relayUrl, secretKey: hexToBytes(secretHex), tabs: "browser" });
  const handled: string[] = [];
  const elsewhere: string[] = [];
  client.on("message", (m) => void handled.push(m.id));
  client.on("handled_elsewhere", (m) => void elsewhere.push(m.id));
  await client.connect();
  return {
    client,
    handled,
    elsewhere,
    state: () => ({ leader: client.leader, connected: client.connected }),
    /** Sends and resolves with the receipt's result. */
    send: async (to: string, text: string) => {
      const sent = await client.sendTracked(to, "note", { text });
      return { id: sent.id, result: (await sent.receipt).result };
    },
  };
}
