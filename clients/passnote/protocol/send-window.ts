// Flow control (the Passnote protocol, "Flow control"): every frame to one peer passes through an ordered send
// window of maxInFlightFrames (16). Frames leave in the order they were queued, and at most 16
// are in flight (handed to the transport, not yet confirmed); the rest wait. That bound is the
// backpressure that stops a fast sender from burying a slow receiver.
import { PASSNOTE_LIMITS } from "../../../shared/limits";

export class SendWindow {
  private readonly queue: Array<{ frame: Uint8Array; done: (err?: unknown) => void }> = [];
  private inFlight = 0;
  private closed = false;
  /** The largest number of frames that were in flight at once (for tests and measurements). */
  peak = 0;
  /** The largest number of frames queued and in flight at once (for tests and measurements). */
  peakPending = 0;
  /** Called whenever a frame has left the window (the engine feeds paced work in then). */
  onSettled?: () => void;

  constructor(
    private readonly transmit: (frame: Uint8Array) => Promise<void>,
    readonly size: number = PASSNOTE_LIMITS.max_in_flight_frames,
  ) {}

  /** Queues a frame; resolves when the transport confirmed it (rejects if the window closed). */
  push(frame: Uint8Array): Promise<void> {
    if (this.closed) return Promise.reject(new Error("send window closed"));
    return new Promise((resolve, reject) => {
      this.queue.push({ frame, done: (err) => (err ? reject(err) : resolve()) });
      this.peakPending = Math.max(this.peakPending, this.pending);
      this.pump();
    });
  }

  get pending(): number {
    return this.queue.length + this.inFlight;
  }

  /** Frames waiting behind the window (not handed to the transport yet). */
  get queued(): number {
    return this.queue.length;
  }

  /** Drops everything not yet handed to the transport. */
  close(): void {
    this.closed = true;
    for (const q of this.queue.splice(0)) q.done(new Error("send window closed"));
  }

  private pump(): void {
    while (this.inFlight < this.size && this.queue.length > 0) {
      const { frame, done } = this.queue.shift()!;
      this.inFlight++;
      this.peak = Math.max(this.peak, this.inFlight);
      this.transmit(frame).then(
        () => this.settle(done),
        (err) => this.settle(() => done(err)),
      );
    }
  }

  private settle(done: (err?: unknown) => void): void {
    this.inFlight--;
    done();
    this.pump();
    if (!this.closed) this.onSettled?.();
  }
}
