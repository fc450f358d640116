// An object's SQLite schema, made on the first write that keeps something (docs/hostile.md,
// "nothing is stored for free"; docs/hostile.md). A request or socket that stores nothing (a GET of
// an unknown space, account or topic; an upgrade that never authenticates) reads through
// `exists` and finds nothing, without a table being created: the object leaves no storage behind.
// (workerd itself keeps an empty SQLite file of a few KiB for every object it has started: that
// is the runtime's, not ours.)
//
// The migrations of the class are recorded in the object's own `_migrations` table. A migration
// is applied when it or any later migration of the class is recorded: migrations run strictly in
// order, each in its own transaction, so a recorded one implies every one before it. (A class's
// migrations are named by number in the order they apply, and a new one is only ever added after
// the last: "later" is by name, so a migration a later version of the code recorded, which this
// code does not know, counts too.) A fresh object (no schema yet) applies the class's current
// schema in one step (migrations/<Class>/current.sql: what the migrations leave), recording the
// class's last migration alone, in one transaction: no table made to be dropped, and a new user's
// first write pays for its tables and one row of record (rows written are what a Durable Object's
// storage is billed by). An object whose schema an earlier version of the code made applies the
// migrations after the last it recorded, in order, when an instance first looks at it; each
// records its own row. Objects made before this rule recorded one row per migration: the last of
// them reads the same.
import { currentSchema, type Migration } from "../../migrations/index";

/**
 * The table of applied migrations, keyed by name without a rowid: recording a migration writes
 * its row and no index entry (objects made before keep theirs with a rowid; both read the same).
 */
const MIGRATIONS_TABLE = "_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL) WITHOUT ROWID";

/** Applies the migrations after the last one recorded in `_migrations`, in order, each in its own transaction. */
export function applyMigrations(storage: DurableObjectStorage, migrations: readonly Migration[]): void {
  const sql = storage.sql;
  sql.exec(`CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE}`);
  const last = sql.exec<{ name: string | null }>("SELECT MAX(name) AS name FROM _migrations").one().name;
  for (const m of migrations) {
    if (last !== null && m.name <= last) continue;
    storage.transactionSync(() => {
      sql.exec(m.sql);
      sql.exec("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", m.name, Date.now());
    });
  }
}

/** Makes a fresh object's schema (it has none): the current schema and the class's last migration recorded, in one transaction. */
export function applyFresh(storage: DurableObjectStorage, migrations: readonly Migration[]): void {
  const current = currentSchema(migrations);
  if (current === undefined) {
    applyMigrations(storage, migrations);
    return;
  }
  const sql = storage.sql;
  storage.transactionSync(() => {
    sql.exec(`CREATE TABLE ${MIGRATIONS_TABLE}`);
    sql.exec(current);
    sql.exec("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", migrations[migrations.length - 1].name, Date.now());
  });
}

export class LazySchema {
  readonly sql: SqlStorage;
  /** undefined until first asked (one look at sqlite_master per instance). */
  private present: boolean | undefined;
  private readonly onCreate: Array<() => void> = [];

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly migrations: readonly Migration[],
  ) {
    this.sql = storage.sql;
  }

  /** Whether this object has ever kept anything (its schema exists). Reads check it first. */
  get exists(): boolean {
    if (this.present === undefined) {
      this.present = this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'").toArray().length > 0;
      if (this.present) applyMigrations(this.storage, this.migrations);
    }
    return this.present;
  }

  /** Makes the schema, once: call it before a write that keeps something. */
  ensure(): void {
    if (this.exists) return;
    applyFresh(this.storage, this.migrations);
    this.present = true;
    // Writes between two awaits are committed together, so these land with the caller's write.
    for (const f of this.onCreate.splice(0)) f();
  }

  /** Runs `f` when this instance makes the schema (never when it existed before). */
  onMake(f: () => void): void {
    this.onCreate.push(f);
  }

  /** Runs `f` when the schema is made (what was kept in memory until something was stored). */
  whenCreated(f: () => void): void {
    if (this.present) f();
    else this.onCreate.push(f);
  }

  /** The object deleted all its storage (deleteAll): the schema is made again on the next write. */
  forget(): void {
    this.present = false;
  }
}
