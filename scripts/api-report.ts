// The API report of an SDK entry (docs/api/<entry>.api.txt): every name the entry exports, what it
// is, and its type; for a class, every public member with its type. Made with the TypeScript
// compiler from the sources, so a change to the surface shows as a diff of this file; a unit test
// (test/unit/clients/tally/api-report.test.ts) compares it with the checked-in report.
//   node --import tsx scripts/api-report.ts            writes docs/api/<entry>.api.txt for each entry
//   node --import tsx scripts/api-report.ts --check    exits 1 when it differs
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The SDK entries with a report: entry name, source file. */
export const API_ENTRIES: Record<string, string> = {
  tally: "clients/tally/index.ts",
  passnote: "clients/passnote/index.ts",
  "passnote-sqlite": "clients/passnote/stores/sqlite.ts",
};

export function reportPath(entry: string): string {
  return join(root, "docs/api", `${entry}.api.txt`);
}

/** The report of one entry, as text. */
export function apiReport(entry: string): string {
  const file = join(root, API_ENTRIES[entry]);
  const program = ts.createProgram([file], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ES2022,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ["lib.es2023.d.ts", "lib.dom.d.ts", "lib.dom.iterable.d.ts"],
    types: ["node"],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowImportingTsExtensions: true,
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  if (!source) throw new Error(`no source ${file}`);
  const moduleSymbol = checker.getSymbolAtLocation(source);
  if (!moduleSymbol) throw new Error(`${file} is not a module`);
  const flags = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.UseFullyQualifiedType;
  const text = (t: ts.Type) => checker.typeToString(t, undefined, flags).replace(/import\("[^"]*"\)\./g, "");
  const lines: string[] = [`# The exports of edge-relay/${entry} (scripts/api-report.ts; do not edit)`, ""];
  const exports = checker.getExportsOfModule(moduleSymbol).sort((a, b) => a.name.localeCompare(b.name));
  for (const exp of exports) {
    const sym = exp.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exp) : exp;
    const decl = sym.declarations?.[0];
    if (sym.flags & ts.SymbolFlags.Class && decl) {
      lines.push(`class ${exp.name}`);
      const instance = checker.getDeclaredTypeOfSymbol(sym);
      const statics = checker.getTypeOfSymbolAtLocation(sym, decl);
      for (const ctor of statics.getConstructSignatures())
        lines.push(`  constructor${checker.signatureToString(ctor, undefined, flags).replace(/import\("[^"]*"\)\./g, "")}`);
      for (const p of statics.getProperties()) {
        if (p.name === "prototype" || !isPublic(p)) continue;
        lines.push(`  static ${p.name}: ${text(checker.getTypeOfSymbolAtLocation(p, decl))}`);
      }
      for (const p of checker.getPropertiesOfType(instance).sort((a, b) => a.name.localeCompare(b.name))) {
        if (!isPublic(p)) continue;
        const readonly = p.declarations?.some((d) => ts.getCombinedModifierFlags(d as ts.Declaration) & ts.ModifierFlags.Readonly)
          ? "readonly "
          : "";
        lines.push(`  ${readonly}${p.name}: ${text(checker.getTypeOfSymbolAtLocation(p, decl))}`);
      }
    } else if (sym.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)) {
      if (decl && ts.isTypeAliasDeclaration(decl))
        lines.push(
          `type ${exp.name} = ${decl.type
            .getText()
            .replace(/\/\*[\s\S]*?\*\//g, "")
            .replace(/\s+/g, " ")
            .trim()}`,
        );
      else lines.push(`interface ${exp.name}`);
      if (sym.flags & ts.SymbolFlags.Interface) {
        const t = checker.getDeclaredTypeOfSymbol(sym);
        for (const p of checker.getPropertiesOfType(t)) {
          const opt = p.flags & ts.SymbolFlags.Optional ? "?" : "";
          lines.push(`  ${p.name}${opt}: ${decl ? text(checker.getTypeOfSymbolAtLocation(p, decl)) : "?"}`);
        }
      }
    } else if (decl) {
      const kind = sym.flags & ts.SymbolFlags.Function ? "function" : "const";
      lines.push(`${kind} ${exp.name}: ${text(checker.getTypeOfSymbolAtLocation(sym, decl))}`);
    }
  }
  return lines.join("\n") + "\n";
}

function isPublic(p: ts.Symbol): boolean {
  const d = p.valueDeclaration ?? p.declarations?.[0];
  if (!d) return true;
  const m = ts.getCombinedModifierFlags(d as ts.Declaration);
  return !(m & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) && !p.name.startsWith("#");
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes("--check");
  let differs = false;
  for (const entry of Object.keys(API_ENTRIES)) {
    const now = apiReport(entry);
    let before = "";
    try {
      before = readFileSync(reportPath(entry), "utf8");
    } catch {
      // first report
    }
    if (check) {
      if (now !== before) {
        console.error(`${reportPath(entry)} differs from the sources: run node --import tsx scripts/api-report.ts`);
        differs = true;
      }
    } else writeFileSync(reportPath(entry), now);
  }
  if (differs) process.exit(1);
}
