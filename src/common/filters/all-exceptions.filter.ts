import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isDependencyFailure } from '../errors/dependency-errors.js';
import { DomainError, ERROR_STATUS, ErrorCode } from '../errors/domain-error.js';

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
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'TOO_MANY_REQUESTS',
  503: 'UNAVAILABLE',
};

interface FastifyLikeError {
  statusCode?: number;
  code?: string;
  message?: string;
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
    // A 5xx text may name internals (hosts, queries): only 503s, which are ours, pass through.
    const message =
      statusCode >= 500 && statusCode !== 503
        ? 'Internal server error'
        : Array.isArray(raw)
          ? raw.join('; ')
          : typeof raw === 'string'
            ? raw
            : exception.message;
    const body: ErrorBody = {
      statusCode,
      code:
        CODE_FOR_STATUS[statusCode] ?? (statusCode >= 500 ? 'INTERNAL_ERROR' : 'VALIDATION_FAILED'),
      message,
    };
    // Terminus puts the per-dependency health report in the response: keep it.
    if (typeof response === 'object' && response && 'details' in response) {
      body.details = response.details;
    }
    return body;
  }
  const fastifyError = exception as FastifyLikeError;
  if (typeof fastifyError?.statusCode === 'number' && fastifyError.statusCode < 500) {
    const statusCode = fastifyError.statusCode;
    return {
      statusCode,
      code: CODE_FOR_STATUS[statusCode] ?? 'VALIDATION_FAILED',
      message: fastifyMessage(fastifyError),
    };
  }
  if (isDependencyFailure(exception)) {
    return {
      statusCode: 503,
      code: 'UNAVAILABLE',
      message:
        'A service this request needs is unavailable; nothing was changed, try again shortly',
    };
  }
  return { statusCode: 500, code: 'INTERNAL_ERROR', message: 'Internal server error' };
}

function fastifyMessage(error: FastifyLikeError): string {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'Malformed JSON body';
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'Request body is too large';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'Unsupported content type';
    default:
      return error.message ?? 'Bad request';
  }
}

@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger(AllExceptionsFilter.name);

  catch(exception: unknown, host: ArgumentsHost): void {
    const context = host.switchToHttp();
    const reply = context.getResponse<FastifyReply>();
    const request = context.getRequest<FastifyRequest>();
    const body = toErrorBody(exception);
    if (body.statusCode === 503) {
      // A dependency outage is an expected outcome: one line, with the driver's word for it
      // when no service said it already.
      const cause =
        exception instanceof DomainError || !(exception instanceof Error)
          ? ''
          : ` (${exception.message})`;
      this.logger.warn(`${request.method} ${request.url} -> 503 ${body.message}${cause}`);
    } else if (body.statusCode >= 500) {
      const reason =
        exception instanceof Error ? (exception.stack ?? exception.message) : exception;
      this.logger.error(
        `${request.method} ${request.url} -> ${body.statusCode} ${body.code}`,
        reason,
      );
    }
    if (body.statusCode === 429 && typeof body.retryAfterSeconds === 'number') {
      void reply.header('Retry-After', String(body.retryAfterSeconds));
    }
    void reply.status(body.statusCode).send(body);
  }
}
