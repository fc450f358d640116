// Work that may wait a little and is then done once for every call made meanwhile: the report to
// the stats object (stats-reporter.ts), a storage lease's give-back (relay/storage-lease.ts), a
// Tally sender's share written exactly (tally/sender-share.ts), the ledger's figures
// (relay/relay-ledger.ts), the stats object's write of the reports it merged (relay/relay-stats.ts).
// No object keeps a timer for it (docs/objects.md, "Deferred work"): a pending timer keeps an
// object active, which Cloudflare bills as duration and which stops it from hibernating, so every
// burst would cost seconds of a live object.
// - An object that holds storage (its schema exists) runs its deferred work from its alarm,
//   `STATS_LIMITS.flush_interval_ms` after the first call of a burst: one alarm per burst, never
//   periodic (the alarm's own run sets no new one). The alarm is shared with the object's own
//   causes (expiries, audits) through the base (stored-object.ts), and every alarm runs every part.
//   The alarm outlives the object's memory: a part runs from what is stored as well (a lease's
//   give-back, the ledger's figures), and what lives only in memory is kept on the safe side of
//   storage meanwhile (a sender's share is written ahead, sender-share.ts); only the stats
//   counts of an object reset between a burst and its alarm are lost, and the reports the stats
//   object merged since its last write (statistics, never used to protect anyone).
// - An object that holds nothing gets no alarm (it would be storage; docs/hostile.md, "Nothing is
//   stored for free"): its parts run at the end of an entry into it when none ran within the
//   interval, when the entry changed what it reports of its current values (a device connected or
//   gone: `urgent`), when the entry was a socket's close (often the object's last entry), or when
//   asked (runAtExit: a Tally user's object that handed it envelopes in a burst
//   asks it from its own alarm), and otherwise at the end of its next entry (only the stats
//   report: every other part comes with storage). What an object that holds nothing counted after
//   its last report is lost if it hibernates before any of these (statistics only).
import { STATS_LIMITS } from "../../shared/limits";
import { log } from "../../server/log";
import { asEntered } from "./object-usage";

/** One piece of deferred work: `later()` asks for a run. */
export interface DeferredPart {
  /** Asks for a run: from the alarm when the object holds storage, else at the end of an entry. */
  later(): void;
  /** Whether a run was asked for and has not started yet. */
  readonly pending: boolean;
}

interface Part extends DeferredPart {
  due: boolean;
  readonly run: () => void | Promise<void>;
  readonly last: boolean;
}

export class Deferred {
  private readonly parts: Part[] = [];
  /** When this instance set the alarm for deferred work (null: it did not, or it has fired). */
  private armed: number | null = null;
  /** While an alarm runs the parts: the parts not yet started (a call for one of them joins this run). */
  private collecting: Set<Part> | null = null;
  /** When the parts last ran at the end of an entry (objects that hold nothing). */
  private lastRun = Number.NEGATIVE_INFINITY;
  /** The parts due run at the end of this entry, within the interval too (runAtExit). */
  private atExit = false;
  private running = false;
  /** An entry ended while the parts ran (an object that holds nothing): looked at again when they are done. */
  private exitedMeanwhile: { closing: boolean } | null = null;

  constructor(
    private readonly ctx: DurableObjectState,
    /** Whether the object holds storage now (its schema exists): only then may it set an alarm. */
    private readonly holdsStorage: () => boolean,
    /** Makes sure the object's alarm fires at or before `at` (the base's). */
    private readonly wake: (at: number) => Promise<void>,
    /**
     * Whether what an object that holds nothing would report changed in a way that must not wait
     * for the interval (its current values: a device connected or gone), read at the end of an
     * entry that the interval would otherwise hold back.
     */
    private readonly urgent: () => boolean = () => false,
    private readonly ms = STATS_LIMITS.flush_interval_ms,
  ) {}

  /** A part: `run` is called from the alarm (or the end of an entry); `last` parts run after the others (the stats report, which carries their usage). */
  part(run: () => void | Promise<void>, options: { last?: boolean } = {}): DeferredPart {
    const self = this;
    const p: Part = {
      due: false,
      run,
      last: options.last ?? false,
      get pending() {
        return p.due;
      },
      later() {
        p.due = true;
        if (self.collecting?.has(p)) return; // the alarm running now runs it
        if (self.collecting === null && self.holdsStorage()) self.arm();
      },
    };
    this.parts.push(p);
    this.parts.sort((a, b) => Number(a.last) - Number(b.last));
    return p;
  }

  /** When the alarm is wanted for deferred work (null: not wanted). */
  get at(): number | null {
    return this.armed;
  }

  /**
   * An entry into the object ended: parts still asked for run now (an object that holds nothing)
   * or from the alarm. `closing`: the entry was a socket's close, after which an object that holds
   * nothing may have nothing left to enter it: its parts run now, within the interval or not.
   */
  exited(closing = false): void {
    if (this.collecting !== null || !this.parts.some((p) => p.due)) return;
    if (this.holdsStorage()) {
      this.arm();
      return;
    }
    if (this.running) {
      // Looked at again once the run under way is done (it may not carry what this entry changed).
      this.exitedMeanwhile = { closing: closing || (this.exitedMeanwhile?.closing ?? false) };
      return;
    }
    // (The object's own look at its values: the methods it calls are not entries of their own.)
    if (!closing && !this.atExit && Date.now() - this.lastRun < this.ms && !asEntered(this.urgent)) return; // carried with the next entry
    this.atExit = false;
    this.lastRun = Date.now();
    this.running = true;
    this.ctx.waitUntil(
      asEntered(() => this.runParts(this.parts.filter((p) => p.due))).finally(() => {
        this.running = false;
        const again = this.exitedMeanwhile;
        this.exitedMeanwhile = null;
        if (again) this.exited(again.closing);
      }),
    );
  }

  /**
   * An object that holds nothing: the parts due run at the end of the entry now running, within
   * the interval too (another object that called it in a burst asks it to, from its own alarm, so
   * that what it counted after its last report is not left waiting for an entry that may not come).
   */
  runAtExit(): void {
    this.atExit = true;
  }

  /**
   * The object's alarm fired: every part runs at its end (alarmRuns; each finds from memory and
   * storage whether it has anything to do: an object rebuilt since the burst has nothing in
   * memory). Calls for a part made before it starts join that run, so the alarm's own work sets
   * no new alarm.
   */
  alarmBegins(): void {
    this.armed = null;
    this.collecting = new Set(this.parts);
  }

  /** The end of the alarm: every part runs (see alarmBegins). */
  async alarmRuns(): Promise<void> {
    this.collecting ??= new Set(this.parts);
    try {
      await this.runParts(this.parts, this.collecting);
    } finally {
      this.collecting = null;
    }
    // Calls made after their part started (an entry while the alarm awaited): one more run.
    if (this.parts.some((p) => p.due) && this.holdsStorage()) this.arm();
  }

  /** Runs every part now (before the object deletes its storage: nothing deferred is left to write afterwards). */
  async runNow(): Promise<void> {
    await this.runParts(this.parts);
    this.armed = null;
  }

  private arm(): void {
    if (this.armed !== null) return;
    this.armed = Date.now() + this.ms;
    this.ctx.waitUntil(this.wake(this.armed));
  }

  private async runParts(parts: readonly Part[], started?: Set<Part>): Promise<void> {
    for (const p of parts) {
      started?.delete(p);
      p.due = false;
      try {
        await p.run();
      } catch (err) {
        log.warn("deferred work failed; it runs again with the next call", { err });
      }
    }
  }
}
