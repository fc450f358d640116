// What tests reach that apps do not: not exported by the package's entry (index.ts), so it is no
// part of the SDK's surface (the API report, docs/api/tally.api.txt, shows it is not there).
import type { TallyClient } from "./client";
import type { RelaySet } from "./relays";

/** The raw socket of each relay of a client, in the order given, for tests that cut a connection the hard way. */
export function relaySockets(client: TallyClient): Array<WebSocket | undefined> {
  const relays = (client as unknown as { relays: RelaySet }).relays;
  return relays.relays.map((r) => r.conn.socket);
}
