// A device on a SQLite database, in its own process, killed with SIGKILL while it writes and
// syncs, its file read back as the kill left it (every acknowledged write there: the other device
// could not have re-supplied it yet), then reopened from its database, through the real relay:
// both devices converge with nothing lost and nothing duplicated. PASSNOTE_E2E_RECORDS sets the records each side writes (default 10,000, the figure
// the rule is stated for: about 25 s on the loaded 2-core machine; fewer for a quick local run).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { build } from "esbuild";
import { afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { PassnotePeer } from "../../clients/passnote/peer";
import { RelayTransport } from "../../clients/passnote/relay-transport";
import { bytesToHex } from "../../shared/encoding";
import { decodeValue } from "../../clients/passnote/protocol/codec";
import { devicePublicKey, foundGroup, newDeviceKey } from "../../clients/passnote/protocol/roster";
import { digest } from "../helpers/passnote-data";
import { waitFor } from "../helpers/wait";

const relayUrl = inject("relayUrl").replace(/^http/, "ws");
const RECORDS = Number(process.env.PASSNOTE_E2E_RECORDS ?? 10_000);
let child = "";
// The device's program, bundled once: each process then starts in a fraction of a second.
beforeAll(async () => {
  child = join(mkdtempSync(join(tmpdir(), "passnote-child-")), "device.mjs");
  await build({
    entryPoints: [new URL("../helpers/passnote-peer-child.ts", import.meta.url).pathname],
    outfile: child,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node22",
    logLevel: "warning",
  });
});
const running: ChildProcess[] = [];
const closing: Array<{ close(): void }> = [];
afterEach(() => {
  for (const c of running.splice(0)) c.kill("SIGKILL");
  for (const c of closing.splice(0)) c.close();
});

/** A device process; its lines as they come, and a way to wait for one. */
function device(db: string, identityJson?: string) {
  const p = spawn(process.execPath, ["--no-warnings", child, relayUrl, db, String(RECORDS), ...(identityJson ? [identityJson] : [])], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.push(p);
  const lines: string[] = [];
  let buf = "";
  let err = "";
  p.stdout!.on("data", (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split("\n");
    buf = parts.pop()!;
    lines.push(...parts);
  });
  p.stderr!.on("data", (d) => (err += d));
  const last = (prefix: string) =>
    lines
      .filter((l) => l.startsWith(prefix))
      .pop()
      ?.slice(prefix.length)
      .split(" ")
      .map(Number);
  return {
    p,
    lines,
    /** Records in "notes" at the last report. */
    have: () => last("have ")?.[0] ?? 0,
    /** Alice's records among them. */
    fromAlice: () => last("have ")?.[1] ?? 0,
    /** The last of its own writes acknowledged durable (-1: none). */
    acked: () => last("ack ")?.[0] ?? -1,
    stderr: () => err,
    digest: () => lines.find((l) => l.startsWith("digest "))?.slice(7),
  };
}

describe("the Passnote protocol with a persistent store: a device killed mid-sync and reopened from its database", () => {
  it(`two devices write ${RECORDS.toLocaleString("en")} records each; one is killed with SIGKILL mid-write during sync, its file holds every write it acknowledged, and reopened both converge, nothing lost, nothing duplicated`, async () => {
    const owner = foundGroup();
    const bob = { group: owner.group, deviceKey: newDeviceKey() };
    const ta = await RelayTransport.connect({ relayUrl, rosterKey: owner.group.rosterKey });
    const a = new PassnotePeer({ transport: ta, identity: owner, antiEntropyIntervalMs: 2_000 });
    closing.push(a);
    a.admit(devicePublicKey(bob.deviceKey));
    for (let i = 0; i < RECORDS; i++) a.put("notes", `a${i}`, { from: "a", i });
    const started = performance.now();

    const db = join(mkdtempSync(join(tmpdir(), "passnote-e2e-")), "bob.db");
    const hex = (b: Uint8Array) => bytesToHex(b);
    const first = device(
      db,
      JSON.stringify({
        deviceKey: hex(bob.deviceKey),
        rosterKey: hex(owner.group.rosterKey),
        groupKey: hex(owner.group.groupKey),
        owner: hex(owner.group.owner),
      }),
    );
    // Mid-write during sync: bob has acknowledged some of his writes, not all, and alice's records
    // are coming in.
    await waitFor(() => (first.acked() >= RECORDS / 2 && first.fromAlice() > 0) || first.p.exitCode !== null, {
      timeout: 30_000,
      what: `bob writing while syncing (${first.stderr()})`,
    });
    first.p.kill("SIGKILL");
    await new Promise((r) => first.p.once("exit", r));
    const [acked, fromAlice, atKill] = [first.acked(), first.fromAlice(), first.have()];
    expect(first.lines).not.toContain("written"); // killed mid-write
    expect(fromAlice).toBeGreaterThan(0); // while alice's records came in

    // The file as the kill left it, read directly: every write bob acknowledged is there, whole,
    // and so is every record of alice's he had reported holding.
    const file = new DatabaseSync(db); // read only by its SELECTs: opening it read-write lets SQLite recover the WAL the kill left;
    const rows = file.prepare("SELECT key, value FROM records WHERE collection = 'notes'").all() as Array<{
      key: string;
      value: Uint8Array;
    }>;
    file.close();
    const onDisk = new Map(rows.map((r) => [r.key, decodeValue(r.value)?.value]));
    for (let i = 0; i <= acked; i++) expect(onDisk.get(`b${i}`), `b${i}`).toEqual({ from: "b", i });
    expect([...onDisk.keys()].filter((k) => k.startsWith("a")).length).toBeGreaterThanOrEqual(fromAlice);
    for (const [k, v] of onDisk) if (k.startsWith("a")) expect(v).toEqual({ from: "a", i: Number(k.slice(1)) });

    // Reopened from its database alone (no keys given): the records, keys and clock come back, and
    // it writes the records the kill left unwritten.
    const second = device(db);
    await waitFor(() => second.digest() !== undefined && a.store.size("notes") === 2 * RECORDS, {
      timeout: 60_000,
      what: "convergence",
    }).catch((e: Error) => {
      throw new Error(
        `${e.message} (bob has ${second.have()}, alice ${a.store.size("notes")}; bob said ${second.lines.slice(-3).join(" | ")}) ${second.stderr()}`,
      );
    });
    const ms = Math.round(performance.now() - started);
    console.log(
      `passnote persistent store, ${RECORDS} records each, bob killed at ${atKill} (${acked + 1} of his acknowledged, ${fromAlice} of alice's): converged in ${ms} ms`,
    );
    // Nothing lost, nothing duplicated: each side holds exactly the 2 × RECORDS documents, the same ones.
    expect(a.store.size("notes")).toBe(2 * RECORDS);
    expect(second.digest()).toBe(digest(a.store));
    for (let i = 0; i < RECORDS; i++) expect(a.get("notes", `b${i}`)).toEqual({ from: "b", i });
  }, 180_000); // the waits above (30 s, 30 s, 60 s) and the two process starts
});
