import { Injectable, PipeTransform } from '@nestjs/common';
import { DomainError, echoed } from '../errors/domain-error.js';

const POSITIVE_INT = /^[1-9][0-9]{0,15}$/;

/** Path ids: a positive integer within JS's safe range, or 400 VALIDATION_FAILED. */
@Injectable()
export class PositiveIntPipe implements PipeTransform<string, number> {
  transform(value: string): number {
    const parsed = POSITIVE_INT.test(value) ? Number(value) : NaN;
    if (!Number.isSafeInteger(parsed)) {
      throw new DomainError('VALIDATION_FAILED', `"${echoed(value)}" is not a positive integer id`);
    }
    return parsed;
  }
}
