import { describe, expect, it } from 'vitest';

import { queueOrder } from './queue-order.js';

// That it orders as lua/lib/queue-order.lua does is queue-order.int-spec.ts's (on the real Redis).
describe('queueOrder', () => {
  it('should refuse an index or a place outside the pre-queue, and an empty one', () => {
    const order = queueOrder('x', 10);
    expect(() => order.placeOf(10)).toThrow(RangeError);
    expect(() => order.indexAt(-1)).toThrow(RangeError);
    expect(() => order.placeOf(1.5)).toThrow(RangeError);
    expect(() => queueOrder('x', 0)).toThrow(RangeError);
  });
});
