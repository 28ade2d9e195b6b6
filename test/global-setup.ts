import amqp from 'amqplib';
import { Redis } from 'ioredis';
import { createConnection } from 'mysql2/promise';
import './setup-env.js';

/** Every run starts from empty stores: a dropped test database, Redis db and test queues. */
export default async function globalSetup(): Promise<void> {
  const database = new URL(process.env.DATABASE_URL!);
  const name = database.pathname.slice(1);
  const mysql = await createConnection({
    host: database.hostname,
    port: Number(database.port || 3306),
    user: decodeURIComponent(database.username),
    password: decodeURIComponent(database.password),
  });
  await mysql.query(`DROP DATABASE IF EXISTS \`${name}\``);
  await mysql.end();

  const redis = new Redis(process.env.REDIS_URL!);
  await redis.flushdb();
  redis.disconnect();

  const connection = await amqp.connect(process.env.RABBITMQ_URL!);
  const channel = await connection.createChannel();
  const base = process.env.RABBITMQ_PREFIX!;
  // The messaging tests run apps on prefixes of their own (a tiny length limit, classic queues),
  // and the MariaDB failover test one for its private database.
  for (const prefix of [base, `${base}_small`, `${base}_classic`, `${base}_failover`]) {
    for (const queue of [`${prefix}.orders`, `${prefix}.orders.dead`, `${prefix}.orders.timeout`]) {
      await channel.deleteQueue(queue);
    }
    // Delay queues carry the payment timeout in their name; the tests use these two.
    for (const timeoutMs of [900_000, 2_000]) {
      await channel.deleteQueue(`${prefix}.orders.delay.${timeoutMs}ms`);
    }
  }
  await connection.close();
}
