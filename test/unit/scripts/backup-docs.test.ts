// Backups readable by the relay's user only: the README's backup commands ("Backing up and
// restoring the data directory"), run as written on a scratch data directory (paths moved under a
// temporary folder, systemctl left out), make nothing that other users can read.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";

const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
const section = readme.slice(readme.indexOf("### Backing up and restoring"), readme.indexOf("### Running it in public"));
const commands = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) =>
  m[1]
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#") && !l.startsWith("systemctl ")),
);
const hasSqlite3 = spawnSync("sqlite3", ["-version"]).status === 0;

/** A data directory as the relay leaves it: 0700, one namespace folder, SQLite files 0600. */
function scratch(): string {
  const root = mkdtempSync(join(tmpdir(), "relay-backup-"));
  for (const d of ["var/lib", "root", "backup"]) mkdirSync(join(root, d), { recursive: true });
  const data = join(root, "var/lib/edge-relay");
  mkdirSync(join(data, "edge-relay-TallyUser"), { recursive: true, mode: 0o700 });
  chmodSync(data, 0o700);
  const db = new DatabaseSync(join(data, "edge-relay-TallyUser", `${"a".repeat(64)}.sqlite`));
  db.exec("CREATE TABLE t (x); INSERT INTO t VALUES (1)");
  db.close();
  writeFileSync(join(data, "relay.lock"), "{}\n", { mode: 0o600 });
  for (const f of readdirSync(data, { recursive: true }))
    chmodSync(join(data, String(f)), statSync(join(data, String(f))).isDirectory() ? 0o700 : 0o600);
  return root;
}

/** Runs a README line with its absolute paths moved under `root`, from a shell whose umask is 022. */
function run(root: string, line: string): void {
  const moved = line
    .replaceAll("/var/lib", `${root}/var/lib`)
    .replaceAll("/root/", `${root}/root/`)
    .replaceAll("/backup", `${root}/backup`);
  execFileSync("sh", ["-c", `umask 022; ${moved}`], { stdio: "pipe" });
}

function readableByOthers(dir: string): string[] {
  return readdirSync(dir, { recursive: true })
    .map((f) => join(dir, String(f)))
    .filter((p) => (statSync(p).mode & 0o077) !== 0);
}

describe("backups readable by the relay's user only", () => {
  it("the README gives the offline tar and the online sqlite3 copy, each under umask 077", () => {
    expect(commands.some((c) => c.includes("tar -C /var/lib -czf"))).toBe(true);
    expect(commands.some((c) => c.includes("sqlite3"))).toBe(true);
    for (const c of commands) expect(c).toContain("umask 077");
  });

  it("the offline backup's archive is 0600, and it restores 0700 / 0600", () => {
    const root = scratch();
    for (const c of commands.filter((c) => c.includes("tar "))) run(root, c);
    const archives = readdirSync(join(root, "root"));
    expect(archives).toHaveLength(1);
    expect(statSync(join(root, "root", archives[0])).mode & 0o777).toBe(0o600);
    const restored = join(root, "restored");
    mkdirSync(restored);
    execFileSync("tar", ["-C", restored, "-xzf", join(root, "root", archives[0])]);
    expect(readableByOthers(restored)).toEqual([]);
  });

  it.skipIf(!hasSqlite3)(
    "the online backup's copies are readable by their owner only, even in a backup folder an older command made 0755",
    () => {
      const root = scratch();
      mkdirSync(join(root, "backup/relay/edge-relay-TallyUser"), { recursive: true, mode: 0o755 });
      chmodSync(join(root, "backup/relay"), 0o755);
      chmodSync(join(root, "backup/relay/edge-relay-TallyUser"), 0o755);
      for (const c of commands.filter((c) => c.includes("sqlite3"))) run(root, c);
      const copied = readdirSync(join(root, "backup/relay"), { recursive: true }).map(String);
      expect(copied).toContain(join("edge-relay-TallyUser", `${"a".repeat(64)}.sqlite`));
      expect(statSync(join(root, "backup/relay")).mode & 0o077).toBe(0);
      expect(readableByOthers(join(root, "backup/relay"))).toEqual([]);
    },
  );
});
