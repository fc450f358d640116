// A small SVG bar chart for bench/results/: one group of bars per figure, each bar the relay's
// value divided by a baseline's, oriented so that above 1 always means the relay does better (for
// latencies and times the baseline's value is divided by the relay's). A line marks 1.
export interface ChartRow {
  label: string;
  /** One value per series; NaN draws no bar. */
  values: number[];
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

export function barChart(title: string, series: string[], rows: ChartRow[]): string {
  const colors = ["#3b6fb6", "#d9822b", "#5a9e4b"];
  const labelW = 360;
  const plotW = 420;
  const barH = 12;
  const groupH = barH * series.length + 10;
  const top = 50;
  const height = top + rows.length * groupH + 40;
  const max = Math.max(2, ...rows.flatMap((r) => r.values.filter(Number.isFinite)));
  const x = (v: number) => labelW + (Math.min(v, max) / max) * plotW;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${labelW + plotW + 80}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${esc(title)}</text>`,
    ...series.map(
      (s, i) =>
        `<rect x="${10 + i * 230}" y="30" width="10" height="10" fill="${colors[i % colors.length]}"/><text x="${24 + i * 230}" y="39">${esc(s)}</text>`,
    ),
  ];
  rows.forEach((r, k) => {
    const y0 = top + k * groupH;
    parts.push(`<text x="${labelW - 6}" y="${y0 + (barH * series.length) / 2 + 4}" text-anchor="end">${esc(r.label)}</text>`);
    r.values.forEach((v, i) => {
      if (!Number.isFinite(v)) return;
      const y = y0 + i * barH;
      parts.push(
        `<rect x="${labelW}" y="${y}" width="${Math.max(1, x(v) - labelW)}" height="${barH - 2}" fill="${colors[i % colors.length]}"/>`,
      );
      parts.push(`<text x="${x(v) + 4}" y="${y + barH - 3}">${v.toFixed(2)}x</text>`);
    });
  });
  const one = x(1);
  parts.push(`<line x1="${one}" y1="${top - 4}" x2="${one}" y2="${height - 30}" stroke="black" stroke-dasharray="3,3"/>`);
  parts.push(`<text x="${one}" y="${height - 16}" text-anchor="middle">1 = as good as the baseline</text>`);
  parts.push(`</svg>`);
  return parts.join("\n") + "\n";
}
