// Work that may wait a little and is then done once for every call made meanwhile (a report to the
// stats object, a lease given back): the first call schedules it `ms` later, further calls until
// it runs join that run. The object stays up for it (waitUntil).
import { asEntered } from "./object-usage";

export class Debounced {
  private scheduled = false;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly ms: number,
    private readonly run: () => Promise<void>,
  ) {}

  /** Whether a run is scheduled and has not started yet. */
  get pending(): boolean {
    return this.scheduled;
  }

  schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    this.ctx.waitUntil(
      new Promise<void>((resolve) =>
        setTimeout(() => {
          this.scheduled = false;
          void asEntered(() => this.run()).finally(resolve);
        }, this.ms),
      ),
    );
  }
}
