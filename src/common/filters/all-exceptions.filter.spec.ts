import {
  BadRequestException,
  HttpException,
  InternalServerErrorException,
  NotFoundException,
  PayloadTooLargeException,
} from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { DomainError, UnavailableError, UnknownOutcomeError } from '../errors/domain-error.js';
import { toErrorBody } from '../errors/error-body.js';

describe('toErrorBody', () => {
  it.each([
    ['VALIDATION_FAILED', 400],
    ['UNAUTHORIZED', 401],
    ['FORBIDDEN', 403],
    ['GOODS_NOT_FOUND', 404],
    ['ORDER_NOT_FOUND', 404],
    ['NOT_FOUND', 404],
    ['METHOD_NOT_ALLOWED', 405],
    ['REQUEST_TIMEOUT', 408],
    ['SOLD_OUT', 409],
    ['ALREADY_PURCHASED', 409],
    ['SALE_NOT_STARTED', 409],
    ['SALE_ENDED', 409],
    ['NOT_PREHEATED', 409],
    ['DUPLICATE_REQUEST', 409],
    ['ORDER_CANCELLED', 409],
    ['ORDER_PAID', 409],
    ['PAYLOAD_TOO_LARGE', 413],
    ['URI_TOO_LONG', 414],
    ['UNSUPPORTED_MEDIA_TYPE', 415],
    ['TOO_MANY_REQUESTS', 429],
    ['HEADERS_TOO_LARGE', 431],
    ['INTERNAL_ERROR', 500],
    ['UNAVAILABLE', 503],
  ] as const)('should map DomainError %s to status %i', (code, status) => {
    expect(toErrorBody(new DomainError(code, 'Nope'))).toEqual({
      statusCode: status,
      code,
      message: 'Nope',
    });
  });

  it('should keep the details of a DomainError in the body', () => {
    const body = toErrorBody(
      new DomainError('TOO_MANY_REQUESTS', 'Slow down', { retryAfterSeconds: 3 }),
    );

    expect(body).toEqual({
      statusCode: 429,
      code: 'TOO_MANY_REQUESTS',
      message: 'Slow down',
      retryAfterSeconds: 3,
    });
  });

  it('should map an UnavailableError to 503 UNAVAILABLE without its cause', () => {
    const body = toErrorBody(new UnavailableError('Redis is down', new Error('ECONNREFUSED')));

    expect(body).toEqual({ statusCode: 503, code: 'UNAVAILABLE', message: 'Redis is down' });
  });

  it("should put an unknown outcome's requestId in its 503 body, and nothing of its cause", () => {
    const requestId = '3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
    const body = toErrorBody(
      new UnknownOutcomeError(requestId, 'Its result will tell', new Error('Command timed out')),
    );

    expect(body).toEqual({
      statusCode: 503,
      code: 'UNAVAILABLE',
      message: 'Its result will tell',
      requestId,
    });
  });

  it('should map a NotFoundException to 404 NOT_FOUND', () => {
    expect(toErrorBody(new NotFoundException('No such route'))).toEqual({
      statusCode: 404,
      code: 'NOT_FOUND',
      message: 'No such route',
    });
  });

  it('should map a PayloadTooLargeException to 413 PAYLOAD_TOO_LARGE', () => {
    expect(toErrorBody(new PayloadTooLargeException())).toMatchObject({
      statusCode: 413,
      code: 'PAYLOAD_TOO_LARGE',
      message: expect.any(String),
    });
  });

  it('should join the messages of a validation HttpException', () => {
    const body = toErrorBody(new BadRequestException(['a is bad', 'b is bad']));

    expect(body).toEqual({
      statusCode: 400,
      code: 'VALIDATION_FAILED',
      message: 'a is bad; b is bad',
    });
  });

  it("should answer a library's 503 in our words, without its report or its driver's text", () => {
    const details = { redis: { status: 'down', message: 'connect ECONNREFUSED 10.0.0.5:6379' } };
    const body = toErrorBody(
      new HttpException(
        { status: 'error', message: 'Service Unavailable Exception', details },
        503,
      ),
    );

    expect(body).toEqual({ statusCode: 503, code: 'UNAVAILABLE', message: expect.any(String) });
    expect(JSON.stringify(body)).not.toMatch(/ECONNREFUSED|10\.0\.0\.5|Exception/);
  });

  it('should map a 5xx HttpException without a code of its own to INTERNAL_ERROR', () => {
    expect(toErrorBody(new InternalServerErrorException())).toMatchObject({
      statusCode: 500,
      code: 'INTERNAL_ERROR',
    });
  });

  it('should map a Fastify body-too-large error to 413 PAYLOAD_TOO_LARGE', () => {
    const error = Object.assign(new Error('Request body is too large'), {
      statusCode: 413,
      code: 'FST_ERR_CTP_BODY_TOO_LARGE',
    });

    expect(toErrorBody(error)).toEqual({
      statusCode: 413,
      code: 'PAYLOAD_TOO_LARGE',
      message: 'Request body is too large',
    });
    expect(toErrorBody({ statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' })).toMatchObject({
      statusCode: 413,
      code: 'PAYLOAD_TOO_LARGE',
    });
  });

  it('should map a Fastify malformed-JSON error to 400 VALIDATION_FAILED', () => {
    const body = toErrorBody({
      statusCode: 400,
      code: 'FST_ERR_CTP_INVALID_JSON_BODY',
      message: 'Unexpected token } in JSON at position 7',
    });

    expect(body).toEqual({
      statusCode: 400,
      code: 'VALIDATION_FAILED',
      message: 'Malformed JSON body',
    });
  });

  it('should map a Fastify unsupported-media-type error to 415', () => {
    expect(toErrorBody({ statusCode: 415, code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' })).toEqual({
      statusCode: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
      message: 'Unsupported content type',
    });
  });

  it('should not repeat the URL of a route that does not exist', () => {
    expect(toErrorBody(new NotFoundException('Cannot GET /api/v1/<script>'))).toEqual({
      statusCode: 404,
      code: 'NOT_FOUND',
      message: 'No such route',
    });
  });

  it.each([
    ['FST_ERR_BAD_URL', 400, 'VALIDATION_FAILED', 400],
    ['FST_ERR_MAX_PARAM_LENGTH', 414, 'URI_TOO_LONG', 414],
    ['ERR_HTTP_REQUEST_TIMEOUT', undefined, 'REQUEST_TIMEOUT', 408],
    ['HPE_HEADER_OVERFLOW', undefined, 'HEADERS_TOO_LARGE', 431],
    ['HPE_INVALID_METHOD', undefined, 'VALIDATION_FAILED', 400],
    ['HPE_INVALID_HEADER_TOKEN', undefined, 'VALIDATION_FAILED', 400],
  ])(
    'should map %s, raised before the app, to its contract code without its own message',
    (errorCode, errorStatus, code, status) => {
      const error = Object.assign(new Error(`'/api/v1/goods/%zz' is not valid (fastify)`), {
        code: errorCode,
        statusCode: errorStatus,
      });

      const body = toErrorBody(error);

      expect(body).toEqual({ statusCode: status, code, message: expect.any(String) });
      expect(body.message).not.toMatch(/%zz|fastify/);
    },
  );

  it('should give any other client error of the framework its status text, not its message', () => {
    const body = toErrorBody({
      statusCode: 400,
      code: 'FST_ERR_CTP_INVALID_CONTENT_LENGTH',
      message: 'Request body size did not match Content-Length <echo>',
    });

    expect(body).toEqual({ statusCode: 400, code: 'VALIDATION_FAILED', message: 'Bad Request' });
  });

  it('should map an unknown Error to 500 INTERNAL_ERROR without leaking its message or stack', () => {
    const error = new Error('password=hunter2 at db.internal:3306');

    const body = toErrorBody(error);

    expect(body).toEqual({
      statusCode: 500,
      code: 'INTERNAL_ERROR',
      message: expect.any(String),
    });
    expect(body.message).not.toContain('hunter2');
    expect(JSON.stringify(body)).not.toContain('hunter2');
    expect(JSON.stringify(body)).not.toContain(error.stack!.split('\n')[1].trim());
  });

  it('should map a 5xx Fastify-style error and non-errors to 500 INTERNAL_ERROR', () => {
    for (const exception of [
      { statusCode: 502, message: 'upstream secret' },
      'a string',
      null,
      undefined,
    ]) {
      const body = toErrorBody(exception);
      expect(body).toEqual({
        statusCode: 500,
        code: 'INTERNAL_ERROR',
        message: expect.any(String),
      });
      expect(body.message).not.toContain('secret');
    }
  });
});
