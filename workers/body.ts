// Request bodies, read within their bounds and never left half-read (docs/hostile.md, "Bodies the
// relay does not want"). A body the relay stops reading mid-way (one byte over a bound; a body on
// a route that takes none) would be cut off when the answer is sent: the client, still writing,
// sees a connection reset (EPIPE) or a truncated answer instead of the documented 413 or 200. So a
// body over its bound, or one nobody read, is read to its end and thrown away, up to
// common.max_drained_body_bytes; only past that does the relay stop reading.
import { COMMON_LIMITS } from "../shared/limits";
import { concatBytes } from "../shared/encoding";

/** The body, or null when it is longer than `max` (the rest is drained, not kept). */
export async function readBounded(req: Request, max: number): Promise<Uint8Array | null> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > max) {
    await drainBody(req);
    return null;
  }
  if (!req.body) return new Uint8Array(0);
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    n += value.byteLength;
    if (n > max) {
      await drainReader(reader, n);
      return null;
    }
    chunks.push(value);
  }
  return concatBytes(...chunks);
}

/** Reads and discards a body nobody read (a GET with a body), within common.max_drained_body_bytes. */
export async function drainBody(req: Request): Promise<void> {
  if (!req.body || req.bodyUsed) return;
  const declared = Number(req.headers.get("content-length") ?? 0);
  if (declared > COMMON_LIMITS.max_drained_body_bytes) return void (await req.body.cancel().catch(() => {}));
  let reader: ReadableStreamDefaultReader<Uint8Array>;
  try {
    reader = req.body.getReader();
  } catch {
    return; // locked: someone is reading it
  }
  await drainReader(reader, 0);
}

async function drainReader(reader: ReadableStreamDefaultReader<Uint8Array>, seen: number): Promise<void> {
  try {
    for (let n = seen; n <= COMMON_LIMITS.max_drained_body_bytes; ) {
      const { done, value } = await reader.read();
      if (done) return;
      n += value.byteLength;
    }
    await reader.cancel();
  } catch {
    // the client went away
  }
}
