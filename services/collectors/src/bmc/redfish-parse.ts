import {
  MAX_BMC_MESSAGE_LENGTH,
  MAX_HOST_SENSOR_NAME_LENGTH,
  type BmcEventData,
  type BmcHealth,
  type HostFan,
  type HostPsu,
  type HostRedundancy,
  type HostTemperature,
  type Severity,
} from '@gpualert/schema';
import { locationOfRedfish } from './sensor-location.ts';

/**
 * Redfish documents → the host sample's pieces. Pure: each function takes one parsed JSON
 * document (Thermal, ThermalSubsystem's Fan, PowerSubsystem's PowerSupply, LogEntry…) and never
 * trusts its shape: a field of the wrong type is as good as absent.
 */

export type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** A name fit for the sample: control characters dropped, at most the bound. */
export function sensorName(...candidates: unknown[]): string {
  for (const c of candidates) {
    const s = typeof c === 'string' ? c.replace(/[\u0000-\u001f\u007f-\u009f]/g, '').trim() : '';
    if (s) return s.slice(0, MAX_HOST_SENSOR_NAME_LENGTH);
  }
  return 'unnamed';
}

/** Status.Health (OK, Warning, Critical) on gpualert's scale. */
export function healthOf(status: unknown, field: 'Health' | 'HealthRollup' = 'Health'): BmcHealth {
  if (!isObject(status)) return 'unknown';
  switch (str(status[field])) {
    case 'OK':
      return 'ok';
    case 'Warning':
      return 'warning';
    case 'Critical':
      return 'critical';
    default:
      return 'unknown';
  }
}

/** Status.State: Absent and the *Offline states say the part is not serving. */
function stateOf(status: unknown): HostPsu['state'] {
  if (!isObject(status)) return 'unknown';
  const state = str(status.State);
  if (state === 'Enabled') return 'enabled';
  if (state === 'Absent') return 'absent';
  if (state === 'Disabled' || state === 'UnavailableOffline' || state === 'StandbyOffline' || state === 'Deferring') return 'disabled';
  return 'unknown';
}

const HEALTH_RANK: Record<BmcHealth, number> = { unknown: 0, ok: 1, warning: 2, critical: 3 };

export function worstHealth(healths: readonly BmcHealth[]): BmcHealth {
  return healths.reduce<BmcHealth>((worst, h) => (HEALTH_RANK[h] > HEALTH_RANK[worst] ? h : worst), 'unknown');
}

/** Where a temperature is read, from Redfish's PhysicalContext or the sensor's name (sensor-location.ts). */
export function temperatureLocation(context: unknown, name: string): HostTemperature['location'] {
  return locationOfRedfish(context, name);
}

/** A sensor the BMC says is not there or switched off (Status.State Absent/Disabled) reads nothing. */
function disabled(status: unknown): boolean {
  return isObject(status) && (status.State === 'Absent' || status.State === 'Disabled');
}

/** The legacy `Thermal` resource: its Fans[] and Temperatures[] arrays, and fan Redundancy[]. */
export function thermalLegacy(doc: Json): { fans: HostFan[]; temperatures: HostTemperature[]; redundancy: HostRedundancy[] } {
  const fans: HostFan[] = [];
  for (const fan of Array.isArray(doc.Fans) ? doc.Fans : []) {
    if (!isObject(fan) || disabled(fan.Status)) continue;
    const units = str(fan.ReadingUnits);
    const reading = num(fan.Reading) ?? num(fan.ReadingRPM);
    fans.push({
      name: sensorName(fan.Name, fan.FanName, fan.MemberId),
      rpm: units === 'Percent' ? null : reading,
      ...(units === 'Percent' ? { percent: reading } : {}),
      health: healthOf(fan.Status),
    });
  }
  const temperatures: HostTemperature[] = [];
  for (const t of Array.isArray(doc.Temperatures) ? doc.Temperatures : []) {
    if (!isObject(t) || disabled(t.Status)) continue;
    const name = sensorName(t.Name, t.MemberId);
    temperatures.push({ name, celsius: num(t.ReadingCelsius), location: temperatureLocation(t.PhysicalContext, name), health: healthOf(t.Status) });
  }
  return { fans, temperatures, redundancy: redundancyLegacy(doc.Redundancy) };
}

/** Legacy Redundancy[] (Thermal and Power): Status.Health OK is full; Warning or Critical, lost. */
export function redundancyLegacy(list: unknown): HostRedundancy[] {
  const out: HostRedundancy[] = [];
  for (const r of Array.isArray(list) ? list : []) {
    if (!isObject(r) || disabled(r.Status)) continue;
    const health = healthOf(r.Status);
    out.push({ name: sensorName(r.Name, r.MemberId), state: redundancyState(health), health });
  }
  return out;
}

function redundancyState(health: BmcHealth): HostRedundancy['state'] {
  if (health === 'ok') return 'full';
  if (health === 'unknown') return 'unknown';
  return 'lost';
}

/**
 * The newer subsystems' redundancy groups (FanRedundancy[], PowerSupplyRedundancy[]). A group whose
 * members are fewer than MinNeededInGroup + 1 enabled and healthy has lost its spare, whatever its
 * own Status says: `members` maps a member's @odata.id to whether it is serving.
 */
export function redundancyGroups(list: unknown, label: string, members: ReadonlyMap<string, boolean>): HostRedundancy[] {
  const out: HostRedundancy[] = [];
  let i = 0;
  for (const g of Array.isArray(list) ? list : []) {
    i += 1;
    if (!isObject(g) || disabled(g.Status)) continue;
    let health = healthOf(g.Status);
    // Redfish's own word for a group running without its spare.
    if (isObject(g.Status) && g.Status.State === 'UnavailableOffline') health = worstHealth([health, 'warning']);
    const group = Array.isArray(g.RedundancyGroup) ? g.RedundancyGroup : [];
    const needed = num(g.MinNeededInGroup);
    if (needed !== null && group.length > 0) {
      const serving = group.filter((m) => isObject(m) && members.get(String(m['@odata.id'])) === true).length;
      const known = group.filter((m) => isObject(m) && members.has(String(m['@odata.id']))).length;
      if (known === group.length && serving <= needed) health = serving < needed ? 'critical' : worstHealth([health, 'warning']);
    }
    out.push({ name: sensorName(g.Name, `${label} ${i}`), state: redundancyState(health), health });
  }
  return out;
}

/** A ThermalSubsystem Fan resource. */
export function subsystemFan(doc: Json): HostFan | undefined {
  if (disabled(doc.Status)) return undefined;
  const speed = isObject(doc.SpeedPercent) ? doc.SpeedPercent : {};
  return { name: sensorName(doc.Name, doc.Id), rpm: num(speed.SpeedRPM), percent: num(speed.Reading), health: healthOf(doc.Status) };
}

/** ThermalMetrics: TemperatureReadingsCelsius[] where given, else the TemperatureSummaryCelsius. */
export function thermalMetrics(doc: Json): HostTemperature[] {
  const out: HostTemperature[] = [];
  const readings = Array.isArray(doc.TemperatureReadingsCelsius) ? doc.TemperatureReadingsCelsius : [];
  for (const r of readings) {
    if (!isObject(r)) continue;
    const name = sensorName(r.DeviceName, r.DataSourceUri);
    // HPE iLO 6 gives each reading its PhysicalContext (Intake, CPU…), as the schema allows.
    out.push({ name, celsius: num(r.Reading), location: temperatureLocation(r.PhysicalContext, name), health: 'unknown' });
  }
  if (out.length > 0) return out;
  const summary = isObject(doc.TemperatureSummaryCelsius) ? doc.TemperatureSummaryCelsius : {};
  const where: Record<string, HostTemperature['location']> = { Intake: 'inlet', Ambient: 'inlet', Exhaust: 'exhaust', Internal: 'other' };
  for (const [key, location] of Object.entries(where)) {
    const r = summary[key];
    if (isObject(r)) out.push({ name: key, celsius: num(r.Reading), location, health: 'unknown' });
  }
  return out;
}

/**
 * A `Sensor` resource (a chassis' `Sensors` collection member) that reads a temperature, or
 * `undefined` for any other sensor (power, voltage, fan speed) and for one the BMC says is Absent or
 * Disabled. NVIDIA's HGX baseboard and other OpenBMC-based BMCs publish GPU and board temperatures
 * only here. A reading of `null` is kept as `null`: the sensor is there and reads nothing.
 */
export function sensorTemperature(doc: Json): HostTemperature | undefined {
  // ReadingType is optional in the schema (DMTF's own mockups leave it out of temperatures): `Cel` says it.
  const temperature = doc.ReadingType === 'Temperature' || (doc.ReadingType === undefined && doc.ReadingUnits === 'Cel');
  if (!temperature || disabled(doc.Status)) return undefined;
  const name = sensorName(doc.Name, doc.Id);
  return { name, celsius: num(doc.Reading), location: temperatureLocation(doc.PhysicalContext, name), health: healthOf(doc.Status) };
}

/** A PowerSubsystem PowerSupply, with its Metrics resource when the BMC has one. */
export function subsystemPsu(doc: Json, metrics: Json | undefined): HostPsu {
  const watts = metrics
    ? (num(isObject(metrics.OutputPowerWatts) ? metrics.OutputPowerWatts.Reading : undefined) ??
      num(isObject(metrics.InputPowerWatts) ? metrics.InputPowerWatts.Reading : undefined))
    : null;
  return { name: sensorName(doc.Name, doc.Id), health: healthOf(doc.Status), watts, state: stateOf(doc.Status) };
}

/** The legacy `Power` resource: PowerSupplies[] and Redundancy[]. */
export function powerLegacy(doc: Json): { psus: HostPsu[]; redundancy: HostRedundancy[] } {
  const psus: HostPsu[] = [];
  for (const p of Array.isArray(doc.PowerSupplies) ? doc.PowerSupplies : []) {
    if (!isObject(p)) continue;
    psus.push({
      name: sensorName(p.Name, p.MemberId),
      health: healthOf(p.Status),
      watts: num(p.LastPowerOutputWatts) ?? num(p.PowerOutputWatts) ?? num(p.PowerInputWatts),
      state: stateOf(p.Status),
    });
  }
  return { psus, redundancy: redundancyLegacy(doc.Redundancy) };
}

/** Redfish's LogEntry Severity (OK, Warning, Critical) on gpualert's four. */
function entrySeverity(v: unknown): Severity {
  if (v === 'Critical') return 'critical';
  if (v === 'Warning') return 'warning';
  return 'info';
}

/** A LogEntry (an Entries collection's member, expanded or fetched) as a `bmc.event`. */
export function logEntry(doc: Json, log: string): BmcEventData | undefined {
  const id = str(doc.Id);
  if (!id) return undefined;
  const created = str(doc.Created);
  const sensor = str(doc.SensorType) ?? (typeof doc.SensorNumber === 'number' ? `#${doc.SensorNumber}` : undefined);
  const code = str(doc.MessageId) ?? str(doc.EntryCode);
  return {
    entry_id: id.slice(0, 128),
    log: log.slice(0, 256),
    ...(created && !Number.isNaN(Date.parse(created)) && /T/.test(created) ? { created } : {}),
    severity: entrySeverity(doc.Severity),
    message: (str(doc.Message) ?? str(doc.Name) ?? '').slice(0, MAX_BMC_MESSAGE_LENGTH),
    ...(sensor ? { sensor: sensor.slice(0, MAX_HOST_SENSOR_NAME_LENGTH) } : {}),
    ...(code ? { code: code.slice(0, 256) } : {}),
  };
}

/** The `@odata.id`s of a collection's Members, at most `max`. */
export function memberIds(doc: Json, max: number): string[] {
  const out: string[] = [];
  for (const m of Array.isArray(doc.Members) ? doc.Members : []) {
    if (out.length >= max) break;
    if (isObject(m) && typeof m['@odata.id'] === 'string') out.push(m['@odata.id']);
  }
  return out;
}

/** A navigation link's target (`{"@odata.id": …}`), if the property is one. */
export function link(doc: Json, property: string): string | undefined {
  const v = doc[property];
  return isObject(v) && typeof v['@odata.id'] === 'string' ? v['@odata.id'] : undefined;
}
