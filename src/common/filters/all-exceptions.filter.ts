import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { bodyStillComing } from '../http/body-coming.js';
import { DomainError } from '../errors/domain-error.js';
import { toErrorBody } from '../errors/error-body.js';
import { pathOf } from '../logging/request-logging.js';

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
        exception instanceof DomainError ||
        exception instanceof HttpException ||
        !(exception instanceof Error)
          ? ''
          : ` (${exception.message})`;
      this.logger.warn(`${request.method} ${pathOf(request.url)} -> 503 ${body.message}${cause}`);
    } else if (body.statusCode >= 500) {
      const reason =
        exception instanceof Error ? (exception.stack ?? exception.message) : exception;
      this.logger.error(
        `${request.method} ${pathOf(request.url)} -> ${body.statusCode} ${body.code}`,
        reason,
      );
    }
    // Refused before the whole body arrived (no token, too large): close rather than read the
    // rest of a body nobody will use, as Fastify does for its own body errors. A refusal of a
    // request without a body (a sold-out answer from memory) keeps the connection.
    if (bodyStillComing(request.raw)) void reply.header('Connection', 'close');
    if (
      (body.statusCode === 429 || body.statusCode === 503) &&
      typeof body.retryAfterSeconds === 'number'
    ) {
      void reply.header('Retry-After', String(body.retryAfterSeconds));
    }
    void reply.status(body.statusCode).send(body);
  }
}
