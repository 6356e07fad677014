import { hostname } from 'node:os';
import { CliError, EXIT } from '../cli-error.ts';
import { jobContext } from './collect-job.ts';

/** A report that gets no answer in this long failed: the intake answers in milliseconds once Kafka acked. */
const REPORT_TIMEOUT_MS = 10_000;

/**
 * `gpualert job report --job J [--rank R] --step N [--checkpoint ok|failed] [--step-time MS]`: one
 * job event posted to the intake's `/v1/job-events`, for a framework or a script that reports
 * itself. The intake's URL from `GPUALERT_INTAKE_URL` (default http://127.0.0.1:9468), its token
 * from `GPUALERT_INTAKE_TOKEN` (sent in `GPUALERT_INTAKE_TOKEN_HEADER`, default Authorization, as
 * a bearer token): the token never appears on a command line or in an error.
 */
export async function jobReport(options: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const context = jobContext('job report', options);
  const step = options.step === undefined ? undefined : Number(options.step);
  if (step !== undefined && (!Number.isSafeInteger(step) || step < 0)) throw new CliError(`gpualert job report: --step expects a whole number (got "${String(options.step)}")`);
  const checkpoint = options.checkpoint === undefined ? undefined : String(options.checkpoint);
  if (checkpoint !== undefined && checkpoint !== 'ok' && checkpoint !== 'failed') throw new CliError(`gpualert job report: --checkpoint expects ok or failed (got "${checkpoint}")`);
  const stepTime = options.stepTime === undefined ? undefined : Number(options.stepTime);
  if (stepTime !== undefined && !(Number.isFinite(stepTime) && stepTime >= 0)) throw new CliError(`gpualert job report: --step-time expects milliseconds (got "${String(options.stepTime)}")`);
  if (step === undefined && checkpoint === undefined) throw new CliError('gpualert job report: give --step N, --checkpoint ok|failed, or both');
  const token = env.GPUALERT_INTAKE_TOKEN;
  if (!token) throw new CliError('gpualert job report: set GPUALERT_INTAKE_TOKEN to the intake\'s token');
  const base = env.GPUALERT_INTAKE_URL ?? 'http://127.0.0.1:9468';
  let url: URL;
  try {
    url = new URL('/v1/job-events', base);
  } catch {
    throw new CliError(`gpualert job report: GPUALERT_INTAKE_URL is not a URL (got "${base.slice(0, 200)}")`);
  }
  const event = {
    host: (options.host as string | undefined) ?? hostname(), ...context, kind: checkpoint ? 'checkpoint' : 'step',
    ...(step !== undefined ? { step } : {}), ...(checkpoint ? { checkpoint } : {}), ...(stepTime !== undefined ? { step_time_ms: stepTime } : {}),
    message: options.message === undefined ? '' : String(options.message),
  };
  const header = (env.GPUALERT_INTAKE_TOKEN_HEADER ?? 'authorization').toLowerCase();
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST', body: JSON.stringify(event), signal: AbortSignal.timeout(REPORT_TIMEOUT_MS),
      headers: { 'content-type': 'application/json', [header]: header === 'authorization' ? `Bearer ${token}` : token },
    });
  } catch (error) {
    throw new CliError(`gpualert job report: cannot reach the intake at ${url.origin}: ${error instanceof Error ? error.name : 'error'}`, EXIT.unavailable);
  }
  const answer = await response.text();
  if (response.status === 202) {
    process.stdout.write(`${answer}\n`);
    return EXIT.ok;
  }
  let message = answer.slice(0, 500);
  try {
    message = String((JSON.parse(answer) as { message?: unknown }).message ?? message);
  } catch {
    // not JSON: the first 500 characters as they are
  }
  throw new CliError(`gpualert job report: the intake answered ${response.status}: ${message}`, response.status >= 500 ? EXIT.unavailable : EXIT.failed);
}
