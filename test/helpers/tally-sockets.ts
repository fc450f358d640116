// What Tally tests reach that apps do not: a client's raw relay sockets (read through the client's
// private field, so the SDK carries no hook for it).
import type { TallyClient } from "../../clients/tally/client";
import type { RelaySet } from "../../clients/tally/relays";

/** The raw socket of each relay of a client, in the order given, for tests that cut a connection the hard way. */
export function relaySockets(client: TallyClient): Array<WebSocket | undefined> {
  const relays = (client as unknown as { relays: RelaySet }).relays;
  return relays.relays.map((r) => r.conn.socket);
}
