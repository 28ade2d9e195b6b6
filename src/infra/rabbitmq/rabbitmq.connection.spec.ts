import { once } from 'node:events';
import { createServer, connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { coalesceFrames } from './rabbitmq.connection.js';

/** A muxer as amqplib's: `_readIncoming`, on its prototype, writes the frames its channels queued. */
class FakeMuxer {
  queued: Buffer[] = [];
  /** What the socket still held when the turn ended (0: every frame had gone out on its own). */
  heldAtTurnEnd = -1;
  constructor(private readonly out: Socket) {}
  _readIncoming(): void {
    for (const frame of this.queued.splice(0)) this.out.write(frame);
    this.heldAtTurnEnd = this.out.writableLength;
  }
}

describe('coalesceFrames', () => {
  it('holds the frames of one muxer turn until it ends, then sends them in their order', async () => {
    const received: Buffer[] = [];
    const server = createServer((peer) => peer.on('data', (chunk: Buffer) => received.push(chunk)));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    await once(socket, 'connect');
    try {
      const muxer = new FakeMuxer(socket);
      expect(coalesceFrames({ connection: { stream: socket, muxer } })).toBe(true);
      muxer.queued = ['frame-1;', 'frame-2;', 'frame-3;'].map((frame) => Buffer.from(frame));
      muxer._readIncoming();
      expect(muxer.heldAtTurnEnd).toBe(24);
      expect(socket.writableLength).toBe(0);
      await waitUntil(() => Buffer.concat(received).length === 24);
      expect(Buffer.concat(received).toString()).toBe('frame-1;frame-2;frame-3;');
    } finally {
      socket.destroy();
      server.close();
    }
  });

  it('wraps a muxer once, however often its connection is announced', () => {
    let corks = 0;
    const stream = { cork: () => corks++, uncork: () => undefined };
    const muxer = new (class {
      _readIncoming(): void {}
    })();
    expect(coalesceFrames({ connection: { stream, muxer } })).toBe(true);
    expect(coalesceFrames({ connection: { stream, muxer } })).toBe(true);
    muxer._readIncoming();
    expect(corks).toBe(1);
  });

  it('leaves a connection of another shape alone, and says so', () => {
    expect(coalesceFrames(undefined)).toBe(false);
    expect(coalesceFrames({})).toBe(false);
    expect(coalesceFrames({ connection: { stream: {}, muxer: { _readIncoming() {} } } })).toBe(
      false,
    );
    expect(coalesceFrames({ connection: { stream: { cork() {}, uncork() {} }, muxer: {} } })).toBe(
      false,
    );
  });
});

async function waitUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
}
