// Ports for the servers the scripts, the bench and the tests start: below the kernel's
// ephemeral range (32768+), so that no outgoing connection can be holding one.
import { createServer } from 'node:net';

import { ScriptError } from './errors.js';

const PORT_RANGE = { from: 20_000, to: 32_000 };

/** Handed out by this process already: two servers asked for in a row never get the same one. */
const taken = new Set<number>();

/** True when nothing listens on the port on 127.0.0.1 (so a server of ours may). */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

export async function freePortBelowEphemeral(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = PORT_RANGE.from + Math.floor(Math.random() * (PORT_RANGE.to - PORT_RANGE.from));
    if (!taken.has(port) && (await portIsFree(port))) {
      taken.add(port);
      return port;
    }
  }
  throw new ScriptError(`no free port found from ${PORT_RANGE.from} to ${PORT_RANGE.to}`);
}
