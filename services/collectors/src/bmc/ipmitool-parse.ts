import {
  MAX_BMC_MESSAGE_LENGTH,
  MAX_FANS_PER_SAMPLE,
  MAX_PSUS_PER_SAMPLE,
  MAX_REDUNDANCY_GROUPS,
  MAX_TEMPERATURES_PER_SAMPLE,
  type BmcEventData,
  type BmcHealth,
  type HostFan,
  type HostPsu,
  type HostRedundancy,
  type HostSampleData,
  type HostTemperature,
  type Severity,
} from '@gpualert/schema';
import { sensorName, worstHealth } from './redfish-parse.ts';
import { locationOfIpmi } from './sensor-location.ts';

/**
 * `ipmitool sdr elist` (and `sdr elist full`, `sdr list`, `sdr list full`, `sensor`) and `ipmitool
 * sel elist` output → the host sample and BMC events. Pure; one line that is not a sensor or SEL
 * record costs that line, not the parse. What cannot be read is said once per kind (the first such
 * line, and how many there were), not once per line.
 */

/** The most lines read from one output: a full SDR is a few hundred, a full SEL a few thousand. */
export const MAX_IPMITOOL_LINES = 20_000;

export interface IpmitoolProblem {
  /** The first line (1-based) with this problem. */
  readonly line: number;
  readonly text: string;
  /** What is wrong, and how many lines had it when more than one. */
  readonly reason: string;
}

/** Problems said once per reason: the first line that had it, and a count. */
class ProblemTally {
  private readonly byReason = new Map<string, { line: number; text: string; count: number }>();

  add(line: number, text: string, reason: string): void {
    const seen = this.byReason.get(reason);
    if (seen) seen.count += 1;
    else this.byReason.set(reason, { line, text: text.slice(0, 200), count: 1 });
  }

  list(): IpmitoolProblem[] {
    return [...this.byReason].map(([reason, p]) => ({ line: p.line, text: p.text, reason: p.count > 1 ? `${reason} (${p.count} lines)` : reason }));
  }
}

/** ipmitool's sensor status column (ok, ns, nc/lnc/unc, cr/lcr/ucr, nr/lnr/unr) on gpualert's scale; `undefined` for ns. */
function statusHealth(status: string): BmcHealth | undefined {
  const s = status.toLowerCase();
  if (s === 'ns') return undefined;
  if (s === 'ok') return 'ok';
  if (s === 'nc' || s === 'lnc' || s === 'unc') return 'warning';
  if (s === 'cr' || s === 'lcr' || s === 'ucr' || s === 'nr' || s === 'lnr' || s === 'unr') return 'critical';
  return 'unknown';
}

/** IPMI entity ids (IPMI 2.0 table 43-13) that say what a sensor belongs to (temperatures: sensor-location.ts). */
const ENTITY_POWER_SUPPLY = new Set(['10']);
const ENTITY_POWER_UNIT = new Set(['19']);
const ENTITY_FAN = new Set(['29', '30']);

interface SdrLine {
  readonly name: string;
  readonly status: string;
  /** `10.1`, or '' for `sdr list` output (no entity column). */
  readonly entity: string;
  readonly reading: string;
}

/** `ipmitool sensor`'s unit column for the readings gpualert reads. */
const SENSOR_UNITS = new Set(['degrees C', 'RPM', 'percent', 'Watts', 'Volts', 'Amps']);

type SplitRow = SdrLine | { readonly discrete: string } | undefined;

function splitSdr(text: string): SplitRow {
  const cells = text.split('|').map((c) => c.trim());
  // elist: name | id | status | entity | reading;  list: name | reading | status (the lengths are checked: no default is used)
  const [name = '', second = '', third = '', entity = '', reading = ''] = cells;
  if (cells.length === 5 && /^[0-9a-f]{2}h$/i.test(second)) return { name, status: third, entity, reading };
  if (cells.length === 3 && /^[a-z]{2,3}$/.test(third)) return { name, status: third, entity: '', reading: second };
  // sensor: name | reading | unit | status | lnr | lcr | lnc | unc | ucr | unr
  if (cells.length === 10) {
    const status = entity;
    if (third === 'discrete') return { discrete: name }; // its reading and status are raw bits (0x1, 0x0180) or na
    if (second === 'na') return { name, status: 'ns', entity: '', reading: 'No Reading' };
    if (/^-?\d+(?:\.\d+)?$/.test(second) && SENSOR_UNITS.has(third) && /^[a-z]{2,3}$/.test(status)) {
      return { name, status, entity: '', reading: `${second} ${third}` };
    }
  }
  return undefined;
}

const NUMBER = '(-?\\d+(?:\\.\\d+)?)';
const RPM = new RegExp(`^${NUMBER} RPM\\b`);
const PERCENT = new RegExp(`^${NUMBER} percent\\b`);
const CELSIUS = new RegExp(`^${NUMBER} degrees C\\b`);
const WATTS = new RegExp(`^${NUMBER} Watts\\b`);

function redundancyOf(reading: string, health: BmcHealth): Pick<HostRedundancy, 'state' | 'health'> | undefined {
  if (/Fully Redundant/i.test(reading)) return { state: 'full', health };
  if (/Insufficient Resources/i.test(reading)) return { state: 'lost', health: 'critical' };
  if (/Redundancy Lost|Non-Redundant|Redundancy Degraded/i.test(reading)) return { state: 'lost', health: worstHealth([health, 'warning']) };
  return undefined;
}

/** A PSU's failure words in a discrete reading ("0 Watts, Presence detected, Failure detected"). */
const PSU_FAILED = /Failure detected|AC lost|input lost|Predictive failure|Config(?:uration)? error/i;

/** `ipmitool sdr elist` (or `sdr list`) → fans, temperatures, PSUs and redundancy. */
export function parseSdr(text: string): { sample: HostSampleData; problems: IpmitoolProblem[] } {
  const fans: HostFan[] = [];
  const temperatures: HostTemperature[] = [];
  const fanRedundancy: HostRedundancy[] = [];
  const psuRedundancy: HostRedundancy[] = [];
  const problems = new ProblemTally();
  // One PSU per power-supply entity instance: a BMC reports presence, status and watts as separate sensors.
  const psus = new Map<string, { names: string[]; healths: BmcHealth[]; watts: number | null; state: HostPsu['state'] }>();
  const lines = text.split('\n').slice(0, MAX_IPMITOOL_LINES);
  lines.forEach((raw, i) => {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '') return;
    const sdr = splitSdr(line);
    if (!sdr) {
      problems.add(
        i + 1,
        line,
        'not an `sdr elist` row (name | id | status | entity | reading), `sdr list` row (name | reading | status) or `sensor` row (10 columns)',
      );
      return;
    }
    if ('discrete' in sdr) {
      // `ipmitool sensor` prints a discrete sensor's state as raw bits (0x0180): not decoded here.
      problems.add(i + 1, line, 'discrete sensor state printed as raw bits (0x…) not read (`sdr elist` words it)');
      return;
    }
    const health = statusHealth(sdr.status);
    if (health === undefined || /^(Disabled|No Reading|Not Readable|no reading|disabled)$/.test(sdr.reading)) return;
    if (/^0x[0-9a-f]+$/i.test(sdr.reading)) {
      // `sdr list` and `sensor` print a discrete sensor's state as raw bits: not decoded here.
      problems.add(i + 1, line, 'discrete sensor state printed as raw bits (0x…) not read (`sdr elist` words it)');
      return;
    }
    const entityId = sdr.entity.split('.')[0] ?? '';
    const name = sensorName(sdr.name);
    const redundancy = redundancyOf(sdr.reading, health);
    if (redundancy) {
      const power = ENTITY_POWER_SUPPLY.has(entityId) || ENTITY_POWER_UNIT.has(entityId) || /\bPS\b|PSU|power/i.test(name);
      (power ? psuRedundancy : fanRedundancy).push({ name, ...redundancy });
      return;
    }
    let m = RPM.exec(sdr.reading);
    if (m) {
      fans.push({ name, rpm: Number(m[1]), health });
      return;
    }
    m = PERCENT.exec(sdr.reading);
    if (m && (/fan/i.test(name) || ENTITY_FAN.has(entityId))) {
      fans.push({ name, rpm: null, percent: Number(m[1]), health });
      return;
    }
    m = CELSIUS.exec(sdr.reading);
    if (m) {
      // Thermal margins (degrees below throttling) read negative and are not temperatures.
      if (/margin|mrgn|mgn/i.test(name)) return;
      const location = locationOfIpmi(entityId, name);
      temperatures.push({ name, celsius: Number(m[1]), location, health });
      return;
    }
    const isPsu = ENTITY_POWER_SUPPLY.has(entityId) || (sdr.entity === '' && /^PS\d|PSU|power supply/i.test(name));
    if (!isPsu || /\b(Amps|Volts)\b/.test(sdr.reading)) return;
    const key = sdr.entity || name;
    const psu = psus.get(key) ?? { names: [], healths: [], watts: null, state: 'unknown' };
    psu.names.push(name);
    psu.healths.push(PSU_FAILED.test(sdr.reading) ? 'critical' : health);
    const watts = WATTS.exec(sdr.reading);
    if (watts) psu.watts = Number(watts[1]);
    if (/Presence detected|Present\b/i.test(sdr.reading) && psu.state === 'unknown') psu.state = 'enabled';
    if (/Absent|Not Present/i.test(sdr.reading)) psu.state = 'absent';
    psus.set(key, psu);
  });
  const psuList: HostPsu[] = [...psus].map(([key, p]) => ({
    name: p.names.find((n) => /\bPS|PSU|power supply/i.test(n)) ?? sensorName(`PSU ${key}`),
    health: worstHealth(p.healths),
    watts: p.watts,
    state: p.state,
  }));
  return {
    sample: {
      origin: 'ipmitool',
      fans: fans.slice(0, MAX_FANS_PER_SAMPLE),
      temperatures: temperatures.slice(0, MAX_TEMPERATURES_PER_SAMPLE),
      psus: psuList.slice(0, MAX_PSUS_PER_SAMPLE),
      fan_redundancy: fanRedundancy.slice(0, MAX_REDUNDANCY_GROUPS),
      psu_redundancy: psuRedundancy.slice(0, MAX_REDUNDANCY_GROUPS),
    },
    problems: problems.list(),
  };
}

/** What an asserted SEL event means, by its words; deasserted ones (the condition cleared) are info. */
export function selSeverity(event: string): Severity {
  if (/Uncorrectable|Machine Check|IERR|Thermal Trip|Non-recoverable|Fatal|Critical Interrupt/i.test(event)) return 'critical';
  if (/Failure detected|AC lost|input lost|Redundancy Lost|Insufficient Resources|(?<!Non-)Critical going/i.test(event)) return 'error';
  if (/Non-critical|Correctable|Non-Redundant|Sensor failure|Predictive/i.test(event)) return 'warning';
  return 'info';
}

/** `MM/DD/YYYY` and `HH:MM:SS[ AM|PM][ TZ]` → ISO-8601, as UTC (ipmitool prints the BMC's clock, which has no zone). */
function selTime(date: string, time: string): string | undefined {
  const d = /^(\d{2})\/(\d{2})\/(\d{4})$/.exec(date);
  const t = /^(\d{1,2}):(\d{2}):(\d{2})(?:\s*(AM|PM))?/i.exec(time);
  if (!d || !t) return undefined;
  let hour = Number(t[1]);
  if (t[4]?.toUpperCase() === 'PM' && hour < 12) hour += 12;
  if (t[4]?.toUpperCase() === 'AM' && hour === 12) hour = 0;
  const at = Date.UTC(Number(d[3]), Number(d[1]) - 1, Number(d[2]), hour, Number(t[2]), Number(t[3]));
  return Number.isFinite(at) ? new Date(at).toISOString() : undefined;
}

/** `ipmitool sel elist` (or `sel list`) → one `bmc.event` per record, oldest first as the BMC lists them. */
export function parseSel(text: string): { entries: BmcEventData[]; problems: IpmitoolProblem[] } {
  const entries: BmcEventData[] = [];
  const problems = new ProblemTally();
  text
    .split('\n')
    .slice(0, MAX_IPMITOOL_LINES)
    .forEach((raw, i) => {
      const line = raw.replace(/\r$/, '');
      if (line.trim() === '' || /^SEL has no entries/i.test(line.trim())) return;
      const cells = line.split('|').map((c) => c.trim());
      const [id, date = '', time = '', sensor, event = '', direction, ...extra] = cells; // six or more, checked below
      if (cells.length < 6 || !id || !/^[0-9a-f]+$/i.test(id) || (direction !== 'Asserted' && direction !== 'Deasserted')) {
        problems.add(i + 1, line, 'not a `sel elist` record (id | date | time | sensor | event | Asserted/Deasserted)');
        return;
      }
      const created = selTime(date, time);
      const asserted = direction === 'Asserted';
      const detail = extra.filter((e) => e !== '').join(' | ');
      entries.push({
        entry_id: id.toLowerCase(),
        log: 'sel',
        ...(created ? { created } : {}),
        severity: asserted ? selSeverity(event) : 'info',
        message: `${event || '(no description)'}${asserted ? '' : ' (deasserted)'}${detail ? ` — ${detail}` : ''}`.slice(0, MAX_BMC_MESSAGE_LENGTH),
        ...(sensor ? { sensor: sensorName(sensor) } : {}),
        asserted,
      });
    });
  return { entries, problems: problems.list() };
}

/** Which of the two an output is: SEL records start with an id and carry Asserted/Deasserted. */
export function ipmitoolOutputKind(text: string): 'sel' | 'sdr' | undefined {
  for (const line of text.split('\n').slice(0, 50)) {
    if (/\|\s*(Asserted|Deasserted)\s*(\||$)/.test(line)) return 'sel';
    if (splitSdr(line.replace(/\r$/, '')) !== undefined) return 'sdr';
  }
  return undefined;
}
