import { Logger } from '@nestjs/common';
import type { ConnectionError, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { toErrorBody, type ErrorBody } from '../errors/error-body.js';
import { SECURITY_HEADERS, setSecurityHeaders } from './security-headers.js';

const logger = new Logger('HttpEdge');

/**
 * The router's refusals (a malformed URL, an over-long path segment) are answered before any
 * hook runs, so the security headers are set here.
 */
export function answerRouterError(
  error: FastifyError,
  _request: FastifyRequest,
  reply: FastifyReply,
): void {
  const body = toErrorBody(error);
  setSecurityHeaders(reply.raw);
  void reply.status(body.statusCode).send(body);
}

/**
 * What Node's HTTP server reports before there is a request to route: a request (headers and
 * body) not received within the request timeout, a header block over the limit, bytes that are
 * not HTTP. The answer goes straight to the socket, which is then closed; whatever the request
 * had buffered goes with it.
 */
export function answerClientError(error: ConnectionError, socket: Socket): void {
  if (error.code !== 'ECONNRESET' && !socket.destroyed && socket.writable) {
    // A second response cannot follow one whose head is already on the wire.
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (!inFlight?.headersSent) {
      const body = toErrorBody(error);
      logger.debug(`client error ${error.code} -> ${body.statusCode} ${body.code}`);
      socket.write(rawResponse(body));
    }
  }
  socket.destroy();
}

function rawResponse(body: ErrorBody): string {
  const json = JSON.stringify(body);
  const head = [
    `HTTP/1.1 ${body.statusCode} ${STATUS_CODES[body.statusCode]}`,
    ...SECURITY_HEADERS.map(([name, value]) => `${name}: ${value}`),
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(json)}`,
    'Connection: close',
  ];
  return `${head.join('\r\n')}\r\n\r\n${json}`;
}
