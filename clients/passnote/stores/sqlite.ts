// A Passnote store in one SQLite file, for Node (the `edge-relay/passnote-sqlite` entry). It uses
// `node:sqlite`, built into Node 22.13 and later (no flag; 22.5-22.12 with --experimental-sqlite),
// so the SDK brings no native dependency; on a Node without it, open() says so. Reached through
// process.getBuiltinModule, so importing this module never pulls Node modules into a bundle.
//
// Durability: WAL journal, and every merge is its own transaction, committed before merge()
// returns: a write the app was told about survives the process being killed (SIGKILL) at any
// point. `synchronous` is NORMAL by default (a power loss may lose the last transactions, never
// corrupt the file); `durability: "full"` syncs every commit to disk (slower). Two processes may
// open one file (SQLite's own locking; a busy database is waited for up to 5 s): each is its own
// instance with its own inst token, and neither loses the other's writes (the upsert keeps the
// greater HLC).
import type { HeadColumns, RecordRow, StorageAdapter } from "./adapter";
import { AdapterStore } from "./adapter-store";
import { recordFingerprint } from "../protocol/records";
import { FINGERPRINT_BYTES } from "../protocol/wire";
import { plainKeySeal, wrappingKeySeal, type KeySeal } from "./keys";

type Sqlite = typeof import("node:sqlite");
type Db = import("node:sqlite").DatabaseSync;
type Stmt = import("node:sqlite").StatementSync;

export interface SqliteStoreOptions {
  /**
   * How the device's keys are kept: `{ wrappingKey }` seals them (XChaCha20-Poly1305) under a
   * 32-byte key the app brings, e.g. derivePassphraseKey(passphrase, salt) of a passphrase the
   * person types; "plain" (the default: Node has no key store of its own) keeps them as they are,
   * in a file only its owner can read.
   */
  keys?: "plain" | { wrappingKey: Uint8Array };
  /** "normal" (default): survives a killed process; "full": also a power loss, at a cost per write. */
  durability?: "normal" | "full";
}

/** How long a write waits for another process that holds the database's write lock. */
export const SQLITE_BUSY_TIMEOUT_MS = 5_000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS records (
  collection TEXT NOT NULL,
  key TEXT NOT NULL,
  hlc TEXT NOT NULL,
  deleted INTEGER NOT NULL,
  crdt_type TEXT,
  value BLOB NOT NULL,
  fp BLOB NOT NULL,
  PRIMARY KEY (collection, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
`;

function loadSqlite(): Sqlite {
  const get = (globalThis as { process?: { getBuiltinModule?: (n: string) => unknown; version?: string } }).process;
  let mod: Sqlite | undefined;
  try {
    mod = get?.getBuiltinModule?.("node:sqlite") as Sqlite | undefined;
  } catch {
    mod = undefined;
  }
  if (!mod?.DatabaseSync) {
    throw new Error(
      `SqliteStore needs node:sqlite, built into Node 22.13 and later (Node 22.5-22.12: run with --experimental-sqlite); this is Node ${get?.version ?? "unknown"}. On older Node, keep a MemoryStore or bring your own StorageAdapter.`,
    );
  }
  return mod;
}

/** The SQLite database as a storage adapter: one file, every save its own committed transaction. */
export class SqliteAdapter implements StorageAdapter {
  private readonly upsert: Stmt;
  private readonly putMeta: Stmt;
  private readonly getMeta: Stmt;
  private readonly getRecord: Stmt;

  private constructor(
    private readonly db: Db,
    /** The file (":memory:" for none). */
    readonly path: string,
  ) {
    this.upsert = db.prepare(
      `INSERT INTO records (collection, key, hlc, deleted, crdt_type, value, fp) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (collection, key) DO UPDATE SET hlc = excluded.hlc, deleted = excluded.deleted, crdt_type = excluded.crdt_type, value = excluded.value, fp = excluded.fp
       WHERE excluded.hlc > records.hlc`,
    );
    this.putMeta = db.prepare("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)");
    this.getMeta = db.prepare("SELECT value FROM meta WHERE name = ?");
    this.getRecord = db.prepare("SELECT collection, key, hlc, deleted, crdt_type, value, fp FROM records WHERE collection = ? AND key = ?");
  }

  /** Opens (creating if needed) the database file at `path` (":memory:": none). */
  static open(path: string, opts: Pick<SqliteStoreOptions, "durability"> = {}): SqliteAdapter {
    const { DatabaseSync } = loadSqlite();
    if (path !== ":memory:") {
      const fs = nodeFs();
      fs.closeSync(fs.openSync(path, "a", 0o600)); // created readable by its owner only
    }
    const db = new DatabaseSync(path);
    try {
      db.exec(
        `PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}; PRAGMA journal_mode = WAL; PRAGMA synchronous = ${opts.durability === "full" ? "FULL" : "NORMAL"};`,
      );
      db.exec(SCHEMA);
      return new SqliteAdapter(db, path);
    } catch (e) {
      db.close();
      throw e;
    }
  }

  /** Every record; with `values: false` (the store reads values on demand, loadSync) without their values. */
  *loadAll(opts: { values: boolean } = { values: true }): Iterable<RecordRow> {
    const select = this.db.prepare(
      `SELECT collection, key, hlc, deleted, crdt_type, ${opts.values ? "value" : "x'' AS value"}, fp FROM records`,
    );
    // Rows as arrays where this Node can (22.16+): less to build per row than objects.
    if (typeof (select as { setReturnArrays?: unknown }).setReturnArrays === "function") {
      (select as unknown as { setReturnArrays(on: boolean): void }).setReturnArrays(true);
      for (const a of select.iterate() as unknown as Iterable<[string, string, string, number, string | null, Uint8Array, Uint8Array]>) {
        yield { collection: a[0], key: a[1], hlc: a[2], deleted: a[3], crdt_type: a[4], value: a[5], fp: a[6] };
      }
    } else {
      yield* select.iterate() as Iterable<RecordRow>;
    }
  }

  /**
   * The index of every collection in columns, one statement for the whole database: SQLite
   * aggregates each collection's keys and HLCs into one JSON array each and its fingerprints into
   * one blob (the three aggregates step over the same rows, so their i-th items are one record's).
   * Where a fingerprint is not 16 bytes (a file changed outside the SDK) that collection is read
   * row by row and those fingerprints are computed.
   */
  loadHeads(): HeadColumns[] {
    const groups = this.db
      .prepare(
        `SELECT collection, count(*) AS n, json_group_array(key) AS keys, json_group_array(hlc) AS hlcs,
           CAST(group_concat(fp, '') AS BLOB) AS fps, sum(length(fp) = ${FINGERPRINT_BYTES}) AS whole
         FROM records GROUP BY collection`,
      )
      .all() as Array<{ collection: string; n: number; keys: string; hlcs: string; fps: Uint8Array | null; whole: number }>;
    const out: HeadColumns[] = [];
    for (const g of groups) {
      if (g.whole === g.n && g.fps?.length === g.n * FINGERPRINT_BYTES) {
        out.push({ collection: g.collection, keys: JSON.parse(g.keys), hlcs: JSON.parse(g.hlcs), fps: g.fps });
        continue;
      }
      const rows = this.db.prepare("SELECT key, hlc, fp FROM records WHERE collection = ?").all(g.collection) as Array<{
        key: string;
        hlc: string;
        fp: Uint8Array;
      }>;
      const fps = new Uint8Array(rows.length * FINGERPRINT_BYTES);
      rows.forEach((r, i) => {
        fps.set(r.fp.length === FINGERPRINT_BYTES ? r.fp : recordFingerprint(r.key, r.hlc), i * FINGERPRINT_BYTES);
      });
      out.push({ collection: g.collection, keys: rows.map((r) => r.key), hlcs: rows.map((r) => r.hlc), fps });
    }
    return out;
  }

  /** Committed before it returns: durable then (nothing to wait for). */
  save(r: RecordRow): void {
    this.write(() => this.upsert.run(r.collection, r.key, r.hlc, r.deleted, r.crdt_type, r.value, r.fp));
  }

  /** One record, read at once (the store keeps only its index in memory and reads values here). */
  loadSync(collection: string, key: string): RecordRow | undefined {
    if (!this.db.isOpen) throw new Error(`the SQLite database ${this.path} was closed (store.close())`);
    return this.getRecord.get(collection, key) as RecordRow | undefined;
  }

  loadMeta(name: string): Uint8Array | undefined {
    return (this.getMeta.get(name) as { value: Uint8Array } | undefined)?.value;
  }

  saveMeta(name: string, value: Uint8Array): void {
    this.write(() => this.putMeta.run(name, value));
  }

  /** One write, or an error that says what happened in this store's terms (not SQLite's internals). */
  private write(run: () => unknown): void {
    if (!this.db.isOpen) throw new Error(`the SQLite database ${this.path} was closed (store.close())`);
    try {
      run();
    } catch (e) {
      throw new Error(
        `the SQLite database ${this.path} refused a write (${(e as Error).message}): is the disk full or the file read-only?`,
      );
    }
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }

  /** Deletes the file and its -wal and -shm companions (once closed). */
  destroy(): void {
    this.close();
    if (this.path === ":memory:") return;
    const fs = nodeFs();
    for (const f of [this.path, `${this.path}-wal`, `${this.path}-shm`]) fs.rmSync(f, { force: true });
  }
}

function nodeFs(): typeof import("node:fs") {
  return (globalThis as { process: { getBuiltinModule: (n: string) => unknown } }).process.getBuiltinModule(
    "node:fs",
  ) as typeof import("node:fs");
}

/** A Passnote store in one SQLite file: the SDK's layer (AdapterStore) over a SqliteAdapter. */
export class SqliteStore extends AdapterStore {
  private constructor(
    adapter: SqliteAdapter,
    keySeal: KeySeal,
    /** The file (":memory:" for none). */
    readonly path: string,
  ) {
    super(adapter, keySeal);
  }

  /** Opens (creating if needed) the database at `path` as a new instance with a fresh inst token. */
  static async open(path: string, opts: SqliteStoreOptions = {}): Promise<SqliteStore> {
    const adapter = SqliteAdapter.open(path, opts);
    try {
      const seal = opts.keys === undefined || opts.keys === "plain" ? plainKeySeal : wrappingKeySeal(opts.keys.wrappingKey);
      const store = new SqliteStore(adapter, seal, path);
      await store.load();
      return store;
    } catch (e) {
      adapter.close();
      throw e;
    }
  }
}
