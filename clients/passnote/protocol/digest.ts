// The anti-entropy pass's opening (profile, capability x-edge-relay/digest, message tag 0xF1): one
// digest over every collection a channel carries, so that a pass between two peers with nothing
// to exchange costs one frame per channel whatever the number of collections, and per-collection
// work starts only where something differs.
//
//   digest = SHA-256( for each collection of the channel holding records, sorted by name:
//                     str(name) ‖ varint(record count) ‖ fingerprint (16 bytes) )[0..16]
//
// with the protocol's range fingerprint (XOR of SHA-256(key ‖ 0x00 ‖ hlc)[0..16]) over the whole
// collection. The receiver compares it with its own: equal, nothing is sent; different, it asks
// for the sender's state in that channel (hello), and the states that answer it are probed only
// where a collection's watermark differs from this side's (or, when none does, the difference is
// below the watermarks: every collection). A peer without the capability gets a hello instead.
import { sha256 } from "@noble/hashes/sha2.js";
import { equalBytes } from "../../../shared/encoding";
import { Writer } from "./codec";
import type { Channel, EngineCore, PeerState } from "./engine-core";
import { usesDigest } from "./negotiation";
import { DIGEST_BYTES, type MessageOf } from "./wire";

/**
 * The digest of the collections this side holds in a channel. Made afresh each time (once per
 * pass and per digest received): a store may change under another instance of the database.
 */
export function channelDigest(core: EngineCore, ch: Channel): Uint8Array {
  const w = new Writer();
  for (const collection of core.store
    .collectionNames()
    .filter((c) => core.inScope(c, ch))
    .sort()) {
    const s = core.store.summary(collection);
    if (s.count === 0) continue;
    w.string(collection).varint(s.count).raw(s.fingerprint);
  }
  return sha256(w.finish()).slice(0, DIGEST_BYTES);
}

export function onDigest(core: EngineCore, peer: string, state: PeerState, m: MessageOf<"digest">, ch: Channel): void {
  if (!usesDigest(core, state)) return; // the capability was not agreed with this peer: ignored
  if (equalBytes(m.digest, channelDigest(core, ch))) return; // nothing differs in this channel
  void core.send(peer, { type: "hello", node: core.node }, ch);
  state.digestHello.add(ch); // the states that answer probe where the watermarks differ
}
