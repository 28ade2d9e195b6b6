import { waitFor } from './harness.js';

export interface StreamEvent {
  event: string;
  data: string;
}

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
    const decoder = new TextDecoder();
    let buffered = '';
    try {
      for await (const chunk of body) {
        buffered += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffered.indexOf('\n\n')) >= 0) {
          this.parse(buffered.slice(0, end));
          buffered = buffered.slice(end + 2);
        }
      }
    } catch {
      // aborted by close(), or the server went away
    }
    this.ended = true;
  }

  private parse(block: string): void {
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) {
        this.comments++;
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length > 0) this.events.push({ event, data: data.join('\n') });
  }
}
