/**
 * `npm run build:deb`: the Debian package a GPU host installs, `dist-sea/gpualert-agent_VERSION_ARCH.deb`:
 * gpualert's single executable, the agent alone (tools/build-sea.ts `--agent`: no engine, notifier,
 * console or Kubernetes client in it), as /usr/bin/gpualert, the agent's systemd unit
 * (deploy/systemd/gpualert-agent.service, its ExecStart pointed there), its settings file
 * /etc/gpualert/gpualert-agent.env (a conffile: an upgrade keeps the operator's), and a man page
 * made from the command's own --help. No maintainer scripts: `systemctl enable --now
 * gpualert-agent` is the operator's step, as with the npm package.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync, copyFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { buildSea, SEA_BINARY, SEA_DIR } from './build-sea.ts';
import { serviceEnv } from './service-env.ts';

const ROOT = resolve(import.meta.dirname, '..');
export const DEB_PACKAGE = 'gpualert-agent';
const UNIT = 'gpualert-agent.service';

const SETTINGS = `# gpualert agent's settings, read by systemd before the service starts (EnvironmentFile of
# ${UNIT}). What every gpualert unit of this host shares can go in /etc/gpualert/gpualert.env.
# Every setting is also a flag of \`gpualert agent\` (man gpualert-agent); \`gpualert config show\`
# prints where each value came from.

# The Kafka brokers the agent publishes to (required).
#KAFKA_BROKERS=kafka-1:9092,kafka-2:9092,kafka-3:9092
# This machine's id in every envelope (default: the hostname).
#GPUALERT_HOST=
# /healthz and /metrics.
#GPUALERT_AGENT_PORT=9469
#GPUALERT_LOG_FORMAT=json
`;

function run(command: string, args: readonly string[]): string {
  const result = spawnSync(command, args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${(result.stderr || result.stdout).trim().split('\n').pop() ?? ''}`);
  return result.stdout;
}

/** roff with nothing a line could start as a request, nor a backslash escape, from the help's text. */
function roff(text: string): string {
  return text
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    .replace(/^([.'])/gm, '\\&$1');
}

/**
 * The man page from `gpualert agent --help` (commander's layout: options two spaces in, their
 * descriptions after a run of spaces, continued on lines indented further), so it never says
 * other than the command does.
 */
export function manPage(help: string, version: string): string {
  const lines = help.split('\n');
  const about = lines.find((l, i) => i > 0 && l.trim() !== '' && !l.startsWith('Usage')) ?? '';
  const options: { flag: string; text: string }[] = [];
  for (const line of lines.slice(lines.findIndex((l) => l.startsWith('Options:')) + 1)) {
    const option = /^ {2}(-\S.*?)(?: {2,}(.*))?$/.exec(line);
    if (option) options.push({ flag: option[1] ?? '', text: option[2] ?? '' });
    else if (line.trim() !== '' && options.length > 0) {
      const last = options[options.length - 1];
      if (last) last.text = `${last.text} ${line.trim()}`.trim();
    }
  }
  return [
    `.TH GPUALERT\\-AGENT 1 "" "gpualert ${version}" "gpualert"`,
    '.SH NAME',
    `gpualert\\-agent \\- ${roff(about.trim())}`,
    '.SH SYNOPSIS',
    '.B gpualert agent',
    '[\\fIoptions\\fR]',
    '.SH DESCRIPTION',
    "Runs on every GPU host: scrapes the GPUs (nvidia\\-smi or a DCGM exporter), follows the kernel log for Xid, NVLink, PCIe and ECC events, watches the inventory and the provider's maintenance notices, and publishes each to Kafka as gpualert envelopes.",
    'It answers /healthz and /metrics on its port.',
    'Every option is also a setting in the environment; the systemd unit reads them from the files below.',
    '.SH OPTIONS',
    ...options.flatMap((o) => ['.TP', `.B ${roff(o.flag)}`, roff(o.text)]),
    '.SH FILES',
    '.TP',
    '.I /etc/gpualert/gpualert.env',
    'settings every gpualert unit of the host shares',
    '.TP',
    '.I /etc/gpualert/gpualert\\-agent.env',
    "the agent's own settings",
    '.TP',
    `.I /lib/systemd/system/${UNIT.replace(/-/g, '\\-')}`,
    'the unit: systemctl enable \\-\\-now gpualert\\-agent',
    '.SH SEE ALSO',
    '.BR systemctl (1),',
    '.BR journalctl (1)',
    '',
  ].join('\n');
}

/**
 * V8's young generation at 1 MiB for the agent alone (tools/service-env.ts): it allocates little (a
 * sample every 10 s), and Node 24's default semi-space holds about 13 MiB more resident for nothing.
 * The unit carries it (deploy/systemd/gpualert-agent.service).
 */
export const AGENT_NODE_OPTIONS: string = serviceEnv('agent').NODE_OPTIONS ?? '';

/** The agent's unit as the package installs it: the executable in /usr/bin, its documentation the man page. */
export function packagedUnit(unit: string): string {
  return unit
    .replace(/^ExecStart=\/usr\/local\/bin\/gpualert (.*)$/m, 'ExecStart=/usr/bin/gpualert $1')
    .replace(/^Documentation=.*$/m, 'Documentation=man:gpualert-agent(1)')
    .replace(/^# Install: .*$/m, '# Installed by the gpualert-agent Debian package (tools/build-deb.ts).');
}

export async function buildDeb(options: { sea?: boolean } = {}): Promise<{ deb: string; installedKiB: number }> {
  const started = Date.now();
  // The modes below as written, whatever the builder's umask (077 would leave DEBIAN/ 0700, which dpkg-deb refuses).
  process.umask(0o022);
  if (options.sea !== false) await buildSea({ agentOnly: true });
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; license: string; description: string };
  const arch = run('dpkg', ['--print-architecture']).trim();
  const tree = join(SEA_DIR, 'deb');
  rmSync(tree, { recursive: true, force: true });
  const dirs = ['DEBIAN', 'usr/bin', 'lib/systemd/system', 'etc/gpualert', 'usr/share/man/man1', `usr/share/doc/${DEB_PACKAGE}`];
  for (const d of dirs) mkdirSync(join(tree, d), { recursive: true, mode: 0o755 });
  copyFileSync(SEA_BINARY, join(tree, 'usr/bin/gpualert'));
  chmodSync(join(tree, 'usr/bin/gpualert'), 0o755);
  writeFileSync(join(tree, 'lib/systemd/system', UNIT), packagedUnit(readFileSync(join(ROOT, 'deploy/systemd', UNIT), 'utf8')), { mode: 0o644 });
  writeFileSync(join(tree, 'etc/gpualert/gpualert-agent.env'), SETTINGS, { mode: 0o600 });
  const help = run(SEA_BINARY, ['agent', '--help']);
  writeFileSync(join(tree, 'usr/share/man/man1/gpualert-agent.1.gz'), gzipSync(manPage(help, pkg.version), { level: 9 }), { mode: 0o644 });
  writeFileSync(
    join(tree, `usr/share/doc/${DEB_PACKAGE}/copyright`),
    `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\nUpstream-Name: gpualert\n\nFiles: *\nLicense: ${pkg.license}\n Bundles Node.js (MIT) and the npm packages listed in gpualert's package-lock.json, each under its own license.\n`,
    { mode: 0o644 },
  );
  const installedKiB = Math.ceil(
    [
      'usr/bin/gpualert',
      `lib/systemd/system/${UNIT}`,
      'etc/gpualert/gpualert-agent.env',
      'usr/share/man/man1/gpualert-agent.1.gz',
      `usr/share/doc/${DEB_PACKAGE}/copyright`,
    ].reduce((sum, f) => sum + statSync(join(tree, f)).size, 0) / 1024,
  );
  writeFileSync(
    join(tree, 'DEBIAN/control'),
    [
      `Package: ${DEB_PACKAGE}`,
      `Version: ${pkg.version}`,
      `Architecture: ${arch}`,
      'Maintainer: gpualert developers <gpualert@localhost>',
      `Installed-Size: ${installedKiB}`,
      'Depends: libc6 (>= 2.28), libstdc++6',
      'Section: admin',
      'Priority: optional',
      `Description: gpualert agent: every collector a GPU host needs, in one file`,
      ` ${pkg.description}`,
      ' This package is the agent of a GPU host: one executable (Node.js inside), its',
      ' systemd unit, its settings file and its man page.',
      '',
    ].join('\n'),
  );
  writeFileSync(join(tree, 'DEBIAN/conffiles'), '/etc/gpualert/gpualert-agent.env\n');
  const deb = join(SEA_DIR, `${DEB_PACKAGE}_${pkg.version}_${arch}.deb`);
  // gzip, fast: xz on a 125 MB executable takes minutes on two cores for a few MB less.
  run('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z6', '--build', tree, deb]);
  rmSync(tree, { recursive: true, force: true });
  process.stderr.write(
    `${deb}: ${(statSync(deb).size / 1024 / 1024).toFixed(1)} MiB, installed ${(installedKiB / 1024).toFixed(1)} MiB, in ${Date.now() - started} ms\n`,
  );
  return { deb, installedKiB };
}

if (import.meta.filename === process.argv[1]) await buildDeb();
