import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { MIGRATIONS, currentSchema } from "../../../migrations/index";

const dir = new URL("../../../migrations/", import.meta.url).pathname;

describe("migrations", () => {
  it("every .sql file of every class folder is listed, in order", () => {
    const folders = readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
    expect(Object.keys(MIGRATIONS).sort()).toEqual(folders);
    for (const cls of folders) {
      const files = readdirSync(`${dir}${cls}`)
        .filter((f) => f.endsWith(".sql") && f !== "current.sql")
        .sort();
      const listed = (MIGRATIONS as Record<string, Array<{ name: string; sql: string }>>)[cls];
      expect(listed.map((m) => `${m.name}.sql`)).toEqual(files);
      for (const m of listed) expect(m.sql.length).toBeGreaterThan(0);
      // a class with more than one migration has its current schema (applied by a fresh object in one step)
      expect(readdirSync(`${dir}${cls}`).includes("current.sql"), cls).toBe(listed.length > 1);
      expect(currentSchema(listed) !== undefined, cls).toBe(listed.length > 1);
    }
  });

  it("a class's migrations are named by number in the order they apply (an object's last recorded migration says, by name, which are applied)", () => {
    for (const [cls, listed] of Object.entries(MIGRATIONS) as Array<[string, Array<{ name: string }>]>) {
      for (const [i, m] of listed.entries()) {
        expect(m.name, cls).toMatch(/^\d{4}_[a-z0-9_]+$/);
        if (i > 0) expect(m.name > listed[i - 1].name, `${cls}: ${m.name} after ${listed[i - 1].name}`).toBe(true);
      }
    }
  });
});
