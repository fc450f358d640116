// `npm run connect -- <home> --relay <url>`: a program with no browser connects to an account by
// code (seed 002 section 3). It makes a code, prints the home's connect link, joins the code's
// room on the relay, asks for the six digits the home shows, and saves the grant with its key.
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { homedir, hostname } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { ProgramExchange, type ProgramEvent } from "../../shared/minca/program";
import { homeOrigin } from "../../shared/minca/code";
import { newP256Key, p256KeyToJwk } from "../../shared/minca/es256";
import { relayRooms } from "./relay-room";

const USAGE = `usage: npm run connect -- <home> --relay <relay url> [--name <name>] [--out <file>]

  <home>          the account home: a bare domain, an origin or its connect page
  --relay <url>   the relay both sides meet on (ws://, wss://, http:// or https://); or MINCA_RELAY
  --name <name>   the name the home shows the person (default: "connect on <hostname>")
  --out <file>    where to save the grant and this program's key
                  (default: ~/.minca/connect/<home host>.json)
`;

interface Args {
  home: string;
  relay: string;
  name: string;
  out: string;
}

function parseArgs(argv: string[]): Args | string {
  const rest: string[] = [];
  const flags: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "-h" || a === "--help") return USAGE;
    if (a.startsWith("--")) {
      const [k, v] = a.includes("=") ? [a.slice(2, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a.slice(2), argv[++i]];
      if (v === undefined) return `missing value for --${k}\n\n${USAGE}`;
      flags[k] = v;
    } else rest.push(a);
  }
  const home = rest[0];
  const relay = flags.relay ?? process.env.MINCA_RELAY;
  if (!home || !relay) return USAGE;
  let host: string;
  try {
    host = new URL(homeOrigin(home)).host;
  } catch {
    return `not a home address: ${home}\n\n${USAGE}`;
  }
  return {
    home,
    relay,
    name: flags.name ?? `connect on ${hostname()}`,
    out: resolve(flags.out ?? join(homedir(), ".minca", "connect", `${host.replace(/[^A-Za-z0-9.-]/g, "_")}.json`)),
  };
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if (typeof args === "string") {
    process.stderr.write(args);
    return args === USAGE ? 0 : 2;
  }
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const key = await newP256Key(true);
  let asked = false;
  const lines = createInterface({ input: process.stdin });
  const program: ProgramExchange = new ProgramExchange({
    home: args.home,
    name: args.name,
    key,
    join: relayRooms(args.relay),
    onEvent: (e: ProgramEvent) => {
      if (e.kind === "state" && e.state === "heard" && !asked) {
        asked = true;
        say("The home heard this program. Sign in there, allow it, then type the six digits the home shows:");
      }
    },
  });
  lines.on("line", (line) => {
    if (!line.trim()) return;
    if (program.enterCheck(line)) say("The check matches. Waiting for the home's answer...");
    else if (program.state !== "failed") say("That is not the check this exchange shows; type it again:");
  });
  await program.start();
  say(`Open this link to connect: ${program.link}`);
  const got = await program.outcome;
  lines.close();
  if (!got.ok) {
    say(`Not connected (${got.reason}): ${got.message}`);
    return 1;
  }
  mkdirSync(dirname(args.out), { recursive: true });
  const saved = { v: 1, grant: got.grant, key: await p256KeyToJwk(got.key), relay: args.relay, savedAt: new Date().toISOString() };
  writeFileSync(args.out, `${JSON.stringify(saved, null, 2)}\n`, { mode: 0o600 });
  chmodSync(args.out, 0o600);
  const until = new Date(got.grant.expiresAt * 1000).toISOString();
  say(`Connected to ${got.grant.name ?? "an account"} (${got.grant.did}): records only, until ${until}.`);
  say(`Saved the grant and this program's key to ${args.out}`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`connect failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
