// `minca-connect <home> --relay <url>` (the package's bin; `npm run connect --` here): a program with no browser connects to an account by
// code (the Minca protocol section 3). It makes a code, prints the home's connect link, joins the code's
// room on the relay, asks for the six digits the home shows, and saves the grant with its key.
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { createInterface } from "node:readline";
import { ProgramExchange, type ProgramEvent } from "./protocol/program";
import { newP256Key, p256KeyToJwk } from "../../shared/minca/es256";
import { relayRooms } from "./relay-room";
import { parseArgs } from "./connect-args";

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if ("print" in args) {
    (args.status === 0 ? process.stdout : process.stderr).write(args.print);
    return args.status;
  }
  // Node 22 and browsers have a WebSocket; on Node 20 the ws package (bundled into the CLI) stands in.
  const WS = globalThis.WebSocket ?? ((await import("ws")).WebSocket as unknown as typeof WebSocket);
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const key = await newP256Key(true);
  let asked = false;
  const lines = createInterface({ input: process.stdin });
  const program: ProgramExchange = new ProgramExchange({
    home: args.home,
    name: args.name,
    key,
    join: relayRooms(args.relay, { WebSocket: WS }),
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
  (code) => {
    // Let the room socket send its last frame (code:done) and close before the process ends;
    // process.exit at once would drop it with Node 20's ws. Forced after 3 s.
    process.exitCode = code;
    setTimeout(() => process.exit(code), 3000).unref();
  },
  (err) => {
    process.stderr.write(`connect failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
