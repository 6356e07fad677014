import { createSocket, type Socket } from 'node:dgram';

/** A name's A records in the answers: what Docker's embedded DNS says of a `--scale`d compose service. */
export type Zone = ReadonlyMap<string, readonly string[]>;

const TYPE_A = 1;
const CLASS_IN = 1;
const RCODE_NXDOMAIN = 3;

/** The question's name (lowercase, without the root dot), its type and where the question ends, or undefined for a packet that is not one. */
function question(packet: Buffer): { name: string; type: number; end: number } | undefined {
  if (packet.length < 12 || packet.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let at = 12;
  // Bounded by the packet: a label is at most 63 bytes, a name at most 255.
  while (at < packet.length) {
    const length = packet[at]!;
    if (length === 0) break;
    if (length > 63 || at + 1 + length > packet.length || at + length > 12 + 255) return undefined;
    labels.push(packet.toString('latin1', at + 1, at + 1 + length).toLowerCase());
    at += 1 + length;
  }
  if (at + 5 > packet.length) return undefined;
  return { name: labels.join('.'), type: packet.readUInt16BE(at + 1), end: at + 5 };
}

/** The answer to one query: the zone's A records for an A question, no records for another type of a known name, NXDOMAIN for an unknown one. */
export function answer(query: Buffer, zone: Zone): Buffer | undefined {
  const q = question(query);
  if (!q) return undefined;
  const addresses = zone.get(q.name);
  const records = q.type === TYPE_A ? (addresses ?? []) : [];
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0);
  // QR, the query's opcode and RD, authoritative, recursion available; NXDOMAIN for a name not in the zone.
  header.writeUInt16BE(0x8000 | (query.readUInt16BE(2) & 0x7900) | 0x0400 | 0x0080 | (addresses ? 0 : RCODE_NXDOMAIN), 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(records.length, 6);
  const answers = records.map((address) => {
    const record = Buffer.alloc(16);
    record.writeUInt16BE(0xc00c, 0); // the question's name
    record.writeUInt16BE(TYPE_A, 2);
    record.writeUInt16BE(CLASS_IN, 4);
    record.writeUInt32BE(1, 6); // TTL 1 s
    record.writeUInt16BE(4, 10);
    address.split('.').forEach((octet, i) => record.writeUInt8(Number(octet), 12 + i));
    return record;
  });
  return Buffer.concat([header, query.subarray(12, q.end), ...answers]);
}

/**
 * An authoritative DNS server on UDP for a fixed zone, as a program reading /etc/resolv.conf
 * finds it: on port 53 of `address` (binding it needs root). Every query it answered is counted.
 */
export class DnsServer {
  queries = 0;
  private constructor(
    private readonly socket: Socket,
    readonly address: string,
  ) {}

  static async start(address: string, zone: Zone): Promise<DnsServer> {
    const socket = createSocket('udp4');
    const server = new DnsServer(socket, address);
    socket.on('message', (packet, from) => {
      const reply = answer(packet, zone);
      if (!reply) return;
      server.queries += 1;
      socket.send(reply, from.port, from.address);
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(53, address, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    return server;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.socket.close(() => resolve()));
  }
}
