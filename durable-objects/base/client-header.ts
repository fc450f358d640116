// The headers by which the Worker tells a socket object about an upgrade it hands it.

/**
 * The header the Worker sets on every upgrade it hands an object: the client's address as far as
 * it can be trusted (workers/client-address.ts), which the per-client bounds key on. The Worker
 * always overwrites it, so a client cannot choose it.
 */
export const CLIENT_HEADER = "x-relay-client";

/**
 * Set on a 101 answer that carries only a refusal (an error frame, then a close, on a socket no
 * object keeps): the Worker does not note the object as holding a live socket for it.
 */
export const REFUSED_HEADER = "x-relay-refused";

/** The client an upgrade came from (the Worker's CLIENT_HEADER), or "shared" when it cannot be told. */
export function clientOf(request: Request): string {
  return request.headers.get(CLIENT_HEADER)?.slice(0, 64) || "shared";
}

/** The host the client connected to (a Tally auth event names the relay it was made for). */
export const RELAY_HOST_HEADER = "x-relay-host";
