import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Batcher } from './batcher.js';

describe('Batcher', () => {
  const handled: number[][] = [];
  const errors: string[] = [];
  let handle: (batch: number[]) => Promise<void>;

  const batcher = () =>
    new Batcher<number>({
      size: 3,
      waitMs: 100,
      handle: (batch) => handle(batch),
      onError: (error, batch) => errors.push(`${error.message} ${batch.join(',')}`),
    });

  beforeEach(() => {
    vi.useFakeTimers();
    handled.length = 0;
    errors.length = 0;
    handle = async (batch) => {
      handled.push(batch);
    };
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('should hand out a full batch at once, and what is over the size right after it', async () => {
    const b = batcher();
    for (const item of [1, 2, 3, 4]) b.push(item);
    await vi.advanceTimersByTimeAsync(0);
    expect(handled).toEqual([[1, 2, 3], [4]]);
  });

  it('should hand out a partial batch after the wait, counted from its first item', async () => {
    const b = batcher();
    b.push(1);
    await vi.advanceTimersByTimeAsync(60);
    b.push(2);
    await vi.advanceTimersByTimeAsync(39);
    expect(handled).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(handled).toEqual([[1, 2]]);
  });

  it('should start a batch only once the one before is done', async () => {
    const b = batcher();
    let finishFirst!: () => void;
    const log: string[] = [];
    handle = async (batch) => {
      log.push(`start ${batch.join(',')}`);
      if (batch[0] === 1) await new Promise<void>((resolve) => (finishFirst = resolve));
      log.push(`end ${batch.join(',')}`);
    };
    for (const item of [1, 2, 3]) b.push(item);
    await vi.advanceTimersByTimeAsync(0);
    for (const item of [4, 5, 6]) b.push(item);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(log).toEqual(['start 1,2,3']);
    finishFirst();
    await vi.advanceTimersByTimeAsync(0);
    expect(log).toEqual(['start 1,2,3', 'end 1,2,3', 'start 4,5,6', 'end 4,5,6']);
  });

  it('should start the next batch as soon as the one before is done, with what came in meanwhile', async () => {
    const b = batcher();
    let finishFirst!: () => void;
    handle = async (batch) => {
      if (batch[0] === 1) await new Promise<void>((resolve) => (finishFirst = resolve));
      handled.push(batch);
    };
    b.push(1);
    await vi.advanceTimersByTimeAsync(100);
    b.push(2);
    b.push(3);
    finishFirst();
    await vi.advanceTimersByTimeAsync(0);
    expect(handled).toEqual([[1], [2, 3]]);
  });

  it('should report a failed batch and still run the next ones', async () => {
    const b = batcher();
    handle = async (batch) => {
      if (batch[0] === 1) throw new Error('boom');
      handled.push(batch);
    };
    for (const item of [1, 2, 3, 4, 5, 6]) b.push(item);
    await b.drain();
    b.push(7);
    await b.drain();
    expect(errors).toEqual(['boom 1,2,3']);
    expect(handled).toEqual([[4, 5, 6], [7]]);
  });

  it('should hand out what is buffered on drain and resolve once it is handled', async () => {
    const b = batcher();
    b.push(1);
    await b.drain();
    expect(handled).toEqual([[1]]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(handled).toEqual([[1]]);
  });

  it('should resolve a drain at once when nothing is buffered or running', async () => {
    await expect(batcher().drain()).resolves.toBeUndefined();
  });
});
