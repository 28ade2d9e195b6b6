import { setTimeout as sleep } from 'node:timers/promises';

/** Polls until `check` returns a truthy value; fails with the last value after `timeoutMs`. */
export async function waitFor<T>(
  check: () => Promise<T> | T,
  { timeoutMs = 15_000, intervalMs = 50, what = 'condition' } = {},
): Promise<Exclude<T, null | undefined | false>> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await check();
    if (last) return last as Exclude<T, null | undefined | false>;
    await sleep(intervalMs);
  }
  throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(last)}`);
}
