// An object's SQLite schema, made on the first write that keeps something (docs/hostile.md,
// "nothing is stored for free"; docs/hostile.md). A request or socket that stores nothing (a GET of
// an unknown space, account or topic; an upgrade that never authenticates) reads through
// `exists` and finds nothing, without a table being created: the object leaves no storage behind.
// (workerd itself keeps an empty SQLite file of a few KiB for every object it has started: that
// is the runtime's, not ours.)
//
// The migrations of the class are still recorded in the object's own `_migrations` table and
// applied in order: all of them when the schema is first made, and the ones not yet applied when
// an instance first looks at a schema made by an earlier version of the code.
import type { Migration } from "../../migrations/index";

/** Applies the migrations not yet recorded in `_migrations`, in order, each in its own transaction. */
export function applyMigrations(storage: DurableObjectStorage, migrations: readonly Migration[]): void {
  const sql = storage.sql;
  sql.exec("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)");
  const done = new Set(
    sql
      .exec<{ name: string }>("SELECT name FROM _migrations")
      .toArray()
      .map((r) => r.name),
  );
  for (const m of migrations) {
    if (done.has(m.name)) continue;
    storage.transactionSync(() => {
      sql.exec(m.sql);
      sql.exec("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", m.name, Date.now());
    });
  }
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
    applyMigrations(this.storage, this.migrations);
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
