// The README's proxy blocks ("Behind a TLS proxy"): both set the client address header the relay
// trusts and an X-Request-ID of the proxy's own, and nginx takes bodies as large as the relay does.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../shared/limits";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

const blocks = [...readme.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], text: m[2] }));
const caddy = blocks.find((b) => b.lang === "caddy")?.text ?? "";
const nginx = blocks.find((b) => b.lang === "nginx")?.text ?? "";

/** The largest request body any route of the relay takes, in bytes. */
const largestBody = Math.max(
  ...Object.values(LIMITS).flatMap((group) =>
    Object.entries(group as Record<string, unknown>)
      .filter(([name, v]) => typeof v === "number" && /(request|body)_bytes$/.test(name) && !name.includes("drained"))
      .map(([, v]) => v as number),
  ),
);

describe("the README's proxy blocks", () => {
  it("both set X-Real-IP and an X-Request-ID of the proxy's own", () => {
    expect(caddy).toMatch(/header_up X-Real-IP \{remote_host\}/);
    expect(caddy).toMatch(/header_up X-Request-ID \{http\.request\.uuid\}/);
    expect(nginx).toMatch(/proxy_set_header X-Real-IP \$remote_addr;/);
    expect(nginx).toMatch(/proxy_set_header X-Request-ID \$request_id;/);
  });

  it("nginx's client_max_body_size takes the relay's largest body", () => {
    const m = /client_max_body_size (\d+)([km]?);/.exec(nginx);
    expect(m, "client_max_body_size in the nginx block").not.toBeNull();
    const bytes = Number(m![1]) * (m![2] === "m" ? 1024 * 1024 : m![2] === "k" ? 1024 : 1);
    expect(largestBody).toBe(LIMITS.minca_host.max_request_bytes);
    expect(bytes).toBeGreaterThanOrEqual(largestBody);
  });
});
