import { hostname } from 'node:os';
import { ipmitoolOutputKind, parseSdr, parseSel, readIbstat, readPerfquery } from '@gpualert/collectors';
import { newEnvelope, stableId, type Envelope, type HostSampleData } from '@gpualert/schema';
import { CliError, EXIT } from '../cli-error.ts';
import { readInput } from '../read-input.ts';

const SOURCE = 'gpualert-parse/0.1.0';

/** The formats `gpualert parse` hands to this file. */
export const HOST_PARSE_FORMATS: ReadonlySet<string> = new Set(['bmc', 'ibstat', 'perfquery']);

/**
 * `gpualert parse bmc FILE` (saved `ipmitool sdr elist`, `sdr list`, `sensor` or `sel elist` output, told apart by
 * their rows), `parse ibstat FILE`, `parse perfquery FILE`: `host.sample` and `bmc.event`
 * envelopes as JSONL, by the same parsers `collect bmc` and `collect network` use.
 */
export async function parseHost(format: string, file: string, options: { host?: string }): Promise<number> {
  const host = options.host ?? hostname();
  const text = await readInput('parse', file);
  const ts = new Date().toISOString();
  const sample = (data: HostSampleData, i = 0): Envelope =>
    newEnvelope({ type: 'host.sample', id: stableId(host, file, format, i), host, source: SOURCE, ts, data });
  const envelopes: Envelope[] = [];
  const problem = (line: number, reason: string, what: string) => process.stderr.write(`gpualert parse ${format}: ${file}:${line}: ${reason}: ${what}\n`);
  switch (format) {
    case 'bmc': {
      const kind = ipmitoolOutputKind(text);
      if (kind === 'sdr') {
        const parsed = parseSdr(text);
        parsed.problems.forEach((p) => problem(p.line, p.reason, p.text));
        envelopes.push(sample(parsed.sample));
      } else if (kind === 'sel') {
        const parsed = parseSel(text);
        parsed.problems.forEach((p) => problem(p.line, p.reason, p.text));
        for (const data of parsed.entries) {
          envelopes.push(
            newEnvelope({
              type: 'bmc.event',
              id: stableId(host, 'sel', data.entry_id, data.created ?? data.message),
              host,
              source: SOURCE,
              ts: data.created ?? ts,
              data,
            }),
          );
        }
      } else {
        throw new CliError(`gpualert parse bmc: ${file} is none of \`ipmitool sdr elist\`, \`sdr list\`, \`sensor\` or \`sel elist\` output`);
      }
      break;
    }
    case 'ibstat': {
      const { ports, problems } = readIbstat(text);
      problems.forEach((p) => problem(p.line, p.reason, p.text));
      if (ports.length === 0) throw new CliError(`gpualert parse ibstat: no "Port N:" blocks in ${file}`);
      envelopes.push(sample({ origin: 'ibstat', ib_ports: ports }));
      break;
    }
    case 'perfquery': {
      const parsed = readPerfquery(text);
      parsed.problems.forEach((p) => problem(p.line, p.reason, p.text));
      if (Object.keys(parsed.counters).length === 0) throw new CliError(`gpualert parse perfquery: no counters in ${file}`);
      // perfquery names a LID, not an HCA: the port is reported as `lid-N`.
      envelopes.push(
        sample({
          origin: 'perfquery',
          ib_ports: [
            {
              device: `lid-${parsed.lid ?? 0}`,
              port: parsed.port ?? 1,
              state: 'unknown',
              phys_state: 'unknown',
              rate_gbps: null,
              link_layer: 'infiniband',
              counters: parsed.counters,
            },
          ],
        }),
      );
      break;
    }
    default:
      throw new CliError(`gpualert parse: unknown format "${format}"`);
  }
  for (const envelope of envelopes) process.stdout.write(`${JSON.stringify(envelope)}\n`);
  return EXIT.ok;
}
