import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { AddressInfo } from 'node:net';
import { readEventStream } from '../../scripts/lib/event-stream.js';
import { waitFor } from './harness.js';

export interface SseEvent {
  data: Record<string, unknown>;
  /** When it arrived (Date.now()). */
  at: number;
}

/**
 * A server-sent-events client over fetch, as a browser's EventSource would read the stream
 * (without reconnecting): the events and comments it got, and whether the server ended it.
 */
export class SseClient {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  ended = false;
  endedAt = 0;

  private constructor(
    readonly status: number,
    readonly headers: Headers,
    /** The error body when the server refused the stream. */
    readonly refusal: Record<string, unknown> | undefined,
    private readonly abort: AbortController,
    body: ReadableStream<Uint8Array> | null,
  ) {
    if (body) void this.read(body);
  }

  static async open(
    url: string,
    authorization?: string,
    headers: Record<string, string> = {},
  ): Promise<SseClient> {
    const abort = new AbortController();
    const response = await fetch(url, {
      headers: {
        accept: 'text/event-stream',
        ...(authorization ? { authorization } : {}),
        ...headers,
      },
      signal: abort.signal,
    });
    if (response.status !== 200) {
      const refusal = (await response.json()) as Record<string, unknown>;
      return new SseClient(response.status, response.headers, refusal, abort, null);
    }
    return new SseClient(response.status, response.headers, undefined, abort, response.body);
  }

  /** The statuses of the events so far. */
  get statuses(): unknown[] {
    return this.events.map((event) => event.data.status);
  }

  /** Waits for an event with this status. */
  async waitForStatus(status: string, timeoutMs = 15_000): Promise<SseEvent> {
    return waitFor(() => this.events.find((event) => event.data.status === status), {
      timeoutMs,
      intervalMs: 5,
      what: `a ${status} event (got ${JSON.stringify(this.statuses)})`,
    });
  }

  async waitForEnd(timeoutMs = 15_000): Promise<void> {
    await waitFor(() => this.ended, { timeoutMs, intervalMs: 5, what: 'the stream to end' });
  }

  close(): void {
    this.abort.abort();
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    await readEventStream(body, {
      onEvent: (event) =>
        void this.events.push({ data: JSON.parse(event.data) as SseEvent['data'], at: Date.now() }),
      onComment: (text) => this.comments.push(text),
    });
    this.ended = true;
    this.endedAt = Date.now();
  }
}

/** The app's own base URL (it listens on a port the OS picked). */
export function baseUrlOf(app: NestFastifyApplication): string {
  const { port } = app.getHttpServer().address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}
