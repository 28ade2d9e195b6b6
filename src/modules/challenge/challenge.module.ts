import { Module } from '@nestjs/common';
import { ChallengeService } from './challenge.service.js';
import { ChallengeStore } from './challenge.store.js';

/** The proof-of-work challenges, asked for by the purchase token and by joining a waiting room. */
@Module({
  providers: [ChallengeService, ChallengeStore],
  exports: [ChallengeService],
})
export class ChallengeModule {}
