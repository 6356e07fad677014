import { createServer } from 'node:net';

/** A loopback port free right now; another process may bind it before the caller does (see onFreePort). */
export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** What a program (Go's net, Node, Java) says when the port it was told to bind is taken. */
export const PORT_TAKEN = /address already in use|EADDRINUSE|BindException/i;

/** Thrown by an onFreePort start whose program lost its port to another process. */
export class PortTaken extends Error {
  constructor(port: number, said: string) {
    super(`port ${port} was taken before the program bound it: ${said.slice(-500)}`);
  }
}

/**
 * `start` on a port freePort() found free, and again on a fresh one when it throws PortTaken: on
 * a shared machine another process can bind the port between freePort() letting it go and the
 * program binding it. Any other failure is the caller's, thrown as it is.
 */
export async function onFreePort<T>(start: (port: number) => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await start(await freePort());
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt >= attempts) throw error;
    }
  }
}
