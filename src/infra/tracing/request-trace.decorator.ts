import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { requestTrace } from './request-tracing.hook.js';
import type { Trace } from './tracing.js';

/** The handler's parameter for its request's trace (undefined when the request is not traced). */
export const RequestTrace = createParamDecorator((_: unknown, context: ExecutionContext): Trace =>
  requestTrace(context.switchToHttp().getRequest<FastifyRequest>()),
);
