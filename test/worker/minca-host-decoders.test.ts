// Every decoder of a Minca host's client input answers a 4xx, never a 500 ("500s"): a
// lone surrogate in a CarryGrant's invite, a link blob whose length is 1 mod 4, a version nested
// thousands of levels deep. And a batch is applied whole: a record that cannot be read is
// refused alone, and the records before it are applied and logged.
import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { HostConnection, newAccount, writeVersion } from "../../clients/minca/host";
import { LINK, linkTopic } from "../../shared/minca/carry";
import { base64urlDecode, base64urlEncode, utf8Decode, utf8Encode } from "../../shared/encoding";
import { COMMON_LIMITS } from "../../shared/limits";

const RELAY = "http://relay.test";
const fetchSelf = ((input: RequestInfo | URL, init?: RequestInit) => SELF.fetch(input as string, init)) as typeof fetch;

async function connected() {
  const acct = await newAccount();
  const host = new HostConnection(acct, RELAY, { fetch: fetchSelf });
  await host.connect();
  return { acct, host };
}

describe("decoders of a host's client input answer 4xx, never 500", () => {
  it("a CarryGrant whose invite holds a lone surrogate is 400 invalid_grant", async () => {
    const acct = await newAccount();
    const host = new HostConnection(acct, RELAY, { fetch: fetchSelf });
    const grant = await host.grant();
    const inner = JSON.parse(utf8Decode(base64urlDecode(grant.carry.invite)));
    inner.constitution.nonce = "carry:\ud800"; // JSON.stringify writes it as the escape \ud800
    const invite = base64urlEncode(utf8Encode(JSON.stringify(inner)));
    const res = await SELF.fetch(`${RELAY}/minca/v1/host/accounts`, {
      method: "POST",
      body: JSON.stringify({ ...grant, carry: { ...grant.carry, invite } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.code).toBe("invalid_grant");
    // and in the grant itself
    const raw = JSON.stringify({ ...grant, name: "x" }).replace('"name":"x"', '"name":"\\udc00"');
    const res2 = await SELF.fetch(`${RELAY}/minca/v1/host/accounts`, { method: "POST", body: raw });
    expect(res2.status).toBe(400);
  });

  it(`a version nested deeper than max_json_depth (${COMMON_LIMITS.max_json_depth}) is 400 invalid_versions before it reaches the space's object`, async () => {
    const { acct, host } = await connected();
    const carry = host.carry!;
    const v = await writeVersion(acct, carry, { collection: "c", key: "k", body: {} });
    const deep = `${"[".repeat(3_355)}${"]".repeat(3_355)}`;
    const body = JSON.stringify([v]).replace('"note":', `"deep":${deep},"note":`);
    const res = await SELF.fetch(`${RELAY}/minca/v1/spaces/${carry.id}/versions`, { method: "POST", body });
    expect(res.status).toBe(400);
    const err = ((await res.json()) as any).error;
    expect(err.code).toBe("invalid_versions");
    expect(err.message).toMatch(/deeper than 64/);
    // just within the bound it is read, and refused by its schema as one version
    const within = `${"[".repeat(COMMON_LIMITS.max_json_depth - 2)}${"]".repeat(COMMON_LIMITS.max_json_depth - 2)}`;
    const ok = await SELF.fetch(`${RELAY}/minca/v1/spaces/${carry.id}/versions`, {
      method: "POST",
      body: JSON.stringify([v]).replace('"note":', `"deep":${within},"note":`),
    });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as any).results[0]).toMatchObject({ accepted: false, reason: "malformed" });
  });

  it("a link blob whose length is 1 mod 4 is refused (unreadable_record) alone: the records before it in the batch are applied and logged", async () => {
    const { acct, host } = await connected();
    const carry = host.carry!;
    const until = Math.floor(Date.now() / 1000) + 3_600;
    const good = await writeVersion(acct, carry, {
      collection: LINK,
      key: "link:good",
      body: { v: 1, blob: base64urlEncode(new Uint8Array([1, 2, 3])), until },
    });
    const bad = await writeVersion(acct, carry, { collection: LINK, key: "link:bad", body: { v: 1, blob: "AAAAA", until } });
    const after = await writeVersion(acct, carry, {
      collection: LINK,
      key: "link:after",
      body: { v: 1, blob: base64urlEncode(new Uint8Array([4])), until },
    });
    const results = await host.post(carry.id, [good, bad, after]);
    expect(results.map((r) => r.accepted)).toEqual([true, false, true]);
    expect(results[1]).toMatchObject({ reason: "unreadable_record" });
    expect(await host.status()).toMatchObject({ links: 2 });
    const log = await host.fetchLog(carry);
    expect(log.items.map((i) => (i.version as { key: string }).key)).toEqual(expect.arrayContaining(["link:good", "link:after"]));
    expect(log.items.map((i) => (i.version as { key: string }).key)).not.toContain("link:bad");
    // the good link is served by its mailbox
    const topic = linkTopic(new Uint8Array([1, 2, 3]));
    const page = (await (await SELF.fetch(`${RELAY}/minca/v1/mailbox/${topic}`)).json()) as any;
    expect(page.items.map((i: { blob: string }) => i.blob)).toContain(base64urlEncode(new Uint8Array([1, 2, 3])));
    void env;
  });

  it("a PushSubscription nested too deep or holding a lone surrogate is 400 invalid_subscription", async () => {
    const topic = `decoders-${Date.now()}-topic`;
    const deep = `{"endpoint":${"[".repeat(500)}${"]".repeat(500)}}`;
    const r1 = await SELF.fetch(`${RELAY}/minca/v1/mailbox/${topic}/receivers`, { method: "POST", body: deep });
    expect(r1.status).toBe(400);
    const r2 = await SELF.fetch(`${RELAY}/minca/v1/mailbox/${topic}/receivers`, {
      method: "POST",
      body: '{"endpoint":"https://push.example/\\ud800","keys":{}}',
    });
    expect(r2.status).toBe(400);
    expect(((await r2.json()) as any).error.code).toBe("invalid_subscription");
  });
});
