import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** What one direction of a held connection keeps while cut: more than a test's Redis traffic in 30 s. */
const MAX_HELD_BYTES = 64 * 1024 * 1024;

/** One direction of a proxied connection: passed on at once, or held while the link is cut. */
class Direction {
  private held: Buffer[] = [];
  private heldBytes = 0;

  constructor(
    private readonly to: () => Socket | undefined,
    private readonly isCut: () => boolean,
    private readonly overflow: () => void,
  ) {}

  take(chunk: Buffer): void {
    const target = this.to();
    if (this.isCut() || target === undefined || this.held.length > 0) {
      this.heldBytes += chunk.length;
      if (this.heldBytes > MAX_HELD_BYTES) return this.overflow();
      this.held.push(chunk);
      return;
    }
    target.write(chunk);
  }

  /** Everything held, in order, once the link is back and the far end is connected. */
  flush(): void {
    const target = this.to();
    if (this.isCut() || target === undefined) return;
    for (const chunk of this.held) target.write(chunk);
    this.held = [];
    this.heldBytes = 0;
  }
}

/** A client connection and its upstream, with what each direction holds while cut. */
class Link {
  upstream: Socket | undefined;
  /** An upstream connection under way: a heal does not open a second. */
  connecting = false;
  readonly toServer: Direction;
  readonly toClient: Direction;

  constructor(
    readonly client: Socket,
    isCut: () => boolean,
  ) {
    const drop = () => this.destroy();
    this.toServer = new Direction(() => this.upstream, isCut, drop);
    this.toClient = new Direction(() => this.client, isCut, drop);
  }

  destroy(): void {
    this.client.destroy();
    this.upstream?.destroy();
  }
}

/**
 * A loopback TCP proxy in front of one server (a Redis) that can be cut off as a network partition
 * cuts it: while cut, nothing passes either way and a new connection waits, but nothing is lost
 * (TCP would retransmit what a partition of seconds held up); when healed, what was held is
 * delivered in order. A client behind it sees its commands hang for the cut, as it would.
 */
export class PartitionProxy {
  private cutOff = false;
  private readonly links = new Set<Link>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly target: { readonly host: string; readonly port: number },
  ) {}

  static async start(target: { readonly host: string; readonly port: number }): Promise<PartitionProxy> {
    let proxy: PartitionProxy | undefined;
    const server = createServer((client) => proxy?.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const address = server.address();
    proxy = new PartitionProxy(server, typeof address === 'object' && address ? address.port : 0, target);
    return proxy;
  }

  get cut(): boolean {
    return this.cutOff;
  }

  /** From now on nothing passes, either way. */
  partition(): void {
    this.cutOff = true;
  }

  /** What was held is delivered, and connections made while cut reach the server. */
  heal(): void {
    this.cutOff = false;
    for (const link of this.links) {
      if (link.upstream === undefined && !link.connecting) this.connect(link);
      link.toServer.flush();
      link.toClient.flush();
    }
  }

  async close(): Promise<void> {
    for (const link of this.links) link.destroy();
    this.links.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    const link = new Link(client, () => this.cutOff);
    this.links.add(link);
    client.on('data', (chunk: Buffer) => link.toServer.take(chunk));
    client.on('error', () => link.destroy());
    client.on('close', () => {
      link.destroy();
      this.links.delete(link);
    });
    if (!this.cutOff) this.connect(link);
  }

  private connect(link: Link): void {
    link.connecting = true;
    const upstream = createConnection(this.target.port, this.target.host);
    upstream.on('connect', () => {
      link.connecting = false;
      link.upstream = upstream;
      link.toServer.flush();
    });
    upstream.on('data', (chunk: Buffer) => link.toClient.take(chunk));
    upstream.on('error', () => link.destroy());
    upstream.on('close', () => link.destroy());
  }
}
