// Hybrid logical clocks in string form (the Passnote protocol: "Records travel ... with the HLC in string
// form"). The Passnote protocol does not fix the form; this profile does:
//   <wall: milliseconds since the epoch, 15 decimal digits>-<counter: 5 decimal digits>-<node id>
// so that string order is (wall, counter, node) order, and the wall time (which reconciliation
// ranges split on) is readable without a table.

interface Hlc {
  wall: number;
  counter: number;
  node: string;
}

const HLC_MAX_COUNTER = 99_999;
const WALL_DIGITS = 15;
const HLC_RE = /^(\d{15})-(\d{5})-([A-Za-z0-9_-]{1,64})$/;
const NODE_RE = /^[A-Za-z0-9_-]{1,64}$/;

function isNodeId(s: string): boolean {
  return NODE_RE.test(s);
}

export function formatHlc(h: Hlc): string {
  return `${String(h.wall).padStart(WALL_DIGITS, "0")}-${String(h.counter).padStart(5, "0")}-${h.node}`;
}

export function parseHlc(s: string): Hlc | null {
  const m = HLC_RE.exec(s);
  if (!m) return null;
  return { wall: Number(m[1]), counter: Number(m[2]), node: m[3] };
}

/** Orders HLC strings; the string form sorts as the clock does, so this is string order. */
export function compareHlc(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The wall time of an HLC string (it must be valid). */
export function hlcWall(s: string): number {
  return Number(s.slice(0, WALL_DIGITS));
}

/** A node's clock: ticks for local writes, and moves past every remote HLC it accepts. */
export class HlcClock {
  private last: Hlc;

  constructor(
    readonly node: string,
    private readonly now: () => number = Date.now,
  ) {
    if (!isNodeId(node)) throw new Error(`invalid node id: ${node}`);
    this.last = { wall: 0, counter: 0, node };
  }

  /** The HLC of a new local event. */
  tick(): string {
    const wall = Math.max(this.now(), this.last.wall);
    const counter = wall === this.last.wall ? this.last.counter + 1 : 0;
    this.last = counter > HLC_MAX_COUNTER ? { wall: wall + 1, counter: 0, node: this.node } : { wall, counter, node: this.node };
    return formatHlc(this.last);
  }

  /** Moves the clock past a remote HLC that was accepted. */
  observe(remote: string): void {
    const r = parseHlc(remote);
    if (!r) return;
    if (r.wall > this.last.wall || (r.wall === this.last.wall && r.counter > this.last.counter)) {
      this.last = { wall: r.wall, counter: r.counter, node: this.node };
    }
  }

  /** Current physical time, for the clock bound. */
  physical(): number {
    return this.now();
  }
}
