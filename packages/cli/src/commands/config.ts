import type { EffectiveSetting } from '@gpualert/config';
import { CliError, EXIT } from '../cli-error.ts';
import { ALL_SETTINGS } from '../settings/all-settings.ts';
import { resolveSettings } from '../settings/command-settings.ts';

/** One line a setting: its name, its value (a secret by its length only), and where it came from or how to set it. */
export function settingsText(command: string, settings: readonly EffectiveSetting[]): string {
  const rows = settings.map((s) => {
    const from = s.where ?? (s.origin === 'default' ? 'default' : 'unset');
    const ways = [s.flag, s.env].filter((w) => w !== undefined).join(', ');
    return [s.key, s.shown ?? '-', s.where !== undefined ? from : `${from}${ways ? ` (set with ${ways})` : ''}`];
  });
  const width = (i: number) => Math.max(...rows.map((r) => r[i]?.length ?? 0));
  const [keyWidth, valueWidth] = [width(0), Math.min(width(1), 60)];
  const head = `# gpualert ${command}: the settings in effect (flags over the environment over the config file over defaults)\n`;
  return head + rows.map(([key = '', value = '', from = '']) => `${key.padEnd(keyWidth)}  ${value.padEnd(valueWidth)}  ${from}`.trimEnd()).join('\n') + '\n';
}

/**
 * `gpualert config show [--command NAME] [--format text|json]`: the settings a command would run
 * on here and now, read exactly as it reads them (the same loader, the same checks), each with
 * where it came from. A secret shows as `(set, N characters)`; a bad value is the command's own
 * GA-CONFIG-INVALID line.
 */
export async function configShow(options: Record<string, unknown>): Promise<number> {
  const command = String(options.command ?? 'up');
  const settings = ALL_SETTINGS.get(command);
  if (!settings) throw new CliError(`gpualert config show: --command must be one of ${[...ALL_SETTINGS.keys()].join(', ')} (got "${command.slice(0, 40)}")`);
  const format = String(options.format ?? 'text');
  if (format !== 'text' && format !== 'json') throw new CliError(`gpualert config show: --format must be text or json (got "${format.slice(0, 40)}")`);
  const { effective } = resolveSettings(settings, options);
  process.stdout.write(
    format === 'json'
      ? `${JSON.stringify({ command, settings: effective.map((s) => ({ setting: s.key, value: s.shown ?? null, source: s.origin, from: s.where ?? null, env: s.env ?? null, flag: s.flag ?? null, secret: s.secret })) }, null, 2)}\n`
      : settingsText(command, effective),
  );
  return EXIT.ok;
}
