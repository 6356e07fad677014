// The image's HEALTHCHECK, one command for every service: GET $GPUALERT_HEALTH_URL and exit 0 on a
// 2xx, 1 on anything else. The intake (9468), the agent (9469), the notifier (9095) and the engine
// (9470) serve /healthz; with the variable unset this exits 0 and the service's health is its
// process being alive (Docker restarts it when it exits; it exits on fatal errors).
const url = process.env.GPUALERT_HEALTH_URL;
// Docker's own --timeout kills a hung check; this one answers first, with a reason on stderr.
const TIMEOUT_MS = 4_000;

if (url === undefined || url === '') process.exit(0);

try {
  const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  if (response.ok) process.exit(0);
  process.stderr.write(`healthcheck: ${url} answered ${response.status}\n`);
  process.exit(1);
} catch (error) {
  process.stderr.write(`healthcheck: ${url} unreachable: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
