import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ERROR_STATUS, type ErrorCode } from './domain-error.js';

/**
 * The error responses a route may give, in the OpenAPI document: one response per status, its
 * body the contract's `{statusCode, code, message}` with the codes it may carry, so that a client
 * generated from `/docs-json` knows them. The statuses come from ERROR_STATUS, the same table
 * the exception filter answers with. Always `application/json`, as the filter answers: an
 * event-stream route's @ApiProduces would otherwise put its errors under `text/event-stream`.
 */
export function ApiErrors(...codes: ErrorCode[]): MethodDecorator & ClassDecorator {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return applyDecorators(
    ...[...byStatus].map(([status, of]) =>
      ApiResponse({
        status,
        description: of.join(', '),
        content: { 'application/json': { schema: errorBodySchema(status, of) } },
      }),
    ),
  );
}

/** The contract's error body for `status`, its `code` one of `codes`. */
function errorBodySchema(status: number, codes: readonly string[]) {
  return {
    type: 'object' as const,
    required: ['statusCode', 'code', 'message'],
    properties: {
      statusCode: { type: 'integer' as const, enum: [status] },
      code: { type: 'string' as const, enum: [...codes] },
      message: { type: 'string' as const },
    },
  };
}

/** What every route behind the bearer guard may answer: no or a bad token, a dependency down. */
export const AUTHENTICATED: readonly ErrorCode[] = ['UNAUTHORIZED', 'UNAVAILABLE'];
/** An admin route: a user's token is refused too. */
export const ADMIN: readonly ErrorCode[] = [...AUTHENTICATED, 'FORBIDDEN'];
