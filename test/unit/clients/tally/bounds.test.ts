// The client's store stays bounded (clients/tally/store.ts prune, called by the client): processed
// ids and handler marks past their retention go, ignored marks are kept a year and 10,000 at most,
// and only those are named in hellos.
import { afterEach, describe, expect, it } from "vitest";
import { CLIENT_LIMITS, KeyValueTallyStore, MapKeyValue, TallyClient } from "../../../../clients/tally/index";
import { newUser } from "../../../helpers/tally";
import { fakeRelay, type FakeRelay } from "../../../helpers/tally-fake-relay";
import { waitFor } from "../../../helpers/wait";

const relays: FakeRelay[] = [];
const clients: TallyClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const r of relays.splice(0)) await r.close();
});

describe("7 stores bounded", () => {
  it("7 stores bounded: a running client prunes processed ids past their retention (pruneProcessed is called)", async () => {
    const kv = new MapKeyValue();
    const store = new KeyValueTallyStore(kv);
    const old = Date.now() - CLIENT_LIMITS.processed_ttl_ms - 1;
    await store.addProcessed("npub1someone", "old", old, "processed");
    await store.addProcessed("npub1someone", "new", Date.now(), "processed");
    const relay = await fakeRelay();
    relays.push(relay);
    const c = new TallyClient({ relayUrl: relay.url, secretKey: newUser().secretKey, store });
    clients.push(c);
    await c.connect();
    await waitFor(async () => (await kv.keys("processed/")).length === 1, { what: "the old id pruned from the store" });
    expect(await store.hasProcessed("npub1someone", "new")).toBe(true);
  });

  it("7 ignored marks are bounded: kept a year and the newest 10,000 at most, so hellos do not list them forever", async () => {
    const store = new KeyValueTallyStore(new MapKeyValue());
    const now = Date.now();
    await store.addProcessed("npub1x", "ancient", now - CLIENT_LIMITS.ignored_ttl_ms - 1, "ignored");
    for (let i = 0; i < CLIENT_LIMITS.max_ignored_marks + 5; i++)
      await store.addProcessed("npub1x", `m${i}`, now - 1_000_000 + i, "ignored");
    await store.prune(now);
    const left = await store.listIgnored();
    expect(left).toHaveLength(CLIENT_LIMITS.max_ignored_marks);
    const ids = new Set(left.map((k) => k.id));
    expect(ids.has("ancient")).toBe(false);
    for (let i = 0; i < 5; i++) expect(ids.has(`m${i}`)).toBe(false); // the oldest went
    expect(ids.has(`m${CLIENT_LIMITS.max_ignored_marks + 4}`)).toBe(true);
  });
});
