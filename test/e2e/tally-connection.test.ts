// The client's connection life against the running relay: a device refused for too many devices
// (close 1008) comes back by itself once a slot frees.
import { afterEach, describe, expect, inject, it } from "vitest";
import { TallyClient, type TallyClient as Client } from "../../clients/tally/index";
import { TALLY_LIMITS } from "../../shared/limits";
import { device, newUser, wsBase } from "../helpers/tally";
import { waitFor } from "../helpers/wait";

const relay = inject("relayUrl");
const open: Client[] = [];
afterEach(() => {
  for (const c of open.splice(0)) c.close();
});

describe("connection life", () => {
  it("close 1008 too_many_devices retried with backoff: the extra device registers once another leaves", async () => {
    const user = newUser();
    for (let i = 0; i < TALLY_LIMITS.max_devices_per_user; i++) open.push(await device(relay, user));
    const extra = new TallyClient({ relayUrl: wsBase(relay), secretKey: user.secretKey, store: "memory" });
    open.push(extra);
    const closes: number[] = [];
    extra.on("close", (code) => void closes.push(code));
    await expect(extra.connect()).rejects.toThrow(/1008/);
    open.shift()!.close(); // a slot frees
    await waitFor(() => extra.connected, { what: "the extra device registered", timeout: 20_000 });
    expect(closes[0]).toBe(1008);
  });
});
