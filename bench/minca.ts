// Minca load against a running relay (or baseline (a), which answers the same routes with the
// least a Durable Object can do: store and hand back, checking nothing): mailboxes (POST, and a
// long-poll GET answered by a POST) and hosting (a space's version log: appends of 100 versions
// per POST, pages of 100). Every request stays within the relay's rate limits (shared/limits.ts:
// a fresh topic per run, fewer writes per topic than its burst). Versions are signed before the
// clock starts: the relay's own work is measured, not the client's.
import { HostConnection, newAccount, writeVersion } from "../clients/minca/host";
import { base64urlEncode, randomBytes } from "../shared/encoding";
import { MAILBOX_LIMITS, MINCA_HOST_LIMITS } from "../shared/limits";
import { newSpace, type Space } from "../shared/minca/space";
import { percentile } from "./tally";

const MAILBOX = "/minca/v1/mailbox";
const topic = () => base64urlEncode(randomBytes(24));

async function ok(res: Response, status: number): Promise<Response> {
  if (res.status !== status) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
  return res;
}

/** POST to long-poll answer: a GET ?wait= waits for the next item of a topic (a fresh topic each round, or one in use), a POST arrives; ms from the POST to the answer. */
export async function mailboxWake(url: string, o: { rounds: number; topic: "fresh" | "in use" }): Promise<{ p50: number; p99: number }> {
  const ms: number[] = [];
  // "in use": one topic for every round, its first POST (which makes the topic's storage and
  // takes its lease of the relay-wide total) left out; each poll asks for what follows the last.
  const inUse = o.topic === "in use" ? topic() : null;
  let after = 0;
  if (inUse !== null)
    after = (
      (await (
        await ok(await fetch(`${url}${MAILBOX}/${inUse}`, { method: "POST", body: new Uint8Array(randomBytes(200)) }), 201)
      ).json()) as { seq: number }
    ).seq;
  for (let i = 0; i < o.rounds; i++) {
    const t = inUse ?? topic();
    const poll = fetch(`${url}${MAILBOX}/${t}?wait=10&after=${inUse === null ? 0 : after}`).then((r) => ok(r, 200));
    await new Promise((r) => setTimeout(r, 20)); // the GET is parked before the POST goes
    const t0 = performance.now();
    const posted = (await (
      await ok(await fetch(`${url}${MAILBOX}/${t}`, { method: "POST", body: new Uint8Array(randomBytes(200)) }), 201)
    ).json()) as { seq: number };
    const page = (await (await poll).json()) as { items: unknown[] };
    ms.push(performance.now() - t0);
    after = posted.seq;
    if (page.items.length !== 1) throw new Error(`long poll answered ${page.items.length} items`);
  }
  ms.sort((a, b) => a - b);
  return { p50: percentile(ms, 50), p99: percentile(ms, 99) };
}

/** `perTopic` POSTs of 200 bytes to each of `topics` fresh topics, `inFlight` at a time; POSTs per second. */
export async function mailboxPosts(
  url: string,
  o: { topics: number; perTopic: number; inFlight: number },
): Promise<{ posts: number; perSecond: number }> {
  const perTopic = Math.min(o.perTopic, MAILBOX_LIMITS.write_burst - 10);
  const topics = Array.from({ length: o.topics }, topic);
  const jobs = topics.flatMap((t) => Array.from({ length: perTopic }, () => t));
  const body = new Uint8Array(randomBytes(200));
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: o.inFlight }, async () => {
      while (next < jobs.length) await ok(await fetch(`${url}${MAILBOX}/${jobs[next++]}`, { method: "POST", body }), 201);
    }),
  );
  return { posts: jobs.length, perSecond: jobs.length / ((performance.now() - t0) / 1000) };
}

export interface HostingSetup {
  space: Space;
  batches: unknown[][];
}

/** A public space carried by the relay's host (the baseline needs none of it), and `batches` of 100 signed versions. */
export async function hostingSetup(url: string, o: { batches: number; perBatch?: number; host: boolean }): Promise<HostingSetup> {
  const perBatch = Math.min(o.perBatch ?? 100, MINCA_HOST_LIMITS.max_versions_per_request);
  const account = await newAccount();
  const space = newSpace({ founders: [account.root.did], visibility: "public" });
  const batches: unknown[][] = [];
  for (let b = 0; b < o.batches; b++) {
    const batch: unknown[] = [];
    for (let k = 0; k < perBatch; k++) {
      batch.push(
        await writeVersion(account, space, { collection: "std.post", key: `p${b}-${k}`, body: { text: `version ${b}-${k} of a bench` } }),
      );
    }
    batches.push(batch);
  }
  if (o.host) {
    // The relay hosts the space only once the account connected and passed it (the Minca protocol §4.1).
    const host = new HostConnection(account, url);
    await host.connect(0, "bench");
    const passed = await host.pass(space);
    if (!passed.accepted) throw new Error(`pass refused: ${JSON.stringify(passed)}`);
  }
  return { space, batches };
}

/**
 * The header the bench's relay is started to trust as the client's address (TRUSTED_PROXY_HEADER).
 * 500 versions to one space from one client pass its write bucket (MINCA_HOST_LIMITS
 * write_versions_burst, then write_versions_per_second): each batch speaks as its own client.
 */
export const BENCH_CLIENT_HEADER = "x-bench-client";

/** Appends every batch (one POST each, one after another, each from its own client address); versions appended per second. */
export async function hostingAppends(url: string, s: HostingSetup): Promise<{ versions: number; perSecond: number }> {
  let n = 0;
  const t0 = performance.now();
  for (const [b, batch] of s.batches.entries()) {
    const headers = { "content-type": "application/json", [BENCH_CLIENT_HEADER]: `10.0.0.${b + 1}` };
    const res = await ok(
      await fetch(`${url}/minca/v1/spaces/${s.space.id}/versions`, { method: "POST", headers, body: JSON.stringify(batch) }),
      200,
    );
    const { results } = (await res.json()) as { results: Array<{ accepted: boolean; reason?: string }> };
    const refused = results.find((r) => !r.accepted);
    if (refused) throw new Error(`version refused: ${refused.reason}`);
    n += results.length;
  }
  return { versions: n, perSecond: n / ((performance.now() - t0) / 1000) };
}

/** Reads the log in pages of one batch's size, `reads` times over; ms per page. */
export async function hostingPages(url: string, s: HostingSetup, o: { reads: number }): Promise<{ msPerPage: number }> {
  const size = s.batches[0].length;
  let pages = 0;
  const t0 = performance.now();
  for (let r = 0; r < o.reads; r++) {
    for (let after = 0; ; ) {
      const res = await ok(await fetch(`${url}/minca/v1/spaces/${s.space.id}/versions?after=${after}&limit=${size}`), 200);
      const page = (await res.json()) as { items: unknown[]; next: number; more: boolean };
      pages++;
      if (page.items.length !== size) throw new Error(`a page of ${page.items.length} versions`);
      if (!page.more) break;
      after = page.next;
    }
  }
  return { msPerPage: (performance.now() - t0) / pages };
}
