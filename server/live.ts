// Which objects hold open client sockets, for a clean shutdown of a self-hosted relay.
//
// Under `workerd serve` the Worker and every Durable Object of this script share one isolate, so
// this module's state is one map for the whole process: the Worker notes an object when it hands
// it a WebSocket upgrade, the object forgets itself when its last socket closes, and on SIGTERM the
// admin entrypoint (workers/admin.ts) asks each noted object to close its sockets with 1001, so
// clients reconnect at once instead of waiting out a dead TCP connection. A hibernated object
// stays noted: its sockets are still open, and the call wakes it.
//
// On Cloudflare the Worker and the objects run in separate isolates, and a relay never shuts down
// as a whole, so nothing is noted there: `tracking` is switched on only by the self-hosting
// configuration (RELAY_RUNTIME = "workerd", set by scripts/workerd-config.ts).

/** Object id (hex string) to the name of the namespace binding it lives in. */
const live = new Map<string, string>();
let draining = false;
let crowded = false;

interface LiveObjectRef {
  id: string;
  binding: string;
}

/** The Worker hands `id` of namespace `binding` a WebSocket upgrade. */
export function noteLive(id: string, binding: string): void {
  live.set(id, binding);
}

/** The object `id` has no open socket left. */
export function noteIdle(id: string): void {
  live.delete(id);
}

/** Every noted object, removed from the map (the shutdown takes them all). */
export function takeLive(): LiveObjectRef[] {
  const out = [...live].map(([id, binding]) => ({ id, binding }));
  live.clear();
  return out;
}

/** Every noted object, left noted (the admin API's blockip asks each to close a blocked address's sockets). */
export function liveObjects(): LiveObjectRef[] {
  return [...live].map(([id, binding]) => ({ id, binding }));
}

export function liveCount(): number {
  return live.size;
}

/** Once set, the Worker refuses new upgrades (503): the relay is shutting down. */
export function setDraining(on: boolean): void {
  draining = on;
}

export function isDraining(): boolean {
  return draining;
}

/**
 * Set by the launcher (POST /crowded on the admin socket) while the runtime's open descriptors are
 * near its open-file limit (scripts/open-files.ts): the Worker then refuses new upgrades (503), so
 * the runtime never reaches the limit through devices connecting, where an accept() that fails can
 * end it. The devices held keep working.
 */
export function setCrowded(on: boolean): void {
  crowded = on;
}

export function isCrowded(): boolean {
  return crowded;
}

/**
 * The seconds a long-poll (a mailbox's or a space log's `wait`) is held: near the open-file limit
 * none, as if it asked for no wait (it is answered at once with what there is), since a held
 * request holds its connection's descriptors for all its wait.
 */
export function heldWait(wait: number): number {
  return crowded ? 0 : wait;
}
