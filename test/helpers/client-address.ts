// A client address (cf-connecting-ip) that no other test uses. The Worker keeps its per-address
// state in the isolate's memory (the rate limits' buckets, the operator pages' count of wrong
// credentials), and the relay's block list is relay-wide. The worker test files share one runtime
// (vitest.worker.config.ts), so a test that counts on an address's fresh state takes its own
// address here instead of writing one down.

let taken = 0;

/** A new IPv4 address from 198.18.0.0/15 (the benchmarking range), one per call in this runtime. */
export function ownAddress(): string {
  const n = ++taken;
  if (n >= 2 ** 17) throw new Error("ownAddress: 198.18.0.0/15 is used up");
  return `198.${18 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;
}
