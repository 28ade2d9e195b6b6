import { describe, expect, it } from 'vitest';
import { readEventStream, type StreamEvent } from './event-stream.js';

async function* chunks(...parts: string[]): AsyncIterable<Uint8Array> {
  for (const part of parts) yield new TextEncoder().encode(part);
}

describe('readEventStream', () => {
  it('should hand over each event as it completes, across chunk boundaries, and the comments apart', async () => {
    const events: StreamEvent[] = [];
    const comments: string[] = [];
    await readEventStream(
      chunks('data: {"a":', '1}\n\n: heartbeat\n\nevent: unavailable\ndata: x\ndata: y\n', '\n'),
      {
        onEvent: (event) => void events.push(event),
        onComment: (text) => comments.push(text),
      },
    );
    expect(events).toEqual([
      { event: 'message', data: '{"a":1}' },
      { event: 'unavailable', data: 'x\ny' },
    ]);
    expect(comments).toEqual(['heartbeat']);
  });

  it('should end quietly when the body fails midway, keeping what came before', async () => {
    const events: StreamEvent[] = [];
    async function* broken(): AsyncIterable<Uint8Array> {
      yield new TextEncoder().encode('data: 1\n\ndata: 2');
      throw new Error('aborted');
    }
    await readEventStream(broken(), { onEvent: (event) => void events.push(event) });
    expect(events).toEqual([{ event: 'message', data: '1' }]);
  });
});
