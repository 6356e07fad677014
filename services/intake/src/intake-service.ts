import type { Server } from 'node:http';
import type { RunningService, ServiceContext } from '@gpualert/runtime';
import { createIntakeServer } from './intake-server.ts';
import type { IntakeConfig } from './intake-config.ts';
import { followInventory } from './inventory-hosts.ts';

/** The intake as a service: the HTTP server and the inventory it maps instance ids with. */
export async function startIntake(config: IntakeConfig, context: ServiceContext): Promise<RunningService & { port: number }> {
  const { server } = createIntakeServer({
    bus: context.bus,
    store: context.store,
    log: context.log,
    now: Date.now,
    seenTtlMs: config.seenTtlHours * 3_600_000,
    publishTimeoutMs: config.publishTimeoutMs,
    maxBodyBytes: config.maxBodyBytes,
    pagerdutySecrets: config.pagerdutySecrets,
    opsgenieTokens: config.opsgenieTokens,
    auth: { secrets: config.secrets, tokenHeader: config.tokenHeader, ...(config.token ? { token: config.token } : {}) },
    deliveries: {
      snsTopicArns: config.snsTopicArns,
      ...(config.pubsubAudience && config.pubsubServiceAccounts.length > 0
        ? { pubsub: { audience: config.pubsubAudience, serviceAccounts: config.pubsubServiceAccounts } }
        : {}),
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.listen, () => resolve());
  });
  const inventory = await followInventory(context.bus, context.store);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  context.log.info(
    { listen: config.listen, port, secrets: config.secrets.length, token: config.token !== undefined, max_body_bytes: config.maxBodyBytes },
    'intake_listening',
  );
  if (config.secrets.length === 0 && !config.token) {
    context.log.warn({}, 'intake_has_no_credentials: set GPUALERT_INTAKE_SECRETS or GPUALERT_INTAKE_TOKEN; every delivery is refused until then');
  }
  return {
    name: 'intake',
    port,
    async stop() {
      await closeServer(server);
      await inventory.stop();
    },
  };
}

function closeServer(server: Server): Promise<void> {
  server.closeIdleConnections?.();
  return new Promise((resolve) => server.close(() => resolve()));
}
