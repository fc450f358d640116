// The connect CLI's arguments (clients/minca/connect-cli.ts), parsed strictly with
// util.parseArgs: a mistyped flag, a missing value or a missing home is bad usage (exit 2).
import { homedir, hostname } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs as parseArgv } from "node:util";
import { homeOrigin } from "../../shared/minca/code";
import { relayBase } from "../relay-url";

const USAGE = `usage: minca-connect <home> --relay <relay> [--name <name>] [--out <file>]
       (in the repository: npm run connect -- <home> --relay <relay> ...)

  <home>          the account home: a bare domain, an origin or its connect page
  --relay <url>   the relay both sides meet on: ws://, wss://, http://, https:// or a bare
                  host (TLS unless it is a loopback address); or MINCA_RELAY
  --name <name>   the name the home shows the person (default: "connect on <hostname>")
  --out <file>    where to save the grant and this program's key
                  (default: ~/.minca/connect/<home host>.json)
  -h, --help      this text

Runs on Node 20 or later. Exit status: 0 connected, 1 not connected, 2 bad usage.
`;

interface Args {
  home: string;
  relay: string;
  name: string;
  out: string;
}

/** The arguments, or what to print and the exit status (0 for --help, 2 for bad usage). */
export function parseArgs(argv: string[], env: Record<string, string | undefined> = process.env): Args | { print: string; status: 0 | 2 } {
  const bad = (why: string) => ({ print: `${why}\n\n${USAGE}`, status: 2 as const });
  const parseFlags = () =>
    parseArgv({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        relay: { type: "string" },
        name: { type: "string" },
        out: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags();
  } catch (err) {
    return bad(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  if (values.help) return { print: USAGE, status: 0 };
  if (positionals.length === 0) return bad("missing: the account home");
  if (positionals.length > 1) return bad(`one home only, not: ${positionals.join(" ")}`);
  const home = positionals[0];
  const relay = values.relay ?? env.MINCA_RELAY;
  if (!relay) return bad("missing: --relay (or MINCA_RELAY)");
  try {
    relayBase(relay, "ws");
  } catch {
    return bad(`not a relay address: ${relay}`);
  }
  let host: string;
  try {
    host = new URL(homeOrigin(home)).host;
  } catch {
    return bad(`not a home address: ${home}`);
  }
  return {
    home,
    relay,
    name: values.name ?? `connect on ${hostname()}`,
    out: resolve(values.out ?? join(homedir(), ".minca", "connect", `${host.replace(/[^A-Za-z0-9.-]/g, "_")}.json`)),
  };
}
