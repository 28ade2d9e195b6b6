import { afterAll, describe, expect, it } from 'vitest';
import type { AppRole } from '../src/config/app-section.js';
import { ChildApp } from './support/child-app.js';
import {
  adminAuth,
  bearer,
  createSale,
  doubleClickCrowd,
  expectCrowdSold,
  expectOneOrderPerPurchaseTaken,
  startApp,
  Stores,
  waitForSettled,
  type TestApp,
} from './support/harness.js';

/**
 * Several instances on one MySQL, one Redis and one broker, as behind a load balancer: each
 * user's two clicks land on two different instances.
 */
describe('several instances on one set of stores', () => {
  const stores = new Stores();
  afterAll(async () => {
    await stores.close();
  });

  it.each<[string, AppRole[]]>([
    ['two all instances', ['all', 'all']],
    ['two api instances and a worker', ['api', 'api', 'worker']],
  ])(
    'should sell exactly 100 items to 100 distinct users when 1,000 users click twice across %s, ending consistent',
    async (_topology, roles) => {
      // Default rate limits; the test client is the trusted proxy of a crowd of distinct addresses.
      const instances: TestApp[] = [];
      try {
        for (const role of roles) {
          instances.push(await startApp({ APP_ROLE: role, TRUSTED_PROXIES: '127.0.0.1' }));
        }
        const apis = instances.filter((_, index) => roles[index] !== 'worker');
        const stock = 100;
        const goodsId = await createSale(apis[0].http, { stock });
        const users = Array.from({ length: 1_000 }, (_, i) => 60_000 + i);
        const responses = await doubleClickCrowd(
          apis.map((api) => api.http),
          goodsId,
          users,
        );

        await expectCrowdSold(stores, goodsId, stock, responses);
        const report = await apis[1].http
          .get(`/api/v1/admin/goods/${goodsId}/reconcile`)
          .set('Authorization', adminAuth())
          .expect(200);
        expect(report.body).toMatchObject({
          consistent: true,
          dbStock: 0,
          redisStock: 0,
          buyers: stock,
          inFlight: 0,
        });
      } finally {
        for (const instance of instances) await instance.close();
      }
    },
  );

  it('should turn every 202 into exactly one order when one of two instances is SIGKILLed mid-burst', async () => {
    // Fewer units than buyers, so that the sale sells out, but enough that it is still selling
    // on both instances when one dies.
    const stock = 500;
    // One test machine plays the crowd here: its address must not hit the per-IP limit. The
    // outbox sweeper is on, so that the survivor delivers what the killed one never published.
    const env = {
      THROTTLE_PURCHASE_IP_LIMIT: '0',
      OUTBOX_SWEEP_ENABLED: 'true',
      OUTBOX_SWEEP_INTERVAL_MS: '200',
      OUTBOX_STALE_MS: '1000',
    };
    // One after the other: migrations take no lock, and the first boot of the run may run them.
    const victim = await ChildApp.start(env);
    const survivor = await ChildApp.start(env);
    try {
      const goodsId = await survivor.createSale(stock);
      // 1,000 users clicking twice, each click on the other instance, 100 requests in flight at
      // a time: both instances are selling through the whole burst.
      const clicks = Array.from({ length: 1_000 }, (_, i) => 61_000 + i).flatMap((userId) =>
        [0, 1].map((click) => ({ userId, instance: (userId + click) % 2 ? survivor : victim })),
      );
      const answers: { status: number; requestId?: string }[] = [];
      let acceptedByVictim = 0;
      let next = 0;
      const client = async () => {
        while (next < clicks.length) {
          const { userId, instance } = clicks[next++];
          const answer = await instance.post(`/api/v1/seckill/${goodsId}`, bearer(userId)).then(
            async (response) => {
              const body = (await response.json()) as { requestId?: string };
              return { status: response.status, requestId: body.requestId };
            },
            () => ({ status: 0 }),
          );
          answers.push(answer);
          // Killed right here, with the rest of its share of the crowd still to come.
          if (answer.status === 202 && instance === victim && ++acceptedByVictim === 40) {
            victim.process.kill('SIGKILL');
          }
        }
      };
      await Promise.all(Array.from({ length: 100 }, client));
      expect(await victim.stop('SIGKILL')).toBeNull();
      const accepted = answers.filter((answer) => answer.status === 202);
      expect(acceptedByVictim).toBeGreaterThanOrEqual(40);
      // The kill cut the victim's answers off mid-burst.
      expect(answers.filter((answer) => answer.status === 0).length).toBeGreaterThan(0);

      // Everything Redis took is settled: written by the survivor's consumer (redelivered when
      // the victim held it unacked) or republished by its outbox sweeper.
      await waitForSettled(stores, goodsId);
      const orders = await expectOneOrderPerPurchaseTaken(stores, goodsId, stock);
      const written = new Set(orders.map((order) => order.request_id));
      for (const answer of accepted) expect(written).toContain(answer.requestId);

      const reconcile = await fetch(`${survivor.baseUrl}/api/v1/admin/goods/${goodsId}/reconcile`, {
        headers: { authorization: adminAuth() },
      });
      expect(await reconcile.json()).toMatchObject({
        consistent: true,
        inFlight: 0,
        dbStock: stock - orders.length,
      });
    } finally {
      await victim.stop('SIGKILL');
      await survivor.stop('SIGTERM');
    }
  });
});
