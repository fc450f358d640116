// An upgrade refused with a reason a WebSocket client can read: a 101 whose socket carries only an
// error frame naming the refusal and then a close, held by no object. A WebSocket API reports an
// upgrade answered with an HTTP error as a plain failed connection, with no status and no body,
// so a client refused that way cannot tell a ban from a network fault and keeps retrying; a
// client refused this way sees the same frame and close as one refused after its socket opened.
import { socketError, type ErrorCode } from "../shared/errors";
import { REFUSED_HEADER } from "./object-headers";

/** The 101 answer of a refused upgrade: `{"type":"error","code",...}`, then close `closeCode` with `reason`. */
export function refusalSocket(code: ErrorCode, message: string, closeCode: number, reason: string): Response {
  const pair = new WebSocketPair();
  const [client, server] = [pair[0], pair[1]];
  server.accept();
  server.send(JSON.stringify(socketError(code, message)));
  server.close(closeCode, reason);
  return new Response(null, { status: 101, webSocket: client, headers: { [REFUSED_HEADER]: code } });
}
