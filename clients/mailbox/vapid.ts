// The relay's VAPID public key, which a browser passes to pushManager.subscribe as its
// applicationServerKey before registering the subscription as a mailbox receiver. Read from the
// information document (GET /, which answers any origin).
import { base64urlDecode } from "../../shared/encoding";
import { relayBase } from "../relay-url";

/**
 * The relay's VAPID public key (65 bytes, an uncompressed P-256 point), or null when the relay
 * has none to offer (it could not make or read its keys). `relayUrl` in any spelling.
 */
export async function vapidPublicKey(
  relayUrl: string,
  opts: { fetch?: typeof fetch; signal?: AbortSignal } = {},
): Promise<Uint8Array<ArrayBuffer> | null> {
  const f = opts.fetch ?? ((input, init) => fetch(input, init));
  const res = await f(`${relayBase(relayUrl, "http")}/`, { headers: { accept: "application/json" }, signal: opts.signal });
  if (!res.ok) throw new Error(`the relay's information document answered ${res.status}`);
  const doc = (await res.json()) as { protocols?: { minca?: { push?: { vapid_public_key?: unknown } } } };
  const key = doc.protocols?.minca?.push?.vapid_public_key;
  if (typeof key !== "string") return null;
  const bytes = base64urlDecode(key);
  if (bytes.length !== 65 || bytes[0] !== 4) throw new Error("the relay's VAPID key is not an uncompressed P-256 point");
  return new Uint8Array(bytes);
}
