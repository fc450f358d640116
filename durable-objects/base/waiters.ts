// Long-polls held open until something arrives: each waits at most its own time, and all wake at once.
export class Waiters {
  private readonly waiting = new Set<() => void>();

  /** Resolves at the next wakeAll() or after `ms`, whichever comes first. */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiting.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiting.add(done);
    });
  }

  /** Something arrived: every waiter goes. */
  wakeAll(): void {
    for (const done of [...this.waiting]) done();
  }

  get size(): number {
    return this.waiting.size;
  }
}
