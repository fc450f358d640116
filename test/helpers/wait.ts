/** Polls `check` until it returns a truthy value or the timeout passes. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  { timeout = 10_000, interval = 20, what = "condition" } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, interval));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
