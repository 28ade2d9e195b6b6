import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from the first byte sent until the server closed the connection. */
  elapsedMs: number;
}

export function portOf(app: NestFastifyApplication): number {
  return (app.getHttpServer().address() as AddressInfo).port;
}

/**
 * Sends bytes on a fresh connection exactly as given (no client library to fix them up), then
 * waits for the server to answer and close the connection. Fails if the server has not closed
 * it within `timeoutMs`.
 */
export function rawExchange(
  port: number,
  chunks: (string | Buffer)[],
  { timeoutMs = 10_000 } = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const received: Buffer[] = [];
    const socket = connect({ port, host: '127.0.0.1' });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    // A reset after the answer (the server closed with our bytes unread) still ends the exchange.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(received).toString('utf8');
      const answer = parseAnswer(text);
      if (answer) resolve({ ...answer, elapsedMs: Date.now() - started });
      else reject(new Error(`no HTTP answer before the close: ${JSON.stringify(text)}`));
    });
    socket.on('connect', () => {
      for (const chunk of chunks) socket.write(chunk);
    });
  });
}

function parseAnswer(text: string): Omit<RawAnswer, 'elapsedMs'> | undefined {
  const split = text.indexOf('\r\n\r\n');
  if (split < 0) return undefined;
  const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: text.slice(split + 4) };
}

/**
 * Sends a request on a fresh connection and never reads the answer (the socket is paused from
 * the start), as a client that stalls would. The caller destroys the socket.
 */
export function sendWithoutReading(port: number, request: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.pause();
    socket.on('error', () => undefined);
    socket.once('connect', () =>
      socket.write(request, (error) => (error ? reject(error) : resolve(socket))),
    );
  });
}

/**
 * A connection open and ready, and the answer it will get once the server closes it: the caller
 * writes when it chooses (e.g. before blocking the event loop, so that the request is on its way).
 */
export async function openConnection(
  port: number,
): Promise<{ socket: Socket; answer: Promise<RawAnswer> }> {
  const socket = connect({ port, host: '127.0.0.1' });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const started = Date.now();
  const answer = new Promise<RawAnswer>((resolve, reject) => {
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('close', () => {
      const text = Buffer.concat(received).toString('utf8');
      const parsed = parseAnswer(text);
      if (parsed) resolve({ ...parsed, elapsedMs: Date.now() - started });
      else reject(new Error(`no HTTP answer before the close: ${JSON.stringify(text)}`));
    });
  });
  return { socket, answer };
}
