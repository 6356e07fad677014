import { connect } from 'node:net';

/** A loopback client that sends `text` and then nothing more, as a slowloris does. */
export interface SlowClient {
  /** What the server sent back so far. */
  reply(): string;
  /** Whether the server has closed the connection. */
  closed(): boolean;
  destroy(): void;
}

export function slowClient(port: number, text: string): SlowClient {
  let reply = '';
  let closed = false;
  const socket = connect(port, '127.0.0.1', () => socket.write(text));
  socket.on('data', (chunk: Buffer) => (reply += chunk.toString()));
  socket.on('close', () => (closed = true));
  socket.on('error', () => {});
  return { reply: () => reply, closed: () => closed, destroy: () => socket.destroy() };
}
