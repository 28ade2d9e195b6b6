// Server-Sent Events read off a fetch body (as the pages read their streams: with fetch, so that
// the token goes in the Authorization header, which EventSource cannot send).

export interface StreamEvent {
  /** `message` unless the block named another. */
  event: string;
  data: string;
}

export interface EventStreamHandlers {
  /** `'stop'`: read no further (the body is cancelled); the reader's own way out of a stream. */
  onEvent: (event: StreamEvent) => void | 'stop';
  /** A comment line (": heartbeat"), without its colon. */
  onComment?: (text: string) => void;
}

/** One block (the lines before a blank line): its event, or nothing for a block of comments. */
export function parseEventBlock(
  block: string,
  onComment?: (text: string) => void,
): StreamEvent | undefined {
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) {
      onComment?.(line.slice(1).trim());
      continue;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return data.length > 0 ? { event, data: data.join('\n') } : undefined;
}

/**
 * Reads the stream to its end, handing over each event as it comes; resolves when the server
 * ends it, when a handler says stop, or when the request is aborted (not an error here).
 */
export async function readEventStream(
  body: AsyncIterable<Uint8Array>,
  handlers: EventStreamHandlers,
): Promise<void> {
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for await (const chunk of body) {
      buffered += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffered.indexOf('\n\n')) >= 0) {
        const event = parseEventBlock(buffered.slice(0, end), handlers.onComment);
        buffered = buffered.slice(end + 2);
        // Leaving the loop cancels the body; aborting the request from inside it instead can
        // leave the next read pending on Node 20.
        if (event && handlers.onEvent(event) === 'stop') return;
      }
    }
  } catch {
    // Aborted by this side, or the server went away: the stream is over either way.
  }
}
