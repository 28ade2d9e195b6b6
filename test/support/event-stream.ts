import { readEventStream, type StreamEvent } from '../../scripts/lib/event-stream.js';
import { waitFor } from './harness.js';

/**
 * A Server-Sent Events client over fetch (as the dashboard page reads its feed): the token goes
 * in the Authorization header. Collects every event; `close()` aborts the request.
 */
export class EventStreamClient {
  readonly events: StreamEvent[] = [];
  comments = 0;
  ended = false;
  private readonly controller = new AbortController();

  private constructor(readonly response: Response) {}

  static async open(url: string, authorization?: string): Promise<EventStreamClient> {
    const controller = new AbortController();
    const response = await fetch(url, {
      headers: authorization ? { Authorization: authorization } : {},
      signal: controller.signal,
    });
    const client = new EventStreamClient(response);
    client.controller.signal.addEventListener('abort', () => controller.abort());
    if (response.ok && response.body) void client.read(response.body);
    return client;
  }

  /** Snapshots (the default `message` events), parsed. */
  snapshots<T>(): T[] {
    return this.events
      .filter((event) => event.event === 'message')
      .map((event) => JSON.parse(event.data) as T);
  }

  /** Waits for a snapshot that `check` accepts; returns it. */
  async snapshot<T>(check: (snapshot: T) => boolean, what: string, timeoutMs = 30_000) {
    return waitFor(() => this.snapshots<T>().find(check), { timeoutMs, intervalMs: 100, what });
  }

  close(): void {
    this.controller.abort();
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    await readEventStream(body, {
      onEvent: (event) => void this.events.push(event),
      onComment: () => this.comments++,
    });
    this.ended = true;
  }
}
