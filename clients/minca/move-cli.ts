// `minca-move --account <file> --from <relay> --to <relay>` (the package's bin; `npm run move --`
// here): moves an account between Minca hosts from the command line (clients/minca/move.ts),
// showing each step's progress; with --dry-run it only reads the old host and says what a move
// would copy.
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { accountFromJson, accountToJson, type AccountFile } from "./account-file";
import { HostConnection } from "./host";
import { moveAccount, MoveError, type MoveProgress } from "./move";
import { parseMoveArgs } from "./move-args";

async function main(): Promise<number> {
  const args = parseMoveArgs(process.argv.slice(2));
  if ("print" in args) {
    (args.status === 0 ? process.stdout : process.stderr).write(args.print);
    return args.status;
  }
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const account = await accountFromJson(JSON.parse(readFileSync(args.account, "utf8")) as AccountFile);
  const from = new HostConnection(account, args.from);
  const to = new HostConnection(account, args.to);
  say(`${args.dryRun ? "Dry run: moving" : "Moving"} ${account.root.did} from ${args.from} to ${args.to}`);
  const progress = (p: MoveProgress) => say(`[${p.step}] ${p.message}`);
  try {
    const report = await moveAccount(from, to, {
      fromGen: args.fromGen,
      gen: args.gen,
      name: args.name,
      admission: args.admission,
      dryRun: args.dryRun,
      onProgress: progress,
    });
    const versions = report.spaces.reduce((n, s) => n + s.versions, 0);
    const bytes = report.spaces.reduce((n, s) => n + s.bytes, 0);
    const what = `${report.revokes} revokes, ${report.records} carry-space records, ${report.spaces.length} spaces (${versions} versions, ${bytes} bytes)`;
    if (report.dryRun) {
      say(`Would copy ${what}. Nothing was written.`);
      return 0;
    }
    writeFileSync(args.account, `${JSON.stringify(await accountToJson(account), null, 2)}\n`, { mode: 0o600 });
    chmodSync(args.account, 0o600);
    say(`Moved: copied ${what}; the new host holds every version the old one held, and the old host is closed.`);
    return 0;
  } catch (err) {
    if (err instanceof MoveError) for (const m of err.missing) say(`  missing in ${m.space}: ${m.ids.length} versions`);
    say(`Not moved: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`move failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
