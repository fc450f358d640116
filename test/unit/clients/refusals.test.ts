// A client the relay refuses learns why, as a typed error: the relay sends an error frame naming
// the refusal (`banned` when the operator banned a Tally key, `room_full`, ...) before it closes,
// and the SDKs' errors carry that code instead of a bare closed connection. A Tally register
// refused `banned` or `not_allowed` is not retried. The relays here answer as the real one does
// (durable-objects/tally/tally-user.ts: error `banned`, then close 1008 "banned").
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { RelayConnection } from "../../../clients/tally/connection";
import { TallyClient, TallyRelayError } from "../../../clients/tally/index";
import { RelayTransport, RelayTransportError } from "../../../clients/passnote/relay-transport";
import { CLOSE_CODES } from "../../../shared/limits";
import { secretKeySigner } from "../../../shared/tally/signer";
import { newUser } from "../../helpers/tally";

const servers: WebSocketServer[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/**
 * A relay that sends a challenge and answers the first frame with `error <code>` and a close, or
 * (`atOnce`) refuses the socket as soon as it opens, as the relay refuses a full room.
 */
async function refusingRelay(code: string, closeCode: number, atOnce = false): Promise<{ url: string; connections: () => number }> {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  servers.push(wss);
  await new Promise<void>((r) => wss.on("listening", () => r()));
  let n = 0;
  wss.on("connection", (ws) => {
    n++;
    if (atOnce) {
      ws.send(JSON.stringify({ type: "error", code, message: `refused: ${code}` }));
      ws.close(closeCode, code);
      return;
    }
    ws.send(JSON.stringify({ type: "challenge", challenge: "ab".repeat(32) }));
    ws.on("message", () => {
      ws.send(JSON.stringify({ type: "error", code, message: `refused: ${code}` }));
      ws.close(closeCode, code);
    });
  });
  return { url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}`, connections: () => n };
}

describe("a refused client gets a typed error naming the refusal", () => {
  it("Tally: connect() rejects with TallyRelayError code banned (close 1008)", async () => {
    const relay = await refusingRelay("banned", CLOSE_CODES.policy);
    const c = new TallyClient({ relayUrl: relay.url, secretKey: newUser().secretKey, store: "memory" });
    try {
      const err = await c.connect().then(
        () => null,
        (e) => e,
      );
      expect(err).toBeInstanceOf(TallyRelayError);
      expect(err).toMatchObject({ code: "banned", closeCode: CLOSE_CODES.policy });
      expect(String(err.message)).toContain("banned");
    } finally {
      c.close();
    }
  });

  it("Tally: a register refused banned or not_allowed is not retried; another refusal (rate_limited) is", async () => {
    for (const [code, retried] of [
      ["banned", false],
      ["not_allowed", false],
      ["rate_limited", true],
    ] as const) {
      const relay = await refusingRelay(code, CLOSE_CODES.policy);
      const user = newUser();
      let conn: RelayConnection | undefined;
      const closed = await new Promise<boolean>((resolveClosed) => {
        conn = new RelayConnection(
          { relayUrl: relay.url, signer: secretKeySigner(user.secretKey), npub: user.npub, acks: true, reconnect: true, WebSocket },
          { onMessage: () => {}, onClosed: (_code, _reason, willReconnect) => resolveClosed(willReconnect) },
        );
        conn.start();
      });
      conn?.stop(); // the retry, when there is one, is cancelled
      expect({ code, willReconnect: closed }).toEqual({ code, willReconnect: retried });
    }
  });

  it("Passnote: RelayTransport.connect rejects with RelayTransportError carrying the relay's code and the close code", async () => {
    const relay = await refusingRelay("room_full", CLOSE_CODES.policy, true);
    const err = await RelayTransport.connect({
      relayUrl: relay.url,
      rosterKey: new Uint8Array(32).fill(7),
      rate: { perSecond: 10, burst: 10 },
      reconnect: false,
    }).then(
      () => null,
      (e) => e,
    );
    expect(err).toBeInstanceOf(RelayTransportError);
    expect(err).toMatchObject({ code: "room_full", closeCode: CLOSE_CODES.policy });
  });
});
