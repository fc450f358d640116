// The SDK's host connection (clients/minca/host.ts): what connect() sends.
import { describe, expect, it } from "vitest";
import { HostConnection, newAccount } from "../../../../clients/minca/host";
import { newP256Key } from "../../../../shared/minca/es256";

describe("connecting a host that admits by token (MINCA_HOST_ADMISSION=token)", () => {
  it("HostConnection.connect sends the admission token the operator handed out as Authorization: Bearer", async () => {
    const hostDid = (await newP256Key()).did;
    const seen: Array<{ url: string; auth: string | null }> = [];
    const fake = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = String(input);
      seen.push({ url, auth: new Headers(init?.headers).get("authorization") });
      if (url.endsWith("/")) return Response.json({ protocols: { minca: { host: { did: hostDid, name: "h" } } } });
      // connect() reads the carry space back (the revokes it holds) before copying the account's
      if (url.includes("/versions")) return Response.json({ items: [], next: 0, more: false, oldest_seq: null });
      return Response.json({ account: "a", carry_space: "b" }, { status: 201 });
    }) as typeof fetch;
    const host = new HostConnection(await newAccount(), "https://relay.example", { fetch: fake });
    await host.connect(0, undefined, { admission: "handed-out" });
    expect(seen.find((s) => s.url.endsWith("/minca/v1/host/accounts"))?.auth).toBe("Bearer handed-out");
  });
});
