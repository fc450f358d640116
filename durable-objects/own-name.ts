// An object's own name (the user, room, topic or account it was addressed by), kept in its own
// SQLite `meta` table: a cold start hands an object its id, never the name the id was made from.
// Read from storage once per instance; the first name an object is addressed by is its name for
// good, and being addressed by another one is a routing bug, thrown as such.
export class OwnName {
  private known: string | null | undefined;

  constructor(
    private readonly sql: SqlStorage,
    private readonly key: string,
  ) {}

  /** The name, or null before the object was first addressed. */
  get(): string | null {
    if (this.known === undefined) {
      this.known = this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", this.key).toArray()[0]?.value ?? null;
    }
    return this.known;
  }

  /** Keeps `name` on first sight; throws when the object already has another. */
  claim(name: string): void {
    const known = this.get();
    if (known === name) return;
    if (known !== null) throw new Error(`object of ${this.key} ${known} addressed as ${name}`);
    this.sql.exec("INSERT INTO meta (key, value) VALUES (?, ?)", this.key, name);
    this.known = name;
  }

  /** Forgets the name (the object deleted its storage). */
  reset(): void {
    this.known = undefined;
  }
}
