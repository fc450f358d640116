import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileKeyValue } from "../../../../clients/node/file-key-value";
import { KeyValueTallyStore, memoryStore, type OutboxItem } from "../../../../clients/tally/store";

const item = (id: string, created_at: number): OutboxItem => ({
  id,
  to_user_id: "npub1x",
  envelope: { type: "peer_envelope", envelope_version: 3, id, from_user_id: "a", to_user_id: "b", ciphertext: "AA==" },
  created_at,
  attempts: 0,
  last_attempt_at: 0,
});

describe("Tally client store", () => {
  it("the outbox lists oldest first and forgets what is deleted", async () => {
    const s = memoryStore();
    await s.putOutbox(item("b", 2));
    await s.putOutbox(item("a", 1));
    expect((await s.listOutbox()).map((i) => i.id)).toEqual(["a", "b"]);
    await s.deleteOutbox("a");
    expect((await s.listOutbox()).map((i) => i.id)).toEqual(["b"]);
  });

  it("7: processed ids are keyed by (from_user_id, id)", async () => {
    const s = memoryStore();
    await s.addProcessed("alice", "m1", Date.now());
    expect(await s.hasProcessed("alice", "m1")).toBe(true);
    expect(await s.hasProcessed("bob", "m1")).toBe(false);
  });

  it("7: the processed set persists across client restarts (file store)", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "tally-store-")), "store.json");
    const first = new KeyValueTallyStore(new FileKeyValue(path));
    await first.addProcessed("alice", "m/1", Date.now());
    await first.putOutbox(item("o1", 1));
    const second = new KeyValueTallyStore(new FileKeyValue(path));
    expect(await second.hasProcessed("alice", "m/1")).toBe(true);
    expect((await second.listOutbox()).map((i) => i.id)).toEqual(["o1"]);
  });

  it("7: processed ids are pruned only after their retention time", async () => {
    const s = new KeyValueTallyStore(new (await import("../../../../clients/tally/store")).MapKeyValue(), 1000);
    await s.addProcessed("alice", "old", 0);
    await s.addProcessed("alice", "new", Date.now());
    expect(await s.pruneProcessed()).toBe(1);
    expect(await s.hasProcessed("alice", "new")).toBe(true);
  });
});

describe("2 the file store after a crash mid-write", () => {
  it("2 a torn tail is cut off and fsynced: the first record written after it survives the next restart", async () => {
    const { appendFileSync, readFileSync } = await import("node:fs");
    const path = join(mkdtempSync(join(tmpdir(), "tally-store-")), "store.log");
    const before = new FileKeyValue(path);
    await before.set("outbox/a", "A");
    appendFileSync(path, '["outbox/b","B'); // the process died inside this write
    const afterCrash = new FileKeyValue(path);
    expect(await afterCrash.get("outbox/b")).toBeUndefined();
    await afterCrash.set("outbox/c", "C");
    expect(readFileSync(path, "utf8")).toBe('["outbox/a","A"]\n["outbox/c","C"]\n');
    const restarted = new FileKeyValue(path);
    expect(await restarted.get("outbox/a")).toBe("A");
    expect(await restarted.get("outbox/c")).toBe("C");
  });
});
