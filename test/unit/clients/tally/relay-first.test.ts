// relayMode "first" (clients/tally/paths.ts): the first registered relay takes an envelope, the
// next one when the first refuses it or does not store it. Two real WebSocket relays stand in.
import { afterEach, describe, expect, it } from "vitest";
import { TallyClient } from "../../../../clients/tally/index";
import { newUser } from "../../../helpers/tally";
import { fakeRelay, queuedIds, type FakeRelay } from "../../../helpers/tally-fake-relay";
import { waitFor } from "../../../helpers/wait";

const relays: FakeRelay[] = [];
const clients: TallyClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const r of relays.splice(0)) await r.close();
});

describe("relayMode first", () => {
  it('6.5 relayMode "first": a not_stored answer moves the envelope to the next relay, and its retry starts there', async () => {
    const first = await fakeRelay((ws, msg) => {
      if (msg.type !== "queue_peer_envelope") return;
      const env = msg.envelope as { id: string; to_user_id: string };
      ws.send(JSON.stringify({ type: "queued", id: env.id, to_user_id: env.to_user_id, status: "not_stored" }));
    });
    const second = await fakeRelay();
    relays.push(first, second);
    const c = new TallyClient({ relayUrls: [first.url, second.url], relayMode: "first", secretKey: newUser().secretKey, store: "memory" });
    clients.push(c);
    await c.connect();
    await waitFor(() => c.drained, { what: "drained" });
    const id = await c.send(newUser().npub, "note", {});
    await waitFor(() => queuedIds(second).includes(id), { what: "the envelope on the second relay" });
    expect(queuedIds(first)).toEqual([id]);
    await c.flushOutbox(); // the retry (its backoff not passed: nothing) ...
    c["outbox"].newSession(); // ... and after a re-registration, when everything is queued again
    await c.flushOutbox(true);
    await waitFor(() => queuedIds(second).filter((x) => x === id).length === 2, { what: "the retry on the second relay" });
    expect(queuedIds(first)).toEqual([id]);
  });
});
