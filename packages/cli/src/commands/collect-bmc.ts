import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import {
  DEFAULT_IPMITOOL_MAX_OUTPUT_BYTES,
  DEFAULT_REDFISH_POLL_LIMITS,
  ipmitoolSecretOption,
  ipmitoolSource,
  pollDeadlineMs,
  redactUserinfo,
  redfishSource,
  startBmcCollector,
  type BmcCredentials,
  type BmcTarget,
} from '@gpualert/collectors';
import { isHostName } from '@gpualert/schema';
import { CliError, errnoCode } from '../cli-error.ts';
import { parseDuration } from '../duration.ts';
import { runService } from '../run-service.ts';
import { loadSettings } from '../settings/command-settings.ts';
import { BMC_SETTINGS } from '../settings/collector-settings.ts';
import { stringOption, stringListOption } from '../option-values.ts';

type Options = Record<string, unknown>;

/** BMCs one process polls: the bench keeps 1,000 on 30 s; 10,000 bounds a targets file gone wrong. */
export const MAX_BMC_TARGETS = 10_000;
/** A Redfish document larger than this is not a BMC's (the biggest, an expanded SEL, is well under). */
const MAX_REDFISH_BODY_BYTES = 4 * 1024 * 1024;

function fail(message: string): never {
  throw new CliError(`gpualert collect bmc: ${message}`);
}

export function bmcLabels(options: Options, command = 'collect bmc'): Record<string, string> {
  const labels = Object.create(null) as Record<string, string>;
  for (const pair of stringListOption(options, 'label') ?? []) {
    const [key, ...rest] = pair.split('=');
    if (!key || rest.length === 0) throw new CliError(`gpualert ${command}: --label expects key=value (got "${pair}")`);
    labels[key] = rest.join('=');
  }
  return labels;
}

/**
 * Credentials from GPUALERT_BMC_USERNAME / GPUALERT_BMC_PASSWORD, or a file (`--credentials-file`,
 * GPUALERT_BMC_CREDENTIALS_FILE) holding `username=…` and `password=…` lines or a JSON object.
 * Never from the command line: arguments are visible to every user of the machine.
 */
export function bmcCredentials(settings: {
  credentialsFile?: string | undefined;
  bmcUsername?: string | undefined;
  bmcPassword?: string | undefined;
}): BmcCredentials | undefined {
  const file = settings.credentialsFile;
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      fail(`cannot read the credentials file ${file}: ${errnoCode(error) ?? 'error'}`);
    }
    let username: unknown;
    let password: unknown;
    try {
      const doc: unknown = JSON.parse(text);
      if (typeof doc === 'object' && doc !== null) {
        username = 'username' in doc ? doc.username : undefined;
        password = 'password' in doc ? doc.password : undefined;
      }
    } catch {
      for (const line of text.split('\n')) {
        const m = /^\s*(username|password)\s*[=:]\s*(.*?)\s*$/.exec(line);
        if (m?.[1] === 'username') username = m[2];
        if (m?.[1] === 'password') password = m[2];
      }
    }
    // The message names the file and the field, never a value.
    if (typeof username !== 'string' || !username) fail(`${file}: no username (a "username=…" line or a JSON "username")`);
    if (typeof password !== 'string') fail(`${file}: no password (a "password=…" line or a JSON "password")`);
    return { username, password };
  }
  const username = settings.bmcUsername;
  if (!username) return undefined;
  return { username, password: settings.bmcPassword ?? '' };
}

/** `HOST URL` per line (`#` comments): one process, many BMCs. */
export function readTargets(file: string): { host: string; url: string }[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    fail(`cannot read --targets ${file}: ${errnoCode(error) ?? 'error'}`);
  }
  const targets: { host: string; url: string }[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (!line) return;
    const [host, url, ...rest] = line.split(/\s+/);
    if (!host || !url || rest.length > 0 || !isHostName(host) || !/^https?:\/\//.test(url)) {
      fail(`${file}:${i + 1}: expected "HOST https://BMC" (got "${redactUserinfo(line.slice(0, 120))}")`);
    }
    if (targets.length >= MAX_BMC_TARGETS) fail(`${file}: more than ${MAX_BMC_TARGETS} BMCs`);
    targets.push({ host, url });
  });
  if (targets.length === 0) fail(`${file}: no BMCs`);
  return targets;
}

/** `gpualert collect bmc --redfish URL | --targets FILE | --ipmitool`. */
export async function collectBmc(options: Options): Promise<number> {
  const modes = [options.redfish, options.targets, options.ipmitool].filter(Boolean).length;
  if (modes !== 1) fail('give one of --redfish URL, --targets FILE or --ipmitool');
  const settings = loadSettings(BMC_SETTINGS, options);
  const intervalMs = parseDuration('interval', String(options.interval));
  const timeoutMs = parseDuration('timeout', String(options.timeout));
  const host = stringOption(options, 'host') ?? hostname();
  const labels = bmcLabels(options);
  const concurrency = Number(options.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1_024) fail(`--concurrency must be 1 to 1024 (got "${String(options.concurrency)}")`);

  let targets: BmcTarget[];
  if (options.ipmitool) {
    const args = String(options.ipmitoolArgs ?? '')
      .split(/\s+/)
      .filter(Boolean);
    const secret = ipmitoolSecretOption(args);
    if (secret?.what === 'the password') fail(`--ipmitool-args: ${secret.option} puts the password where \`ps\` shows it; use -E (IPMI_PASSWORD) or -f FILE`);
    if (secret) fail(`--ipmitool-args: ${secret.option} puts a key where \`ps\` shows it; use -K (IPMI_KGKEY)`);
    targets = [
      {
        host,
        source: ipmitoolSource({ binary: String(options.ipmitoolPath), args, timeoutMs, maxOutputBytes: DEFAULT_IPMITOOL_MAX_OUTPUT_BYTES }),
      },
    ];
  } else {
    const auth = String(options.auth);
    if (auth !== 'session' && auth !== 'basic' && auth !== 'none') fail(`--auth must be session, basic or none (got "${auth}")`);
    const credentials = bmcCredentials(settings);
    if (auth !== 'none' && !credentials) fail(`--auth ${auth} needs GPUALERT_BMC_USERNAME and GPUALERT_BMC_PASSWORD, or --credentials-file`);
    let ca: string | undefined;
    if (options.ca) {
      try {
        ca = readFileSync(String(options.ca), 'utf8');
      } catch (error) {
        fail(`cannot read --ca ${String(options.ca)}: ${errnoCode(error) ?? 'error'}`);
      }
    }
    const tls = { ...(ca ? { ca } : {}), ...(options.fingerprint ? { fingerprint256: String(options.fingerprint) } : {}) };
    const list = options.targets ? readTargets(String(options.targets)) : [{ host, url: String(options.redfish) }];
    const insecureHttp = options.insecureHttp === true;
    if (auth !== 'none' && !insecureHttp) {
      const plain = list.find((t) => /^http:\/\//i.test(t.url));
      if (plain) {
        fail(
          `${options.targets ? `BMC ${plain.host}: ` : ''}--auth ${auth} over ${redactUserinfo(plain.url.slice(0, 200))} sends the credentials in clear: use https://, or give --insecure-http to allow it`,
        );
      }
    }
    const limits = { ...DEFAULT_REDFISH_POLL_LIMITS, deadlineMs: pollDeadlineMs(intervalMs, timeoutMs) };
    try {
      targets = list.map((t) => ({
        host: t.host,
        source: redfishSource(
          {
            url: t.url,
            auth,
            ...(credentials ? { credentials } : {}),
            tls,
            timeoutMs,
            maxBodyBytes: MAX_REDFISH_BODY_BYTES,
            maxSockets: 2,
            insecureHttp,
          },
          limits,
        ),
      }));
    } catch (error) {
      fail(redactUserinfo(error instanceof Error ? error.message : String(error)));
    }
  }
  return runService('collector-bmc', settings, async ({ bus, store }, log) => {
    log.info({ bmcs: targets.length, origin: targets[0]?.source.origin, interval_ms: intervalMs }, 'bmc_collector_started');
    return startBmcCollector({ bus, store, targets, intervalMs, log, labels, concurrency });
  });
}
