import {
  createConnection,
  createServer,
  type AddressInfo,
  type Server,
  type Socket,
} from 'node:net';

/**
 * A TCP proxy the test can stall and restore, to put a real network fault between the app and
 * a real service (no mock). While stalled, bytes are held, not dropped.
 */
export class TcpProxy {
  private readonly server: Server;
  private readonly pairs = new Set<[Socket, Socket]>();
  private stalled = false;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {
    this.server = createServer((client) => this.accept(client));
  }

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(targetHost, targetPort);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  private accept(client: Socket): void {
    const upstream = createConnection(this.targetPort, this.targetHost);
    const pair: [Socket, Socket] = [client, upstream];
    this.pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    if (this.stalled) this.pausePair(pair);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      this.pairs.delete(pair);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  }

  private pausePair([client, upstream]: [Socket, Socket]): void {
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pause();
    upstream.pause();
  }

  /** Holds every byte in both directions until `resume()`. */
  stall(): void {
    this.stalled = true;
    for (const pair of this.pairs) this.pausePair(pair);
  }

  resume(): void {
    this.stalled = false;
    for (const [client, upstream] of this.pairs) {
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
      upstream.resume();
    }
  }

  async close(): Promise<void> {
    for (const [client, upstream] of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
