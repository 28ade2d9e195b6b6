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
  private stalled: 'none' | 'both' | 'to-client' = 'none';
  private refusing = false;
  private held: [Socket, Buffer][] = [];
  /** Sockets of connections gone silent (see silenceOpen): what is sent to them is lost. */
  private readonly silenced = new WeakSet<Socket>();
  private readonly serverTaps: ((chunk: Buffer, upstream: Socket) => void)[] = [];
  private readonly clientTaps: ((chunk: Buffer, client: Socket, upstream: Socket) => void)[] = [];

  private constructor(
    private readonly targetHost: string,
    private targetPort: number,
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
    if (this.refusing) {
      client.destroy();
      return;
    }
    const upstream = createConnection(this.targetPort, this.targetHost);
    const pair: [Socket, Socket] = [client, upstream];
    this.pairs.add(pair);
    // Before the bytes are forwarded: a tap that cuts the service (down()) keeps them from it.
    client.on('data', (chunk: Buffer) =>
      this.clientTaps.forEach((tap) => tap(chunk, client, upstream)),
    );
    this.forward(client, upstream, 'both');
    this.forward(upstream, client, 'to-client');
    upstream.on('data', (chunk: Buffer) => this.serverTaps.forEach((tap) => tap(chunk, upstream)));
    const drop = () => {
      client.destroy();
      upstream.destroy();
      this.pairs.delete(pair);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  }

  /** Copies bytes in order; while stalled they wait in `held` and go out on resume. */
  private forward(from: Socket, to: Socket, direction: 'both' | 'to-client'): void {
    from.on('data', (chunk: Buffer) => this.send(to, chunk, direction));
  }

  private send(to: Socket, chunk: Buffer, direction: 'both' | 'to-client'): void {
    const held = this.stalled === 'both' || this.stalled === direction;
    if (to.destroyed || this.silenced.has(to)) return;
    if (held || this.held.some(([target]) => target === to)) this.held.push([to, chunk]);
    else to.write(chunk);
  }

  /**
   * Sends bytes of the proxy's own to the server on `upstream` (a connection a tap was shown),
   * in order with the client's: held like them while stalled. The caller keeps to the protocol's
   * framing (see the AMQP channel breaker of the chaos run).
   */
  sendToServer(upstream: Socket, chunk: Buffer): void {
    this.send(upstream, chunk, 'both');
  }

  /**
   * Holds bytes until `resume()`: in both directions, or only those from the server to the
   * client (the server receives everything but its answers, confirms included, wait).
   */
  stall(direction: 'both' | 'to-client' = 'both'): void {
    this.stalled = direction;
  }

  resume(): void {
    this.stalled = 'none';
    for (const [to, chunk] of this.held.splice(0)) if (!to.destroyed) to.write(chunk);
  }

  /**
   * The open connections go silent for good, as half-open ones whose path forgot them (a NAT or
   * firewall entry expired): the bytes either end sends are lost, nothing is closed; connections
   * made after this pass as usual.
   */
  silenceOpen(): void {
    for (const [client, upstream] of this.pairs) {
      this.silenced.add(client);
      this.silenced.add(upstream);
    }
  }

  /** The service "goes down": open connections are cut and new ones are refused until up(). */
  down(): void {
    this.refusing = true;
    for (const [client, upstream] of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
    this.held = [];
  }

  up(): void {
    this.refusing = false;
  }

  /**
   * Points the proxy at another server on the same host (a failover's virtual address moving):
   * open connections are cut, as the old server's death cut them, and new ones reach `port`.
   */
  retarget(port: number): void {
    this.targetPort = port;
    for (const [client, upstream] of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  /** Shows `tap` every byte the server sends, as it arrives (before any stall holds it). */
  tapServer(tap: (chunk: Buffer, upstream: Socket) => void): void {
    this.serverTaps.push(tap);
  }

  /**
   * Shows `tap` every byte a client sends, as it arrives (before it is forwarded), with the
   * client's connection (to follow one connection's statements) and its upstream one (to send
   * bytes of the proxy's own on it, `sendToServer`).
   */
  tapClient(tap: (chunk: Buffer, client: Socket, upstream: Socket) => void): void {
    this.clientTaps.push(tap);
  }

  /** How many client connections are open now. */
  get connections(): number {
    return this.pairs.size;
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

/** Starts a proxy in front of the service a URL names; returns it with the URL through it. */
export async function proxyInFront(
  serviceUrl: string,
  defaultPort: number,
): Promise<{ proxy: TcpProxy; url: string }> {
  const url = new URL(serviceUrl);
  const proxy = await TcpProxy.start(url.hostname, Number(url.port || defaultPort));
  url.host = `127.0.0.1:${proxy.port}`;
  return { proxy, url: url.toString() };
}
