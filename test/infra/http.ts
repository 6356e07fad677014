import type { Server } from 'node:http';

/** Listens on an ephemeral loopback port; resolves to the base URL. */
export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('no address');
  return `http://127.0.0.1:${address.port}`;
}

export function close(server: Server): Promise<void> {
  server.closeAllConnections?.();
  return new Promise((resolve) => server.close(() => resolve()));
}
