/**
 * What `npm test` needs besides npm's own packages, provisioned before the first test runs: Java
 * and Maven (Apache Kafka's jars), `redis-server` (the fault suite starts Redis servers of its
 * own) and Chromium (the timeline's HTML is checked in a real browser). As root on Debian the
 * missing ones are installed from Debian's packages; anywhere else the run stops at once with one
 * line that names what is missing and the command that installs it.
 *
 * Debian's `prometheus` and `prometheus-alertmanager` (amtool) are unpacked into the cache, not
 * installed (test/alertmanager/debian-tool.ts); so are Debian's Slurm and MUNGE, which the remediation
 * tests start as a one-machine cluster (test/infra/slurm-cluster.ts); so are Debian's buildah, skopeo
 * and umoci, and the libraries the image's base is made of (tools/build-image.ts).
 *
 * Node 24 comes from the npm registry (tools/node24.ts). GPUALERT_NO_PROVISION=1 checks without
 * installing.
 */
import { spawnSync } from 'node:child_process';
import { DEBIAN_TOOLS, debianTool } from '../test/alertmanager/debian-tool.ts';
import { kafkaClasspath, kafkaVersion } from '../test/infra/kafka-broker.ts';
import { SLURM_PACKAGES, slurmRoot } from '../test/infra/slurm-cluster.ts';
import { BASE_PACKAGES, CONTAINER_TOOL_PACKAGES } from './build-image.ts';
import { debianRoot } from './debian-root.ts';
import { node24Binary, NODE24_VERSION } from './node24.ts';

interface Requirement {
  /** What a person would install, in Debian's terms. */
  readonly debianPackage: string;
  /** What the test run uses it for. */
  readonly purpose: string;
  readonly present: () => boolean;
}

function onPath(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/** `java -version` prints `version "17.0.15"` (or `"1.8.0_…"` for Java 8) on stderr. */
function javaMajor(): number {
  const run = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (run.status !== 0) return 0;
  const match = /version "(\d+)(?:\.(\d+))?/.exec(run.stderr + run.stdout);
  if (!match) return 0;
  const first = Number(match[1]);
  return first === 1 ? Number(match[2] ?? 0) : first;
}

export const REQUIREMENTS: readonly Requirement[] = [
  { debianPackage: 'openjdk-17-jre-headless', purpose: 'runs Apache Kafka for the tests', present: () => javaMajor() >= 17 },
  { debianPackage: 'maven', purpose: "resolves Apache Kafka's jars", present: () => onPath('mvn') },
  { debianPackage: 'redis-server', purpose: 'the fault suite starts Redis servers of its own', present: () => onPath('redis-server') },
  { debianPackage: 'chromium', purpose: "checks the timeline's HTML in a real browser", present: () => onPath('chromium') || onPath('chromium-browser') },
  { debianPackage: 'systemd', purpose: 'systemd-analyze verifies the units in deploy/systemd', present: () => onPath('systemd-analyze') },
];

function fail(line: string): never {
  process.stderr.write(`gpualert tests: ${line}\n`);
  process.exit(1);
}

function install(packages: readonly string[]): void {
  process.stderr.write(`[provision] installing from Debian's packages: ${packages.join(' ')}\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', '--no-install-recommends', ...packages],
  ]) {
    const run = spawnSync('apt-get', args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (run.status !== 0) {
      const why = (run.stderr || run.stdout).trim().split('\n').pop() ?? `exit ${run.status}`;
      fail(`apt-get ${args[0]} failed (${why}); install by hand: apt-get install ${packages.join(' ')}`);
    }
  }
}

function provision(): void {
  const missing = REQUIREMENTS.filter((r) => !r.present());
  if (missing.length > 0) {
    const names = missing.map((r) => r.debianPackage);
    const what = missing.map((r) => `${r.debianPackage} (${r.purpose})`).join(', ');
    const canInstall = process.env.GPUALERT_NO_PROVISION !== '1' && process.getuid?.() === 0 && onPath('apt-get');
    if (!canInstall) {
      const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
      fail(`missing ${what}; install with: ${sudo}apt-get install -y ${names.join(' ')}`);
    }
    install(names);
    const still = missing.filter((r) => !r.present());
    if (still.length > 0) fail(`still missing after apt-get install: ${still.map((r) => r.debianPackage).join(', ')}`);
  }
  if (process.env.KAFKA_BROKERS === undefined) {
    const started = Date.now();
    try {
      kafkaClasspath();
    } catch (error) {
      fail(`cannot resolve Apache Kafka ${kafkaVersion()}'s jars through Maven: ${(error as Error).message.split('\n')[0]}`);
    }
    if (Date.now() - started > 1_000) process.stderr.write(`[provision] Apache Kafka ${kafkaVersion()} jars cached\n`);
  }
}

/** Debian's Prometheus, Alertmanager and amtool for test/alertmanager (unpacked into the cache, not installed). */
function provisionDebianTools(): void {
  for (const { pkg, binary } of DEBIAN_TOOLS) {
    try {
      debianTool(pkg, binary);
    } catch (error) {
      fail(`cannot provision ${binary} from Debian's ${pkg} (test/alertmanager talks to it): ${(error as Error).message}`);
    }
  }
}

/** Debian's slurmctld, slurmd, the Slurm clients and munged for test/slurm-executor.test.ts (unpacked into the cache, not installed). */
function provisionSlurm(): void {
  try {
    slurmRoot();
  } catch (error) {
    fail(
      `cannot provision Slurm from Debian's ${SLURM_PACKAGES.join(', ')} (the remediation tests drain nodes of a real slurmctld): ${(error as Error).message}`,
    );
  }
}

/** Debian's buildah, skopeo and umoci, and the image base's libraries, for test/deploy/image.test.ts (unpacked into the cache, not installed). */
function provisionContainerTools(): void {
  for (const [name, packages] of [
    ['container-tools', CONTAINER_TOOL_PACKAGES],
    ['image-base', BASE_PACKAGES],
  ] as const) {
    try {
      debianRoot(name, packages);
    } catch (error) {
      fail(`cannot provision Debian's ${packages.join(', ')} (the image test builds gpualert's image with them): ${(error as Error).message}`);
    }
  }
}

provision();
provisionDebianTools();
provisionSlurm();
provisionContainerTools();
try {
  node24Binary();
} catch (error) {
  fail(`cannot fetch Node ${NODE24_VERSION} (the unit tests also run on it): ${(error as Error).message}`);
}
