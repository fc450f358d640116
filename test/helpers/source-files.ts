// The project's source files below a folder, for the tests that read the tree as text (the import
// graph, the file-size gate, the one-formatIssue check): every file whose name matches `pattern`,
// declaration files, node_modules and dist left out.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

export function sourceFiles(dir: string, pattern: RegExp = /\.(ts|mts|mjs|js)$/): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === "node_modules" || name === "dist") return [];
    if (statSync(path).isDirectory()) return sourceFiles(path, pattern);
    return pattern.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}
