import { HttpException } from '@nestjs/common';
import { STATUS_CODES } from 'node:http';
import { isDependencyFailure } from './dependency-errors.js';
import { DomainError, ERROR_STATUS, type ErrorCode } from './domain-error.js';

/** The contract's error body (docs: ../shared/api-contract.md). */
export interface ErrorBody {
  statusCode: number;
  code: ErrorCode;
  message: string;
  [extra: string]: unknown;
}

const CODE_FOR_STATUS: Record<number, ErrorCode> = {
  400: 'VALIDATION_FAILED',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  408: 'REQUEST_TIMEOUT',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  414: 'URI_TOO_LONG',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'TOO_MANY_REQUESTS',
  431: 'HEADERS_TOO_LARGE',
  503: 'UNAVAILABLE',
};

const UNAVAILABLE_MESSAGE =
  'A service this request needs is unavailable; nothing was changed, try again shortly';

interface EdgeError {
  statusCode?: number;
  code?: string;
}

/**
 * Refusals raised before the app sees a request: by Fastify's router and body reading, and by
 * Node's HTTP parser and request timer. Their own messages echo the URL or name the framework, so
 * each gets a fixed one.
 */
const EDGE_ERRORS: Record<string, [ErrorCode, string]> = {
  FST_ERR_BAD_URL: ['VALIDATION_FAILED', 'Malformed URL'],
  FST_ERR_MAX_PARAM_LENGTH: ['URI_TOO_LONG', 'A path segment is too long'],
  FST_ERR_CTP_INVALID_JSON_BODY: ['VALIDATION_FAILED', 'Malformed JSON body'],
  FST_ERR_CTP_EMPTY_JSON_BODY: ['VALIDATION_FAILED', 'Malformed JSON body'],
  FST_ERR_CTP_BODY_TOO_LARGE: ['PAYLOAD_TOO_LARGE', 'Request body is too large'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ['UNSUPPORTED_MEDIA_TYPE', 'Unsupported content type'],
  ERR_HTTP_REQUEST_TIMEOUT: ['REQUEST_TIMEOUT', 'The request was not received in time'],
  HPE_HEADER_OVERFLOW: ['HEADERS_TOO_LARGE', 'The request headers are too large'],
};
// Any other complaint of the HTTP parser (HPE_INVALID_METHOD, HPE_INVALID_HEADER_TOKEN, …).
const MALFORMED_HTTP: [ErrorCode, string] = ['VALIDATION_FAILED', 'Malformed HTTP request'];

function edgeError(code: string): [ErrorCode, string] | undefined {
  return EDGE_ERRORS[code] ?? (code.startsWith('HPE_') ? MALFORMED_HTTP : undefined);
}

/** Maps every error to the contract body `{statusCode, code, message}`; never leaks a stack. */
export function toErrorBody(exception: unknown): ErrorBody {
  if (exception instanceof DomainError) {
    return {
      ...exception.details,
      statusCode: ERROR_STATUS[exception.code],
      code: exception.code,
      message: exception.message,
    };
  }
  if (exception instanceof HttpException) {
    const statusCode = exception.getStatus();
    const response = exception.getResponse();
    const raw =
      typeof response === 'string' ? response : (response as { message?: unknown }).message;
    // A 5xx text is a library's, and may name internals (hosts, queries): ours are DomainErrors.
    const message =
      statusCode >= 500
        ? statusCode === 503
          ? UNAVAILABLE_MESSAGE
          : 'Internal server error'
        : Array.isArray(raw)
          ? raw.join('; ')
          : typeof raw === 'string'
            ? raw
            : exception.message;
    return {
      statusCode,
      code:
        CODE_FOR_STATUS[statusCode] ?? (statusCode >= 500 ? 'INTERNAL_ERROR' : 'VALIDATION_FAILED'),
      // Nest's route-not-found text repeats the method and the whole URL.
      message: statusCode === 404 ? 'No such route' : message,
    };
  }
  const { statusCode, code } = (exception ?? {}) as EdgeError;
  const known = typeof code === 'string' ? edgeError(code) : undefined;
  if (known) {
    return { statusCode: ERROR_STATUS[known[0]], code: known[0], message: known[1] };
  }
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    return {
      statusCode,
      code: CODE_FOR_STATUS[statusCode] ?? 'VALIDATION_FAILED',
      message: STATUS_CODES[statusCode] ?? 'Bad request',
    };
  }
  if (isDependencyFailure(exception)) {
    return {
      statusCode: 503,
      code: 'UNAVAILABLE',
      message: UNAVAILABLE_MESSAGE,
    };
  }
  return { statusCode: 500, code: 'INTERNAL_ERROR', message: 'Internal server error' };
}
