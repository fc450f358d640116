// An object's own name (the user, room, topic or account it was addressed by), kept in its own
// SQLite `meta` table: a cold start hands an object its id, never the name the id was made from.
// Read from storage once per instance; the first name an object is addressed by is its name for
// good, and being addressed by another one is a routing bug, thrown as such. Being addressed
// stores nothing (DESIGN section 3): until the object keeps something, the name is held in
// memory only, and it is written together with the object's first write.
import type { LazySchema } from "./base/schema";

export class OwnName {
  private known: string | null | undefined;
  private pending = false;

  constructor(
    private readonly schema: LazySchema,
    private readonly key: string,
  ) {}

  /** The name, or null before the object was first addressed (or since it last forgot everything). */
  get(): string | null {
    if (this.known === undefined) {
      if (!this.schema.exists) return null;
      this.known = this.schema.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", this.key).toArray()[0]?.value ?? null;
    }
    return this.known;
  }

  /** Keeps `name` on first sight; throws when the object already has another. */
  claim(name: string): void {
    const known = this.get();
    if (known === name) return;
    if (known !== null) throw new Error(`object of ${this.key} ${known} addressed as ${name}`);
    this.known = name;
    if (this.schema.exists) {
      this.write(name);
      return;
    }
    if (this.pending) return;
    this.pending = true;
    this.schema.whenCreated(() => {
      this.pending = false;
      if (this.known) this.write(this.known);
    });
  }

  /** Forgets the name (the object deleted its storage). */
  reset(): void {
    this.known = undefined;
  }

  private write(name: string): void {
    this.schema.sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", this.key, name);
  }
}
