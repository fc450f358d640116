// A Minca host's endpoints are rate-limited per client address like the mailbox (the attack
// once called "Hosting endpoints are unlimited"): version POSTs counted in versions (each an ES256
// verification), log GETs (a read proof's Ed25519 verification each, and long-polls), with the
// cheapest checks first: an uncarried space is 404 whatever the rate.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { HostConnection, newAccount } from "../../clients/minca/host";
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import { ownAddress } from "../helpers/client-address";

const RELAY = "http://relay.test";
const fetchSelf = ((input: RequestInfo | URL, init?: RequestInit) => SELF.fetch(input as string, init)) as typeof fetch;

async function carried() {
  const acct = await newAccount();
  const host = new HostConnection(acct, RELAY, { fetch: fetchSelf });
  await host.connect();
  return host.carry!.id;
}

const postVersions = (space: string, n: number, ip: string) =>
  SELF.fetch(`${RELAY}/minca/v1/spaces/${space}/versions`, {
    method: "POST",
    body: JSON.stringify(Array.from({ length: n }, () => ({}))),
    headers: { "cf-connecting-ip": ip },
  });

describe("the host's endpoints are rate-limited per client", () => {
  it("version POSTs count each version against the client's bucket: past the burst, 429 rate_limited with Retry-After; another client is served", async () => {
    const space = await carried();
    const ip = ownAddress();
    const full = MINCA_HOST_LIMITS.max_versions_per_request;
    for (let sent = 0; sent + full <= MINCA_HOST_LIMITS.write_versions_burst; sent += full) {
      expect((await postVersions(space, full, ip)).status).toBe(200);
    }
    const over = await postVersions(space, full, ip);
    expect(over.status).toBe(429);
    expect(((await over.json()) as any).error.code).toBe("rate_limited");
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await postVersions(space, 1, ownAddress())).status).toBe(200);
  });

  it("log GETs are limited before the read proof is checked: past the burst, 429 instead of 403", async () => {
    const space = await carried();
    const ip = ownAddress();
    const get = () =>
      SELF.fetch(`${RELAY}/minca/v1/spaces/${space}/versions`, {
        headers: {
          "cf-connecting-ip": ip,
          authorization: "MincaRead AAAA",
          "minca-time": String(Math.floor(Date.now() / 1000)),
        },
      });
    const statuses: number[] = [];
    // the bucket refills while the requests go out: ask until the first 429 (well within twice the burst)
    for (let i = 0; i < 2 * MINCA_HOST_LIMITS.read_burst && !statuses.includes(429); i++) statuses.push((await get()).status);
    expect(statuses.length).toBeGreaterThanOrEqual(MINCA_HOST_LIMITS.read_burst);
    expect(statuses.slice(0, MINCA_HOST_LIMITS.read_burst).every((s) => s === 403)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
  });

  it("cheapest first: a space the host does not carry is 404 however often it is asked", async () => {
    const unknown = `b${"a".repeat(52)}`;
    for (let i = 0; i < 3; i++)
      expect((await postVersions(unknown, MINCA_HOST_LIMITS.max_versions_per_request, ownAddress())).status).toBe(404);
  });
});
