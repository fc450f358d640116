// The relay's small Minca home (served at /connect/, the connect page the Minca protocol §2.2 puts at
// <origin>/connect): an account held in this browser that answers a code in the page's link,
// using the home side of clients/minca/protocol/home.ts over the rooms of the relay that served the page.
// State for tests and the curious: window.mincaHome.
import { HomeExchange, type AskShown, type Decision, type HomeOutcome } from "../../clients/minca/protocol/home";
import { newP256Key, p256KeyFromJwk, p256KeyToJwk, type P256Key } from "../../shared/minca/es256";
import { relayRooms } from "../../clients/minca/relay-room";

const STORAGE_KEY = "edge-relay.minca-home.account";
const $ = (id: string) => document.getElementById(id)!;

interface Stored {
  v: 1;
  jwk: JsonWebKey;
  name: string;
}

const view = {
  did: "",
  state: "no code",
  shown: null as AskShown | null,
  outcome: null as HomeOutcome | null,
};
(window as unknown as { mincaHome: typeof view }).mincaHome = view;

async function loadAccount(): Promise<{ key: P256Key; name: string }> {
  const raw = localStorage.getItem(STORAGE_KEY);
  if (raw) {
    try {
      const s = JSON.parse(raw) as Stored;
      return { key: await p256KeyFromJwk(s.jwk), name: s.name };
    } catch {
      // unreadable: make a new one
    }
  }
  const key = await newP256Key(true);
  const stored: Stored = { v: 1, jwk: await p256KeyToJwk(key), name: "My account" };
  localStorage.setItem(STORAGE_KEY, JSON.stringify(stored));
  return { key, name: stored.name };
}

function setState(s: string, tone = ""): void {
  view.state = s;
  const el = $("state");
  el.textContent = s;
  el.className = `pill ${tone}`;
}

async function main(): Promise<void> {
  for (const el of document.querySelectorAll("[data-origin]")) el.textContent = location.origin;
  const account = await loadAccount();
  view.did = account.key.did;
  $("did").textContent = account.key.did;
  const name = $("name") as HTMLInputElement;
  name.value = account.name;
  name.addEventListener("change", async () => {
    account.name = name.value.trim() || "My account";
    localStorage.setItem(STORAGE_KEY, JSON.stringify({ v: 1, jwk: await p256KeyToJwk(account.key), name: account.name }));
  });
  $("forget").addEventListener("click", () => {
    localStorage.removeItem(STORAGE_KEY);
    location.reload();
  });
  if (!location.hash) return;

  const home = new HomeExchange({
    origin: location.origin,
    link: location.href,
    account: { key: account.key, name: account.name },
    join: relayRooms(location.origin),
    approve: (shown) =>
      new Promise<Decision>((resolve) => {
        view.shown = shown;
        $("ask-name").textContent = shown.name;
        $("check").textContent = shown.check;
        $("ask").hidden = false;
        $("decide").addEventListener(
          "submit",
          (ev) => {
            ev.preventDefault();
            $("ask").hidden = true;
            resolve({ allow: true });
          },
          { once: true },
        );
        $("deny").addEventListener(
          "click",
          () => {
            $("ask").hidden = true;
            resolve({ allow: false, reason: "the person said no" });
          },
          { once: true },
        );
      }),
    onEvent: (e) => {
      if (e.kind === "state") setState(e.state, e.state === "done" ? "ok" : "warn");
    },
  });
  // The code is spent once asked: take it out of the address bar and the history.
  history.replaceState(null, "", location.pathname);
  setState("joining the room", "warn");
  await home.start();
  const outcome = await home.outcome;
  view.outcome = outcome;
  const said: Record<HomeOutcome["status"], string> = {
    done: "Connected: the program holds a records-only grant.",
    granted: "Granted, but the program did not confirm in time.",
    denied: "Not connected: denied.",
    nobody_waiting: "Nobody waits on this link any more: run the program again for a new one.",
    no_code: "There is no code in this link.",
    closed: "The exchange ended before it finished.",
  };
  $("result").textContent = said[outcome.status];
  setState(outcome.status, outcome.status === "done" ? "ok" : outcome.status === "granted" ? "warn" : "bad");
}

main().catch((err) => {
  setState("failed", "bad");
  $("result").textContent = String(err);
});
