// The WebSocket constructor a client connects with: the one its options name, else the platform's
// (browsers, Deno, Bun, Node 22 and later). Node 20 has none: the clients then say so, and how to
// pass the `ws` package's, instead of failing later with "WebSocket is not defined".

/** The message a client without a WebSocket constructor throws; `example` shows where to pass `ws`'s. */
function noWebSocketMessage(example: string): string {
  return `no WebSocket here (Node 20 has none): install the \`ws\` package and pass it: import { WebSocket } from "ws"; ${example}`;
}

/** `given`, else the platform's WebSocket; throws noWebSocketMessage(example) when neither is a constructor. */
export function webSocketClass(given: typeof WebSocket | undefined, example: string): typeof WebSocket {
  const WS = given ?? (globalThis as { WebSocket?: typeof WebSocket }).WebSocket;
  if (typeof WS !== "function") throw new Error(noWebSocketMessage(example));
  return WS;
}
