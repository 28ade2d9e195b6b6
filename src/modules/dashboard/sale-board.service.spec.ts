import { describe, expect, it } from 'vitest';
import { rateSeries } from './sale-board.service.js';

describe('rateSeries', () => {
  it("should turn the Lua call's seconds into one zero-filled series per outcome", () => {
    expect(rateSeries([[], ['ACCEPTED', '3', 'SOLD_OUT', '10'], [], ['SOLD_OUT', '2']])).toEqual({
      ACCEPTED: [0, 3, 0, 0],
      SOLD_OUT: [0, 10, 0, 2],
    });
    expect(rateSeries([[], []])).toEqual({});
  });
});
