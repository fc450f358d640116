// The headers by which the Worker tells a socket object about an upgrade it hands it (one list,
// server/object-headers.ts, which the Worker imports too), and the client an upgrade came from.
import { CLIENT_HEADER, SHARED_CLIENT, UPGRADE_REQUEST_ID_HEADER } from "../../server/object-headers";

export { CLIENT_HEADER, REFUSED_HEADER, RELAY_HOST_HEADER, SHARED_CLIENT } from "../../server/object-headers";

/** The client an upgrade came from (the Worker's CLIENT_HEADER), or SHARED_CLIENT when it cannot be told. */
export function clientOf(request: Request): string {
  return request.headers.get(CLIENT_HEADER)?.slice(0, 64) || SHARED_CLIENT;
}

/** Whether per-client bounds apply to `client`: not to the shared one (no trusted address), nor to none. */
export function isTrustedClient(client: string | undefined): client is string {
  return client !== undefined && client !== SHARED_CLIENT;
}

/** The request id of the upgrade (the Worker's UPGRADE_REQUEST_ID_HEADER), for the socket's log lines. */
export function requestIdOf(request: Request): string | undefined {
  return request.headers.get(UPGRADE_REQUEST_ID_HEADER)?.slice(0, 64) || undefined;
}
