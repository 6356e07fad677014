import { hostname } from 'node:os';
import { GpualertError } from '@gpualert/schema';
import { CliError, EXIT, errnoCode } from '../cli-error.ts';
import { loadSettings } from '../settings/command-settings.ts';
import { JOB_REPORT_SETTINGS } from '../settings/collector-settings.ts';
import { jobContext } from './collect-job.ts';
import { stringOption } from '../option-values.ts';

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
  if (step !== undefined && (!Number.isSafeInteger(step) || step < 0))
    throw new CliError(`gpualert job report: --step expects a whole number (got "${String(options.step)}")`);
  const checkpoint = options.checkpoint === undefined ? undefined : String(options.checkpoint);
  if (checkpoint !== undefined && checkpoint !== 'ok' && checkpoint !== 'failed')
    throw new CliError(`gpualert job report: --checkpoint expects ok or failed (got "${checkpoint}")`);
  const stepTime = options.stepTime === undefined ? undefined : Number(options.stepTime);
  if (stepTime !== undefined && !(Number.isFinite(stepTime) && stepTime >= 0))
    throw new CliError(`gpualert job report: --step-time expects milliseconds (got "${String(options.stepTime)}")`);
  if (step === undefined && checkpoint === undefined) throw new CliError('gpualert job report: give --step N, --checkpoint ok|failed, or both');
  const settings = loadSettings(JOB_REPORT_SETTINGS, {}, env);
  const token = settings.intakeToken;
  if (!token) throw new CliError("gpualert job report: set GPUALERT_INTAKE_TOKEN to the intake's token");
  const base = settings.intakeUrl;
  let url: URL;
  try {
    url = new URL('/v1/job-events', base);
  } catch {
    throw new CliError(`gpualert job report: GPUALERT_INTAKE_URL is not a URL (got "${withoutUserinfo(base).slice(0, 200)}")`);
  }
  // The token is the credential; a password in the URL would be sent as Basic auth and end up in logs and `ps`.
  if (url.username !== '' || url.password !== '') {
    throw new CliError(
      `gpualert job report: GPUALERT_INTAKE_URL carries a user name or password (${url.protocol}//…@${url.host}); give the intake's token in GPUALERT_INTAKE_TOKEN instead`,
    );
  }
  const event = {
    host: stringOption(options, 'host') ?? hostname(),
    ...context,
    kind: checkpoint ? 'checkpoint' : 'step',
    ...(step !== undefined ? { step } : {}),
    ...(checkpoint ? { checkpoint } : {}),
    ...(stepTime !== undefined ? { step_time_ms: stepTime } : {}),
    message: options.message === undefined ? '' : String(options.message),
  };
  const header = settings.intakeTokenHeader.toLowerCase();
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      body: JSON.stringify(event),
      signal: AbortSignal.timeout(REPORT_TIMEOUT_MS),
      headers: { 'content-type': 'application/json', [header]: header === 'authorization' ? `Bearer ${token}` : token },
    });
  } catch (error) {
    // Fetch refuses some ports outright (9, 1, 6000…: the standard's "bad ports"): no retry helps.
    if (error instanceof Error && error.cause instanceof Error && error.cause.message === 'bad port') {
      throw new CliError(
        `gpualert job report: GPUALERT_INTAKE_URL's port ${url.port} is one HTTP clients refuse to use (the fetch standard's "bad ports"); run the intake on another port`,
      );
    }
    // The intake is away (refused, unresolved, no answer in time): try again later, exit 75 with the retriable code.
    throw new GpualertError('GA-INFRA-UNAVAILABLE', `gpualert job report: cannot reach the intake at ${url.origin}: ${whyUnreachable(error)}`, {
      cause: error,
    });
  }
  const answer = await response.text();
  if (response.status === 202) {
    process.stdout.write(`${answer}\n`);
    return EXIT.ok;
  }
  let message = answer.slice(0, 500);
  try {
    const doc: unknown = JSON.parse(answer);
    const said = typeof doc === 'object' && doc !== null && 'message' in doc ? doc.message : undefined;
    message = String(said ?? message);
  } catch {
    // not JSON: the first 500 characters as they are
  }
  const what = `gpualert job report: the intake answered ${response.status}: ${message.replace(/\s+/g, ' ').slice(0, 500)}`;
  // A 5xx (Kafka away behind the intake) is worth retrying, with the retriable code; a 4xx is this report's fault.
  if (response.status >= 500) throw new GpualertError('GA-INFRA-UNAVAILABLE', what);
  throw new CliError(what, EXIT.failed);
}

/** Why fetch failed, in the system's words: `ECONNREFUSED`, `ENOTFOUND`, `no answer in 10 s`… never the request's headers. */
function whyUnreachable(error: unknown): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return `no answer in ${REPORT_TIMEOUT_MS / 1000} s`;
  // undici's TypeError('fetch failed') carries the socket's error as its cause (an AggregateError for several addresses).
  let cause: unknown = error instanceof Error ? error.cause : undefined;
  let said: string | undefined;
  for (let depth = 0; depth < 4 && cause instanceof Error; depth += 1) {
    const code = errnoCode(cause);
    if (typeof code === 'string') return code;
    said ??= cause.message || undefined;
    cause = cause instanceof AggregateError ? cause.errors[0] : cause.cause;
  }
  const text = said ?? (error instanceof Error ? `${error.name}: ${error.message}` : 'unknown error');
  return text.replace(/\s+/g, ' ').slice(0, 200);
}

/** A URL as text with any `user:password@` taken out, for an error message. */
function withoutUserinfo(text: string): string {
  // Up to the last `@`: a password may hold `/` or `@` itself.
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[\s\S]*@/i, '$1…@');
}
