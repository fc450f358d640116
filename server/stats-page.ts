// The operator's status page (GET /status): the snapshot as HTML, its per-minute series drawn as
// inline SVG bar charts, no script and no external assets. Counts only.
import { STATS_COUNTERS, STATS_PROTOCOLS, type StatsCounter, type StatsSnapshot } from "./stats";
import { STORAGE_KINDS, type StorageKind } from "../shared/storage";

const STORAGE_TITLES: Record<StorageKind, string> = { tally: "Tally queues", mailbox: "Mailboxes", host: "Hosted accounts" };

const COLORS: Record<(typeof STATS_PROTOCOLS)[number], string> = { tally: "#2f5bd3", passnote: "#17935a", minca: "#d9822b" };

const TITLES: Record<StatsCounter, string> = {
  messages: "Messages received per minute",
  deliveries: "Deliveries per minute",
  errors: "Errors per minute",
  connections_opened: "Connections opened per minute",
};

/** Seconds between automatic reloads of the page. */
const STATUS_REFRESH_SECONDS = 10;

interface StatusPageOptions {
  name: string;
  /** True when no admin token is configured: the page is open to anyone, and says so. */
  open: boolean;
  /** Self-hosted (workerd): the banner names the setting as `npm start` reads it, not as a Worker secret. */
  selfHosted?: boolean;
  /** Seen through the login form's session cookie: the page offers to log out. */
  loggedIn?: boolean;
}

/** Where the status page's log-out button posts (workers/status.ts). */
export const STATUS_LOGOUT_PATH = "/status/logout";

export function renderStatusPage(s: StatsSnapshot, opts: StatusPageOptions): string {
  const tiles = [
    tile(
      "Connections",
      sum(Object.values(s.connections)),
      STATS_PROTOCOLS.map((p) => `${p} ${s.connections[p]}`).join(" · "),
      "connections",
    ),
    tile("Stored envelopes", s.envelopes_stored, "Tally queues", "envelopes_stored"),
    tile(
      "Rooms open",
      s.rooms_open.passnote + s.rooms_open.minca,
      `passnote ${s.rooms_open.passnote} · minca ${s.rooms_open.minca}`,
      "rooms_open",
    ),
    tile("Mailbox items", s.mailbox_items, "Minca mailboxes", "mailbox_items"),
  ].join("");
  const storage = STORAGE_KINDS.map((k) => {
    const f = s.storage[k];
    const pct = f.total_bytes > 0 ? Math.min(100, Math.round((f.reserved_bytes / f.total_bytes) * 100)) : 100;
    return `<div class="tile" data-testid="storage-${k}" data-reserved="${f.reserved_bytes}" data-total="${f.total_bytes}"><div class="k">${STORAGE_TITLES[k]} storage</div><div class="v">${pct}%</div><div class="d">${bytesText(f.reserved_bytes)} reserved of ${bytesText(f.total_bytes)} · ${f.holders} objects</div></div>`;
  }).join("");
  const charts = STATS_COUNTERS.map((c) => chart(c, s)).join("");
  const where = opts.selfHosted
    ? "Set <code>ADMIN_TOKEN</code> in the environment of <code>npm start</code> (as a service: its <code>EnvironmentFile</code>) and restart it"
    : "Set the Worker secret <code>ADMIN_TOKEN</code> (<code>wrangler secret put ADMIN_TOKEN</code>)";
  const banner = opts.open
    ? `<p class="banner" data-testid="open-banner">No admin token is configured: this page is open because the relay listens on loopback only (anyone on this machine can read it). ${where} to require <code>Authorization: Bearer &lt;token&gt;</code>.</p>`
    : "";
  const logout = opts.loggedIn
    ? ` · <form method="post" action="${STATUS_LOGOUT_PATH}" style="display:inline"><button type="submit" data-testid="logout">Log out</button></form>`
    : "";
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="${STATUS_REFRESH_SECONDS}">
<title>Status · ${escapeHtml(opts.name)}</title>
<style>
:root{font-family:system-ui,sans-serif;color:#1d2330;background:#f4f6fa}
body{margin:0 auto;max-width:1000px;padding:16px}
h1{margin:0 0 4px;font-size:1.4rem}.sub{color:#4a5366;margin:0 0 12px;font-size:.9rem}
.banner{background:#fdf0c9;border:1px solid #e8cf7a;color:#5c4500;padding:8px 12px;border-radius:8px}
.tiles{display:grid;grid-template-columns:repeat(4,1fr);gap:10px;margin:12px 0}
.tile{background:#fff;border:1px solid #d8deea;border-radius:8px;padding:10px}
.tile .v{font-size:1.8rem;font-weight:600}.tile .k{color:#4a5366}.tile .d{color:#6b7488;font-size:.8rem}
.charts{display:grid;grid-template-columns:1fr 1fr;gap:10px}
figure{margin:0;background:#fff;border:1px solid #d8deea;border-radius:8px;padding:10px}
figcaption{font-weight:600;margin-bottom:4px}figcaption span{font-weight:400;color:#6b7488}
.legend{display:flex;gap:12px;font-size:.85rem;margin:8px 0}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
svg text{font-size:10px;fill:#6b7488}
</style></head><body>
<h1>Relay status</h1>
<p class="sub">${escapeHtml(opts.name)} · ${escapeHtml(s.at)} · counts only, reaching this page within ${s.flush_interval_ms / 1000} s of happening · reloads every ${STATUS_REFRESH_SECONDS} s · <a href="/status.json">JSON</a>${logout}</p>
${banner}
<div class="tiles">${tiles}</div>
<div class="tiles storage">${storage}</div>
<div class="legend">${STATS_PROTOCOLS.map((p) => `<span><i style="background:${COLORS[p]}"></i>${p}</span>`).join("")}</div>
<div class="charts">${charts}</div>
</body></html>`;
}

function tile(label: string, value: number, detail: string, id: string): string {
  return `<div class="tile" data-testid="tile-${id}"><div class="k">${label}</div><div class="v">${value}</div><div class="d">${detail}</div></div>`;
}

/** One counter over the window: bars stacked by protocol, a scale, and the last hour's total. */
function chart(metric: StatsCounter, s: StatsSnapshot): string {
  const series = s.per_minute[metric];
  const [w, h, left, bottom, top] = [460, 150, 34, 18, 8];
  const n = series.total.length;
  const max = niceMax(Math.max(0, ...series.total));
  const plotH = h - bottom - top;
  const bw = (w - left) / n;
  const y = (v: number) => top + plotH - (v / max) * plotH;
  const bars: string[] = [];
  for (let i = 0; i < n; i++) {
    let base = 0;
    for (const p of STATS_PROTOCOLS) {
      const v = series.by_protocol[p][i];
      if (v <= 0) continue;
      const y0 = y(base);
      const y1 = y(base + v);
      bars.push(
        `<rect x="${(left + i * bw + 0.5).toFixed(1)}" y="${y1.toFixed(1)}" width="${Math.max(1, bw - 1).toFixed(1)}" height="${Math.max(0.5, y0 - y1).toFixed(1)}" fill="${COLORS[p]}"><title>${p}: ${v}</title></rect>`,
      );
      base += v;
    }
  }
  const grid = [0, max / 2, max]
    .map(
      (v) =>
        `<line x1="${left}" x2="${w}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#e4e8f0"/><text x="${left - 4}" y="${(y(v) + 3).toFixed(1)}" text-anchor="end">${fmt(v)}</text>`,
    )
    .join("");
  const ticks = [0, 15, 30, 45, n - 1]
    .map(
      (i) =>
        `<text x="${(left + i * bw + bw / 2).toFixed(1)}" y="${h - 4}" text-anchor="${i === n - 1 ? "end" : "middle"}">${i === n - 1 ? "now" : `-${n - 1 - i}m`}</text>`,
    )
    .join("");
  const total = sum(series.total);
  return `<figure data-testid="chart-${metric}" data-total="${total}"><figcaption>${TITLES[metric]} <span>· ${total} in the last hour</span></figcaption>
<svg viewBox="0 0 ${w} ${h}" width="100%" role="img" aria-label="${TITLES[metric]}">${grid}${bars.join("")}${ticks}</svg></figure>`;
}

/** Bytes in binary units, one decimal. */
function bytesText(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}

function niceMax(v: number): number {
  if (v <= 4) return 4;
  const mag = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * mag >= v) return m * mag;
  return 10 * mag;
}

function fmt(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

function sum(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
