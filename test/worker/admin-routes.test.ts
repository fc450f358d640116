// The operator's routes are decided by the route, never by a header the client sends
// (docs/hostile.md, "The operator's routes"): a POST carrying the admin API's Content-Type to any
// other route is an ordinary request, counted in the client's bucket for new names. (That it is
// blocked by blockip too: test/e2e/admin-api.test.ts.)
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { COMMON_LIMITS } from "../../shared/limits";
import { ownAddress } from "../helpers/client-address";

const ADMIN_TYPE = "application/nostr+json+rpc";

describe("admin routes by route", () => {
  it("common.client_object_requests_*: a mailbox POST sent as application/nostr+json+rpc takes its token and is refused 429 past the bucket like any other", async () => {
    const address = ownAddress();
    // Only admin-typed POSTs, to a name that keeps nothing: were the Content-Type a pass, none
    // would take a token and none would ever be refused 429. (Counting, not timing: the bucket's
    // refill while the batches run only makes the loop longer.)
    let limited: Response | undefined;
    for (let i = 0; !limited && i < 4 * COMMON_LIMITS.client_object_requests_burst; i += 32) {
      const batch = await Promise.all(
        Array.from({ length: 32 }, () =>
          SELF.fetch("http://relay.test/minca/v1/mailbox/short", {
            method: "POST",
            body: "x",
            headers: { "cf-connecting-ip": address, "content-type": ADMIN_TYPE },
          }),
        ),
      );
      limited = batch.find((r) => r.status === 429);
    }
    expect(limited?.status).toBe(429);
    expect(((await limited!.json()) as any).error.code).toBe("rate_limited");
    // The admin API's own routes are not counted: a POST to / with any type is answered by it.
    const admin = await SELF.fetch("http://relay.test/", { method: "POST", body: "{}", headers: { "cf-connecting-ip": address } });
    expect(admin.status).toBe(415);
  });
});
