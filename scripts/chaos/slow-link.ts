// A slow link through a proxy: bytes are held, let through every few hundred milliseconds, held
// again. Each round trip waits up to a turn each way, so a step of many round trips (a consumer's
// batch transaction, a rebuild's load into Redis) takes seconds instead of milliseconds: the
// windows where an interleaving of another path can land grow with it.
import type { TcpProxy } from '../../test/support/tcp-proxy.js';

/** How long each turn holds the bytes before they go through. */
export const SLOW_TURN_MS = 150;

/** Slows `proxy` down until the returned function is called, which lets everything through. */
export function slowLink(
  proxy: Pick<TcpProxy, 'stall' | 'resume'>,
  turnMs = SLOW_TURN_MS,
): () => void {
  proxy.stall();
  const turns = setInterval(() => {
    proxy.resume();
    proxy.stall();
  }, turnMs);
  return () => {
    clearInterval(turns);
    proxy.resume();
  };
}
