// The move CLI's arguments (clients/minca/move-cli.ts), parsed strictly with util.parseArgs: a
// mistyped flag, a missing value or a missing relay is bad usage (exit 2).
import { resolve } from "node:path";
import { parseArgs as parseArgv } from "node:util";
import { relayBase } from "../relay-url";

const MOVE_USAGE = `usage: minca-move --account <file> --from <relay> --to <relay> [--dry-run] [options]
       (in the repository: npm run move -- --account <file> ...)

  --account <file>    the account's device saved as JSON (edge-relay/minca accountToJson);
                      its session must write for the account (/account/write). The file is
                      written back (the revokes learned) when the move is done
  --from <relay>      the host the account leaves: http://, https:// or a bare host
  --to <relay>        the host the account moves to
  --dry-run           read the old host and say what would be copied; write nothing anywhere
  --gen <n>           the new host's carry space gen (default 0)
  --from-gen <n>      the old host's carry space gen (default 0)
  --name <name>       the name the new host keeps for the account
  --admission <token> the new host's admission token, if its operator handed one out
  -h, --help          this text

Moving copies the carry space (revokes first) and every carried space's log, checks that the new
host holds every version the old one held, and only then closes at the old host.
Exit status: 0 moved (or dry run), 1 not moved (the old host left as it was), 2 bad usage.
`;

interface MoveArgs {
  account: string;
  from: string;
  to: string;
  dryRun: boolean;
  gen: number;
  fromGen: number;
  name?: string;
  admission?: string;
}

/** The arguments, or what to print and the exit status (0 for --help, 2 for bad usage). */
export function parseMoveArgs(argv: string[]): MoveArgs | { print: string; status: 0 | 2 } {
  const bad = (why: string) => ({ print: `${why}\n\n${MOVE_USAGE}`, status: 2 as const });
  const parseFlags = () =>
    parseArgv({
      args: argv,
      allowPositionals: false,
      strict: true,
      options: {
        account: { type: "string" },
        from: { type: "string" },
        to: { type: "string" },
        "dry-run": { type: "boolean" },
        gen: { type: "string" },
        "from-gen": { type: "string" },
        name: { type: "string" },
        admission: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags();
  } catch (err) {
    return bad(err instanceof Error ? err.message : String(err));
  }
  const { values } = parsed;
  if (values.help) return { print: MOVE_USAGE, status: 0 };
  for (const need of ["account", "from", "to"] as const) if (!values[need]) return bad(`missing: --${need}`);
  for (const relay of [values.from!, values.to!]) {
    try {
      relayBase(relay, "http");
    } catch {
      return bad(`not a relay address: ${relay}`);
    }
  }
  const gen = (v: string | undefined) => (v === undefined ? 0 : /^(0|[1-9][0-9]{0,15})$/.test(v) ? Number(v) : null);
  const g = gen(values.gen);
  const fg = gen(values["from-gen"]);
  if (g === null) return bad(`--gen is a non-negative integer, not ${values.gen}`);
  if (fg === null) return bad(`--from-gen is a non-negative integer, not ${values["from-gen"]}`);
  if (values.from === values.to && g === fg) return bad("--from and --to name the same carry space");
  return {
    account: resolve(values.account!),
    from: values.from!,
    to: values.to!,
    dryRun: values["dry-run"] === true,
    gen: g,
    fromGen: fg,
    ...(values.name !== undefined ? { name: values.name } : {}),
    ...(values.admission !== undefined ? { admission: values.admission } : {}),
  };
}
