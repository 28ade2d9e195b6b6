import { Module } from '@nestjs/common';
import { ChallengeService } from './challenge.service.js';

/** The proof-of-work challenges, asked for by the purchase token and by joining a waiting room. */
@Module({
  providers: [ChallengeService],
  exports: [ChallengeService],
})
export class ChallengeModule {}
