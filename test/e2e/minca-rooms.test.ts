// Minca code-channel rooms against the running relay: the room contract and the Minca protocol section 3's
// list over real WebSockets, and the `connect` command and an account home as two separate
// clients meeting through `wrangler dev`.
import { spawn, spawnSync, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, inject, it } from "vitest";
import NodeWebSocket from "ws";
import { relayRooms } from "../../clients/minca/relay-room";
import { codeRoom, codeSecret, newCode } from "../../shared/minca/code";
import { newP256Key, p256KeyFromJwk } from "../../shared/minca/es256";
import { checkGrant } from "../../clients/minca/protocol/grant";
import { HomeExchange } from "../../clients/minca/protocol/home";
import { makeJoin } from "../../shared/minca/room";
import { roomContract } from "../helpers/minca-contract";
import { HOME, newAccount } from "../helpers/minca";
import { TestSocket } from "../helpers/socket";
import { waitFor } from "../helpers/wait";

const relay = inject("relayUrl");
const ws = relay.replace(/^http/, "ws");
const root = new URL("../../", import.meta.url).pathname;

roomContract("relay (wrangler dev)", () => relayRooms(relay));

describe("the room endpoint on the running relay", () => {
  it("a bad room id gets 400 before any upgrade; a bad join closes 4001", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const bad = new NodeWebSocket(`${ws}/minca/v1/rooms/not-a-room`);
      bad.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      bad.on("open", () => reject(new Error("upgraded")));
      bad.on("error", () => undefined);
    });
    expect(status).toBe(400);
    const room = codeRoom(codeSecret(newCode()));
    const s = await TestSocket.open(`${ws}/minca/v1/rooms/${room}`);
    const { challenge } = await s.next("challenge");
    const join = await makeJoin(await newP256Key(), room, challenge);
    s.send({ ...join, did: (await newP256Key()).did });
    expect(await s.closed).toBe(4001);
  });
});

const systemNode = process.env.CLI_NODE ?? ["/usr/bin/node", "/usr/local/bin/node"].find((p) => existsSync(p)) ?? process.execPath;

describe("npm run connect: a program and its home, two clients, through wrangler dev", () => {
  beforeAll(() => {
    execFileSync(process.execPath, ["scripts/build-sdk.ts", "--cli"], { cwd: root });
  });

  it("the built CLI exits 2 on bad usage (no arguments, a mistyped flag, a flag missing its value) and 0 on --help", () => {
    const run = (...args: string[]) =>
      spawnSync(systemNode, [join(root, "dist/sdk/connect.mjs"), ...args], {
        cwd: root,
        encoding: "utf8",
        timeout: 20_000,
        env: { ...process.env, MINCA_RELAY: "" },
      });
    for (const args of [
      [],
      ["home.example", "--relay", relay, "--bogus"],
      ["--relay", "--name", "x", "home.example"],
      ["home.example", "--relay"],
    ]) {
      const r = run(...args);
      expect(r.status, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toContain("usage: minca-connect");
    }
    const help = run("--help");
    expect(help.status).toBe(0);
    expect(help.stdout).toContain("usage: minca-connect");
  });

  it("the program ends holding a grant that verifies, after the check the home shows is typed", async () => {
    const out = join(mkdtempSync(join(tmpdir(), "minca-connect-")), "grant.json");
    // The system's Node when there is one (Node 20 on the README's machine: no global WebSocket).
    const child = spawn(
      systemNode,
      [join(root, "dist/sdk/connect.mjs"), "home.example", "--relay", relay, "--name", "e2e terminal", "--out", out],
      {
        cwd: root,
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    let stdout = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stdout += d));
    const exited = new Promise<number>((r) => child.on("exit", (code) => r(code ?? -1)));

    // The person opens the link the program prints, at their account home.
    const link = (await waitFor(() => /Open this link to connect: (\S+)/.exec(stdout)?.[1], { what: "the link", timeout: 20_000 }))!;
    expect(link).toMatch(/^https:\/\/home\.example\/connect#mc_[A-Za-z0-9_-]{22}$/);
    const account = await newAccount("Leif");
    let shown: { name: string; check: string } | undefined;
    const home = new HomeExchange({
      origin: HOME,
      link,
      account,
      join: relayRooms(relay),
      approve: async (s) => {
        shown = s;
        // ...reads the check there, and types it into the program's terminal.
        await waitFor(() => stdout.includes("type the six digits"), { what: "the program's prompt" });
        child.stdin.write(`${s.check}\n`);
        return { allow: true, days: 30 };
      },
    });
    await home.start();
    expect(await exited).toBe(0);
    expect(await home.outcome).toMatchObject({ status: "done" });
    expect(shown?.name).toBe("e2e terminal");
    expect(stdout).toContain(`Connected to Leif (${account.key.did}): records only`);

    const saved = JSON.parse(readFileSync(out, "utf8"));
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const key = await p256KeyFromJwk(saved.key);
    const checked = await checkGrant(saved.grant, { audience: key.did, recordsOnly: true });
    expect(checked.ok).toBe(true);
    expect(saved.grant).toMatchObject({ did: account.key.did, home: "https://home.example/connect", scope: "account" });
    expect(saved.grant.note.payload).toMatchObject({ aud: key.did, cmd: "/record", sub: account.key.did });
  });
});
