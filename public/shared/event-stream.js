// What both pages (the dashboard, the buyer's page) share: their bearer token, taken from the
// address or a field into the tab's sessionStorage, and Server-Sent Events read with fetch
// (EventSource cannot send an Authorization header, and the pages' tokens never go in a URL).

/** One event block (the lines between blank lines): its type and its JSON data, or null. */
function parseBlock(block) {
  let type = 'message';
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') type = value;
    else if (field === 'data') data.push(value);
  }
  return data.length === 0 ? null : { type, data: JSON.parse(data.join('\n')) };
}

/**
 * Opens `url` with the bearer `token`, calls `onOpen(response)` once the answer is a stream and
 * `onEvent(type, data)` for each event until the server ends the stream (then resolves null) or
 * `signal` aborts it (then rejects). An answer that is not a stream resolves to its Response,
 * unread: the caller decides what it means.
 */
export async function readEventStream(url, { token, signal, onOpen, onEvent }) {
  const response = await fetch(url, {
    headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' },
    cache: 'no-store',
    signal,
  });
  if (!response.ok || !response.body) return response;
  onOpen?.(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return null;
    buffered += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    let end;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = parseBlock(buffered.slice(0, end));
      buffered = buffered.slice(end + 2);
      if (event) onEvent(event.type, event.data);
    }
  }
}

/**
 * A token given in the address (`#token=…`) goes to this tab's sessionStorage under `key` and
 * leaves the address bar at once (history, screenshots, shoulder surfers).
 */
export function takeTokenFromAddress(key) {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!match) return;
  sessionStorage.setItem(key, decodeURIComponent(match[1]));
  history.replaceState(null, '', location.pathname + location.search);
}

/**
 * A token pasted into the page's field (without a `Bearer ` that may have been copied with it)
 * goes to sessionStorage under `key`, the field is emptied, and `onToken` runs.
 */
export function takeTokenFromForm(form, input, key, onToken) {
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = input.value.trim().replace(/^Bearer\s+/i, '');
    input.value = '';
    if (!value) return;
    sessionStorage.setItem(key, value);
    onToken();
  });
}
