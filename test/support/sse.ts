import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { AddressInfo } from 'node:net';
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
  private buffer = '';

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
    const decoder = new TextDecoder();
    try {
      for await (const chunk of body) {
        this.buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = this.buffer.indexOf('\n\n')) !== -1) {
          this.parse(this.buffer.slice(0, end));
          this.buffer = this.buffer.slice(end + 2);
        }
      }
    } catch {
      // Closed by this side.
    }
    this.ended = true;
    this.endedAt = Date.now();
  }

  private parse(block: string): void {
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
      else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
    }
    if (data.length > 0) {
      this.events.push({ data: JSON.parse(data.join('\n')) as SseEvent['data'], at: Date.now() });
    }
  }
}

/** The app's own base URL (it listens on a port the OS picked). */
export function baseUrlOf(app: NestFastifyApplication): string {
  const { port } = app.getHttpServer().address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}
