// The demo page's script (docs/browser.md): the project's Tally client in a browser tab. It
// registers with the relay that served the page, sends envelopes through it, and opens a WebRTC
// data channel by the relay's signaling (clients/tally/webrtc.ts); each side deduplicates the
// copy that came by the other path. The page's state is mirrored on `window.tallyDemo` for tests.
import * as z from "zod";
import { KeyValueTallyStore, TallyClient, WebStorageKeyValue, generateSecretKey } from "../../clients/tally/index";
import { isNpub } from "../../shared/tally/keys";
import { DirectMesh, type DirectState } from "../../clients/tally/webrtc";
import { bytesToHex, hexToBytes } from "../../shared/encoding";

/** The type of the demo's application messages. */
const CHAT = "chat";
/** The type of the envelope Connect sends first, for the envelope exchange the relay asks for. */
const HELLO = "hello";

interface LogRow {
  at: string;
  what: "sent" | "applied" | "duplicate" | "receipt" | "queued" | "channel" | "dropped" | "error";
  id: string;
  via: string;
  detail: string;
}

interface DemoState {
  npub: string;
  deviceId: string | null;
  status: "connecting" | "registered" | "closed";
  peer: string | null;
  channels: Record<string, DirectState>;
  log: LogRow[];
}

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

/** This tab's key: from the #device= link (another device of a user), else kept for the tab's session. */
function secretKey(): Uint8Array {
  const fromLink = new URLSearchParams(location.hash.slice(1)).get("device");
  if (fromLink && /^[0-9a-f]{64}$/.test(fromLink)) {
    sessionStorage.setItem("demo:sk", fromLink);
    history.replaceState(null, "", location.pathname + location.search);
  }
  let hex = sessionStorage.getItem("demo:sk");
  if (!hex || !/^[0-9a-f]{64}$/.test(hex)) {
    hex = bytesToHex(generateSecretKey());
    sessionStorage.setItem("demo:sk", hex);
  }
  return hexToBytes(hex);
}

const sk = secretKey();
const relayUrl = `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}`;
let peer: string | null = null;
const client = new TallyClient({
  relayUrl,
  secretKey: sk,
  store: new KeyValueTallyStore(new WebStorageKeyValue(sessionStorage, `tally:${bytesToHex(sk).slice(0, 8)}:`)),
  // The peer named on this page counts as a friend, so the remote allowance (12.8) keeps it.
  sync: { isFriend: (u) => u === peer },
});
const state: DemoState = { npub: client.npub, deviceId: null, status: "connecting", peer: null, channels: {}, log: [] };
(window as unknown as { tallyDemo: DemoState }).tallyDemo = state;

// ---- rendering ----------------------------------------------------------------------------

function pill(el: HTMLElement, text: string, tone: "ok" | "warn" | "bad" | "" = ""): void {
  el.textContent = text;
  el.className = `pill ${tone}`;
}

function log(row: Omit<LogRow, "at">): void {
  const full = { at: new Date().toISOString().slice(11, 23), ...row };
  state.log.push(full);
  const tr = document.createElement("tr");
  tr.className = row.what;
  tr.dataset.what = row.what;
  tr.dataset.id = row.id;
  tr.dataset.via = row.via;
  for (const [cls, v] of [
    ["", full.at],
    ["", row.what],
    ["id", row.id.slice(0, 12)],
    ["", row.via],
    ["", row.detail],
  ]) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = v;
    tr.appendChild(td);
  }
  $("log").insertBefore(tr, $("log").firstChild);
}

function renderChannel(): void {
  const states = Object.values(state.channels);
  const open = states.filter((s) => s === "open").length;
  if (open > 0) pill($("channel"), open === 1 ? "open" : `${open} open`, "ok");
  else if (states.includes("connecting")) pill($("channel"), "connecting", "warn");
  else pill($("channel"), states.length ? "closed" : "none");
}

$("me").textContent = client.npub;
$<HTMLAnchorElement>("device-link").href = `#device=${bytesToHex(sk)}`;

// ---- the client's events ------------------------------------------------------------------

client.on("registered", (deviceId) => {
  state.deviceId = deviceId;
  state.status = "registered";
  $("device").textContent = deviceId;
  pill($("status"), "registered", "ok");
});
client.on("close", (code) => {
  state.status = "closed";
  pill($("status"), `closed (${code}), reconnecting`, "bad");
});
// Chat messages by their own handler, the payload checked by a schema (a payload it refuses is
// answered "ignored"); any other type by the catch-all listener.
client.handle(CHAT, (inner, via) => log({ what: "applied", id: inner.id, via, detail: `${inner.type}: ${inner.payload.text}` }), {
  schema: z.object({ text: z.string() }),
});
client.on("message", (inner, via) => {
  if (inner.type !== CHAT) log({ what: "applied", id: inner.id, via, detail: `${inner.type}:` });
});
client.on("duplicate", (inner, via) =>
  log({ what: "duplicate", id: inner.id, via, detail: "already processed: dropped, receipted again" }),
);
client.on("dropped", (reason) => log({ what: "dropped", id: "", via: "", detail: reason }));
client.on("relay_error", (code, message, id) => log({ what: "error", id: id ?? "", via: "relay", detail: `${code}: ${message}` }));

const refused = new Set<string>();
const mesh = new DirectMesh(client, {
  // The friend mesh with the named peer, and the self-mesh with this user's other devices.
  accept: (u, d) => {
    if (u === peer || u === client.npub) return true;
    if (refused.has(`${u}/${d}`)) return false;
    refused.add(`${u}/${d}`);
    log({ what: "channel", id: d, via: "webrtc", detail: `refused: ${u} is not the Peer named here (paste its npub to accept)` });
    return false;
  },
  onState: (u, d, s, polite) => {
    state.channels[`${u}/${d}`] = s;
    log({ what: "channel", id: d, via: "webrtc", detail: `${s}, with ${u === client.npub ? "another device of mine" : "the peer"}` });
    $("role").textContent = `(${polite ? "polite" : "impolite"} end)`;
    renderChannel();
  },
});
(window as unknown as { tallyMesh: DirectMesh }).tallyMesh = mesh;

// ---- the controls -------------------------------------------------------------------------

function setPeer(value: string): boolean {
  const v = value.trim();
  if (!isNpub(v) || v === client.npub) {
    $<HTMLInputElement>("peer").setCustomValidity("an npub of another user");
    $<HTMLInputElement>("peer").reportValidity();
    return false;
  }
  $<HTMLInputElement>("peer").setCustomValidity("");
  peer = v;
  state.peer = v;
  return true;
}

// A pasted npub names the peer at once (the other tab may press Connect before this one does).
$("peer").addEventListener("input", () => {
  const v = $<HTMLInputElement>("peer").value.trim();
  if (isNpub(v) && v !== client.npub) setPeer(v);
});

/** Peers this page knows it has an envelope exchange with: it sent them one and got their receipt. */
const exchanged = new Set<string>();
/** Our envelopes' ids, by recipient, until their receipt. */
const sentTo = new Map<string, string>();
client.on("receipt", (id, _result, from) => {
  const to = sentTo.get(id);
  if (to !== undefined && (from === undefined || from === to)) exchanged.add(to);
  sentTo.delete(id);
});

/** Resolves once the peer's receipt for our envelope `id` arrived (the exchange is complete). */
function exchangeWith(user: string, id: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolveDone) => {
    const stop = client.on("receipt", (got) => {
      if (got !== id) return;
      stop();
      clearTimeout(timer);
      resolveDone(true);
    });
    const timer = setTimeout(() => {
      stop();
      resolveDone(exchanged.has(user));
    }, timeoutMs);
  });
}

// Connect: the relay introduces two users' devices to each other (peer_connect, both ways) only
// once they have an envelope exchange (each has sent the other an envelope through it), so an
// npub's devices cannot be found by anyone who names it. The page makes the exchange first: a
// hello envelope, whose receipt completes it; then it asks for the introduction.
$("peer-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  if (!setPeer($<HTMLInputElement>("peer").value)) return;
  const user = peer!;
  void (async () => {
    if (!exchanged.has(user)) {
      pill($("channel"), "saying hello", "warn");
      const hello = await client.sendTracked(user, HELLO, { text: "hello (to open a direct channel)" }, { paths: "relay" });
      const id = hello.id;
      sentTo.set(id, user);
      log({ what: "sent", id, via: "relay", detail: `${HELLO}: the relay introduces devices only after an envelope exchange` });
      hello.receipt.then(
        (r) => log({ what: "receipt", id, via: "", detail: String(r.result) }),
        () => {}, // a hello that expires unanswered: exchangeWith says what to do
      );
      if (!(await exchangeWith(user, id, 15_000))) {
        pill($("channel"), "no answer", "bad");
        log({
          what: "error",
          id,
          via: "relay",
          detail: "no receipt from the peer in 15 s: is its page open, on this relay, with your npub pasted? Press Connect again then",
        });
        return;
      }
    }
    client.connectPeer(user);
    if (!Object.keys(state.channels).some((k) => k.startsWith(`${user}/`))) pill($("channel"), "introducing", "warn");
  })();
});

/** Whether a direct channel to one of `user`'s devices is open. */
const channelOpenTo = (user: string) => Object.entries(state.channels).some(([k, s]) => k.startsWith(`${user}/`) && s === "open");

async function send(paths: "relay" | "both"): Promise<void> {
  if (!peer && !setPeer($<HTMLInputElement>("peer").value)) return;
  const text = $<HTMLInputElement>("text").value;
  const direct = paths === "both" && channelOpenTo(peer!);
  // Delivery awaited: the relay's answer, then the peer's receipt (it rejects if the message expires).
  const sent = await client.sendTracked(peer!, CHAT, { text }, { paths });
  const id = sent.id;
  sentTo.set(id, peer!);
  log({
    what: "sent",
    id,
    via: direct ? "direct+relay" : "relay",
    detail: paths === "both" && !direct ? `${CHAT}: ${text} (no direct channel open: the relay only; press Connect)` : `${CHAT}: ${text}`,
  });
  void sent.queued.then((a) => log({ what: "queued", id, via: "relay", detail: a.status }));
  sent.receipt.then(
    (r) => log({ what: "receipt", id, via: "", detail: String(r.result) }),
    (err) => log({ what: "error", id, via: "", detail: String(err) }),
  );
}
$("send-relay").addEventListener("click", () => void send("relay"));
$("send-both").addEventListener("click", () => void send("both"));

const fromQuery = new URLSearchParams(location.search).get("peer");
if (fromQuery) $<HTMLInputElement>("peer").value = fromQuery;

client.connect().catch((err) => pill($("status"), `failed: ${err instanceof Error ? err.message : err}`, "bad"));
