import { describe, expect, it } from 'vitest';
import { ApiErrors } from './api-errors.decorator.js';

/** Where @nestjs/swagger keeps a route's responses (its DECORATORS.API_RESPONSE, not exported). */
const API_RESPONSE = 'swagger/apiResponse';

class Routes {
  @ApiErrors('SOLD_OUT', 'UNAUTHORIZED', 'ALREADY_PURCHASED', 'SOLD_OUT')
  buy(): void {}
}

describe('ApiErrors', () => {
  it("should document one response per status, each the contract's body with that status's codes", () => {
    const responses = Reflect.getMetadata(API_RESPONSE, Routes.prototype.buy) as Record<
      string,
      {
        description: string;
        content: Record<string, { schema: { properties: Record<string, { enum?: unknown[] }> } }>;
      }
    >;

    expect(Object.keys(responses).sort()).toEqual(['401', '409']);
    expect(responses['409'].description).toBe('SOLD_OUT, ALREADY_PURCHASED');
    expect(responses['409'].content['application/json'].schema.properties.code.enum).toEqual([
      'SOLD_OUT',
      'ALREADY_PURCHASED',
    ]);
    expect(responses['409'].content['application/json'].schema.properties.statusCode.enum).toEqual([
      409,
    ]);
    expect(responses['401'].content['application/json'].schema.properties.code.enum).toEqual([
      'UNAUTHORIZED',
    ]);
    expect(Object.keys(responses['401'].content['application/json'].schema.properties)).toEqual([
      'statusCode',
      'code',
      'message',
    ]);
  });
});
