import { setTimeout as sleep } from 'node:timers/promises';
/** Polls until `check` returns a truthy value; fails with the last value after `timeoutMs`. */
export async function waitFor(check, { timeoutMs = 15_000, intervalMs = 50, what = 'condition' } = {}) {
    const deadline = Date.now() + timeoutMs;
    let last;
    while (Date.now() < deadline) {
        last = await check();
        if (last)
            return last;
        await sleep(intervalMs);
    }
    throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(last)}`);
}
//# sourceMappingURL=wait-for.js.map