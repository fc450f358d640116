// The settings module: every setting read once and checked; a bad value is named with its reason.
import { p256 } from "@noble/curves/nist.js";
import { describe, expect, it } from "vitest";
import { parseSettings } from "../../../server/settings";
import { base64urlEncode } from "../../../shared/encoding";
import { STORAGE_LIMITS } from "../../../shared/limits";
import { npubEncode } from "../../../shared/tally/keys";

describe("settings", () => {
  it("the defaults: nothing set is a valid relay (open status page, info logs, default totals)", () => {
    const r = parseSettings({});
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.settings).toMatchObject({
      relayName: "edge-relay",
      logLevel: "info",
      adminToken: null,
      adminPubkeys: [],
      trustedProxyHeader: null,
    });
    expect(r.settings.storage.tally).toBe(STORAGE_LIMITS.tally_bytes);
  });

  it("a bad setting is refused with its name and why (STORAGE_TALLY_BYTES=lots), every bad one listed", () => {
    const r = parseSettings({ STORAGE_TALLY_BYTES: "lots", LOG_LEVEL: "loud", PUBLIC_URL: "wss://relay.example, http://[bad" });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems[0]).toMatch(/^PUBLIC_URL: /);
    expect(r.problems).toContainEqual(expect.stringMatching(/^STORAGE_TALLY_BYTES: "lots" is not a size/));
    expect(r.problems).toContainEqual(expect.stringMatching(/^LOG_LEVEL: /));
  });

  it("ADMIN_PUBKEYS takes hex and npub keys, comma- or space-separated, and refuses anything else", () => {
    const hex = "ab".repeat(32);
    const other = "cd".repeat(32);
    const r = parseSettings({ ADMIN_PUBKEYS: `${hex.toUpperCase()}, ${npubEncode(other)}` });
    expect(r.ok && r.settings.adminPubkeys).toEqual([hex, other]);
    expect(parseSettings({ ADMIN_PUBKEYS: "npub1nope" })).toMatchObject({
      ok: false,
      problems: [expect.stringMatching(/^ADMIN_PUBKEYS: /)],
    });
  });

  it("PUBLIC_URL: one parser for the auth event's relay tag and the push endpoint rule", async () => {
    const { publicHosts } = await import("../../../server/tally/relay-url");
    const { hostsOf } = await import("../../../server/webpush/endpoint");
    const setting = "wss://Relay.Example:8443 relay2.example";
    expect(publicHosts(setting)).toEqual(["relay.example:8443", "relay2.example"]);
    expect(hostsOf(setting)).toEqual(["relay.example", "relay2.example"]);
    const r = parseSettings({ PUBLIC_URL: setting });
    expect(r.ok && r.settings.publicUrls.map((u) => u.host)).toEqual(["relay.example:8443", "relay2.example"]);
  });

  it("MINCA_HOST_ADMISSION: an unknown mode, or token with no token, is a bad setting, not a silently closed host", () => {
    expect(parseSettings({ MINCA_HOST_ADMISSION: "tokn" })).toMatchObject({
      ok: false,
      problems: [expect.stringMatching(/^MINCA_HOST_ADMISSION: /)],
    });
    expect(parseSettings({ MINCA_HOST_ADMISSION: "token" })).toMatchObject({ ok: false });
    expect(parseSettings({ MINCA_HOST_ADMISSION: "token", MINCA_HOST_ADMISSION_TOKEN: "t" }).ok).toBe(true);
  });

  it("MINCA_HOST_ALLOWLIST is checked at start: an entry that is not an account's did:key (P-256) is a bad setting, not an account silently never admitted", async () => {
    const { p256DidKey } = await import("../../../shared/minca/did-key");
    const did = p256DidKey(p256.getPublicKey(p256.utils.randomSecretKey(), true));
    const ok = parseSettings({ MINCA_HOST_ADMISSION: "allowlist", MINCA_HOST_ALLOWLIST: `${did}, ${did}` });
    expect(ok.ok && ok.settings.admission).toEqual({ mode: "allowlist", dids: new Set([did]) });
    for (const list of [`${did}, did:key:zDnaTypo`, "alice", `${did.slice(0, -1)}`]) {
      expect(parseSettings({ MINCA_HOST_ADMISSION: "allowlist", MINCA_HOST_ALLOWLIST: list }), list).toMatchObject({
        ok: false,
        problems: [expect.stringMatching(/^MINCA_HOST_ALLOWLIST: /)],
      });
    }
  });

  it("the key secrets are checked at start: a VAPID_PRIVATE_KEY or MINCA_HOST_KEY that is not a base64url 32-byte P-256 scalar is a bad setting", () => {
    const good = base64urlEncode(p256.utils.randomSecretKey());
    for (const name of ["VAPID_PRIVATE_KEY", "MINCA_HOST_KEY"]) {
      for (const value of ["not base64url!", base64urlEncode(new Uint8Array(31).fill(1)), base64urlEncode(new Uint8Array(32))]) {
        expect(parseSettings({ [name]: value }), `${name}=${value}`).toMatchObject({
          ok: false,
          problems: [expect.stringMatching(new RegExp(`^${name}: `))],
        });
      }
      expect(parseSettings({ [name]: good }).ok, name).toBe(true);
    }
  });

  it("the key secrets reach the objects parsed: VAPID_PRIVATE_KEY as keys, MINCA_HOST_KEY as a did, with the VAPID subject and the host's name", () => {
    const vapid = p256.utils.randomSecretKey();
    const host = p256.utils.randomSecretKey();
    const r = parseSettings({
      VAPID_PRIVATE_KEY: base64urlEncode(vapid),
      MINCA_HOST_KEY: base64urlEncode(host),
      PUBLIC_URL: "wss://relay.example, https://relay.example/base",
      RELAY_NAME: "my relay",
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.settings.vapidKeys?.privateKey).toEqual(vapid);
    expect(r.settings.vapidKeys?.publicKey).toEqual(p256.getPublicKey(vapid, false));
    expect(r.settings.vapidSubject).toBe("https://relay.example");
    expect(r.settings.hostDid).toMatch(/^did:key:z/);
    expect(r.settings.hostName).toBe("my relay");
    const none = parseSettings({ VAPID_SUBJECT: "mailto:ops@relay.example", MINCA_HOST_NAME: "host" });
    expect(none).toMatchObject({
      ok: true,
      settings: { vapidKeys: null, hostDid: null, vapidSubject: "mailto:ops@relay.example", hostName: "host" },
    });
  });
});
