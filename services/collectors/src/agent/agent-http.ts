import { createServer, type Server } from 'node:http';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { RunningAgent } from './host-agent.ts';

/**
 * The agent's one HTTP face: `GET /healthz` (200 or 503 with the reason, JSON) and `GET /metrics`
 * (the agent's publishes and the process's own CPU and memory). Nothing else, nothing that writes.
 */
export function createAgentServer(agent: RunningAgent): Server {
  const registry = Registry.merge([agent.tracker.registry, processRegistry()]);
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    const json = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(`${JSON.stringify(body)}\n`);
    };
    if (request.method !== 'GET' && request.method !== 'HEAD') return json(405, { error: 'method not allowed: GET /healthz or /metrics' });
    if (path === '/healthz') {
      const health = agent.health();
      return json(health.healthy ? 200 : 503, health);
    }
    if (path === '/metrics') {
      registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (error: unknown) => json(500, { error: `metrics failed: ${String(error)}` }),
      );
      return;
    }
    return json(404, { error: `not found: ${path}; the agent serves /healthz and /metrics` });
  });
  // Only scrapers and probes talk to it: short limits, no slow client holds a socket.
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  return server;
}

function processRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'gpualert_agent_' });
  return registry;
}
