// The headers the Worker and the socket objects exchange on a WebSocket upgrade. Both sides import
// them from here, so the Worker needs nothing from an object's file but its class.

/**
 * The header the Worker sets on every upgrade it hands an object: the client's address as far as
 * it can be trusted (workers/client-address.ts), which the per-client bounds key on. The Worker
 * always overwrites it, so a client cannot choose it.
 */
export const CLIENT_HEADER = "x-relay-client";

/**
 * The client key of every request whose address cannot be trusted (self-hosted with no
 * TRUSTED_PROXY_HEADER: "shared mode"). Per-client bounds do not apply to it: one bucket for
 * everyone would let any client lock every other out (docs/hostile.md, "Shared mode").
 */
export const SHARED_CLIENT = "shared";

/**
 * Set on a 101 answer that carries only a refusal (an error frame, then a close, on a socket no
 * object keeps): the Worker does not note the object as holding a live socket for it.
 */
export const REFUSED_HEADER = "x-relay-refused";

/**
 * The request id of the upgrade (workers/request-log.ts), so that the socket's session line and
 * its authentication failures carry the id of the upgrade's request line. Always overwritten.
 */
export const UPGRADE_REQUEST_ID_HEADER = "x-relay-request-id";

/** The host the client connected to (a Tally auth event names the relay it was made for). */
export const RELAY_HOST_HEADER = "x-relay-host";
