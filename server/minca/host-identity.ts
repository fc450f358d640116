// The host's own P-256 identity (the Minca protocol §4.1: "its own P-256 key; its DID is what peers and
// keepers lists name"; docs/hosting.md): a 32-byte private scalar kept as base64url, and its did:key.
// The host signs nothing (a carrier writes nothing); the did names it, and carry spaces are
// derived for it.
import { p256 } from "@noble/curves/nist.js";
import { base64urlEncode } from "../../shared/encoding";
import { p256DidKey } from "../../shared/minca/did-key";
import { p256SecretFrom } from "../p256-secret";

class HostKeyError extends Error {}

export function generateHostKey(): string {
  return base64urlEncode(p256.utils.randomSecretKey());
}

/** The did:key of a host's private key (base64url of a 32-byte P-256 scalar). */
export function hostDid(privateKeyB64url: string): string {
  const priv = p256SecretFrom(privateKeyB64url, "the host key", (m) => new HostKeyError(m));
  return p256DidKey(p256.getPublicKey(priv, true));
}
