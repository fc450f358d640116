// A client WebSocket to the relay inside the Workers test pool (SELF), for worker tests.
import { SELF } from "cloudflare:test";
import { expect } from "vitest";
import { TestSocket } from "./socket";

/** Upgrades `path` on the relay under test (with `headers`), expects 101 and returns the client side. */
export async function openSocket(path: string, headers: Record<string, string> = {}): Promise<TestSocket> {
  const res = await SELF.fetch(`http://relay.test${path}`, { headers: { Upgrade: "websocket", ...headers } });
  expect(res.status).toBe(101);
  const ws = res.webSocket!;
  ws.accept();
  return new TestSocket(ws as unknown as WebSocket);
}
