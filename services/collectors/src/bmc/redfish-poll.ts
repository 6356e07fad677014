import type { BmcEventData, BmcHealth, HostFan, HostPsu, HostRedundancy, HostSampleData, HostTemperature } from '@gpualert/schema';
import { MAX_FANS_PER_SAMPLE, MAX_PSUS_PER_SAMPLE, MAX_REDUNDANCY_GROUPS, MAX_TEMPERATURES_PER_SAMPLE } from '@gpualert/schema';
import { readLogEntries } from './log-entries.ts';
import { RedfishError } from './redfish-client.ts';
import {
  healthOf,
  isObject,
  link,
  memberIds,
  powerLegacy,
  redundancyGroups,
  subsystemFan,
  sensorTemperature,
  subsystemPsu,
  thermalLegacy,
  thermalMetrics,
  worstHealth,
  type Json,
} from './redfish-parse.ts';

/** What one poll may cost a BMC, whatever its documents say. */
export interface RedfishPollLimits {
  /** Members followed per collection (chassis, fans, PSUs, systems, log services). */
  readonly maxMembers: number;
  /** Requests per poll, all together: a BMC with a thousand links still costs this many. */
  readonly maxRequests: number;
  /** Requests in flight at once to this BMC. */
  readonly concurrency: number;
  /** Pages of one log's Entries read per poll (the first, a `$skip` page, @odata.nextLink pages). */
  readonly maxLogPages: number;
  /** Entries kept per log per poll: the newest. */
  readonly maxLogEntries: number;
  /**
   * The whole poll, first request to last: past it no request starts and any in flight is given
   * up, and the poll returns what it read. Without it a BMC answering just inside the request
   * timeout holds a slot of the fleet's concurrency for `maxRequests` × timeout / `concurrency`.
   */
  readonly deadlineMs: number;
}

export const DEFAULT_REDFISH_POLL_LIMITS: RedfishPollLimits = {
  maxMembers: 32,
  maxRequests: 200,
  concurrency: 2,
  maxLogPages: 4,
  maxLogEntries: 500,
  deadlineMs: 30_000,
};

/** Requests per poll that the chassis (thermal, power) can count on after the systems, managers and logs: a quarter. */
export function chassisReserve(limits: RedfishPollLimits): number {
  return Math.floor(limits.maxRequests / 4);
}

/**
 * A poll's deadline for a schedule: the interval (a poll never runs into the next one) and at most
 * three request timeouts (30 s at the defaults, 10 s timeout and 30 s interval).
 */
export function pollDeadlineMs(intervalMs: number, timeoutMs: number): number {
  return Math.max(1, Math.min(intervalMs, 3 * timeoutMs));
}

/** The one thing a poll needs from a client (the RedfishClient, or a test's fake). */
export interface RedfishGetter {
  get(path: string): Promise<Json>;
}

export interface RedfishPoll {
  readonly sample: HostSampleData;
  /** Every log entry read this poll; which are new is the caller's question (`LogCursor`). */
  readonly entries: BmcEventData[];
  /** Parts that failed while the rest was read (a missing Thermal, a log that 404s). */
  readonly problems: string[];
  /** What makes this poll less than whole in a way an operator should see: a truncated SEL, the deadline passed, the budget spent. */
  readonly incomplete: string[];
}

/** Runs `work` over `items` with at most `limit` at once, in order of the results. */
async function mapLimit<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  const queue = items.entries(); // one iterator shared by the workers: each item is taken once
  const worker = async () => {
    for (const [i, item] of queue) results[i] = await work(item);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * One poll of a BMC: the systems' health and the log services' entries of the systems and
 * managers first, then chassis thermal (ThermalSubsystem, else the legacy Thermal) and power
 * (PowerSubsystem, else Power), and a chassis' `Sensors` when its thermal resources gave no
 * temperature. The service root failing fails the poll; any other part failing
 * is a problem noted and the rest is read. Depth is fixed by the walk (root → collection → member
 * → subsystem → collection → member), breadth by `maxMembers`, the whole by `maxRequests` (a
 * quarter kept for the chassis) and `deadlineMs`.
 */
export async function pollRedfish(client: RedfishGetter, limits: RedfishPollLimits = DEFAULT_REDFISH_POLL_LIMITS): Promise<RedfishPoll> {
  let requests = 0;
  const problems: string[] = [];
  const incomplete = new Set<string>();
  const deadline = Date.now() + limits.deadlineMs;
  /** A GET within the poll's deadline and within `cap` requests of the poll's budget. */
  const getWithin =
    (cap: number) =>
    async (path: string): Promise<Json> => {
      const left = deadline - Date.now();
      if (left <= 0) {
        incomplete.add(`poll deadline of ${limits.deadlineMs} ms passed`);
        throw new RedfishError('timeout', `poll deadline of ${limits.deadlineMs} ms passed before ${path}`);
      }
      if (requests >= cap) {
        incomplete.add(`request budget of ${limits.maxRequests} spent`);
        throw new RedfishError(
          'command_failed',
          `request budget of ${cap === limits.maxRequests ? cap : `${cap} (of ${limits.maxRequests})`} per poll spent before ${path}`,
        );
      }
      requests += 1;
      return beforeDeadline(client.get(path), left, () => {
        incomplete.add(`poll deadline of ${limits.deadlineMs} ms passed`);
        return new RedfishError('timeout', `poll deadline of ${limits.deadlineMs} ms passed during ${path}`);
      });
    };
  /** A part of the poll: its failure is noted, not thrown. */
  const part = async <T>(what: string, work: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await work();
    } catch (error) {
      problems.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    }
  };
  const membersWith =
    (get: (path: string) => Promise<Json>) =>
    async (collectionPath: string | undefined): Promise<Json[]> => {
      if (!collectionPath) return [];
      const collection = await get(collectionPath);
      const ids = memberIds(collection, limits.maxMembers);
      const docs = await mapLimit(ids, limits.concurrency, (id) => part(id, () => get(id)));
      return docs.filter((d): d is Json => d !== undefined);
    };

  // The root, the systems, managers and their logs come first, within all but the chassis'
  // reserve: a log entry is an event, a missed fan reading is read again next poll, and a BMC
  // with many chassis must not spend the budget before its SEL is read.
  const logGet = getWithin(limits.maxRequests - chassisReserve(limits));
  const root = await logGet('/redfish/v1');
  const healths: BmcHealth[] = [];
  const entries: BmcEventData[] = [];
  const readLogs = async (holder: Json) => {
    for (const service of (await part(`${String(holder['@odata.id'])} LogServices`, () => membersWith(logGet)(link(holder, 'LogServices')))) ?? []) {
      const entriesPath = link(service, 'Entries');
      if (!entriesPath) continue;
      const read = await part(entriesPath, () => readLogEntries(logGet, entriesPath, limits));
      if (!read) continue;
      entries.push(...read.entries);
      problems.push(...read.problems);
      if (read.truncated) incomplete.add(`SEL truncated: ${entriesPath}`);
    }
  };
  for (const system of (await part('Systems', () => membersWith(logGet)(link(root, 'Systems')))) ?? []) {
    healths.push(healthOf(system.Status, 'HealthRollup') === 'unknown' ? healthOf(system.Status) : healthOf(system.Status, 'HealthRollup'));
    await readLogs(system);
  }
  for (const manager of (await part('Managers', () => membersWith(logGet)(link(root, 'Managers')))) ?? []) await readLogs(manager);

  const get = getWithin(limits.maxRequests);
  const members = membersWith(get);
  const fans: HostFan[] = [];
  const temperatures: HostTemperature[] = [];
  const psus: HostPsu[] = [];
  const fanRedundancy: HostRedundancy[] = [];
  const psuRedundancy: HostRedundancy[] = [];
  let thermalRead = false;
  let sensorsRead = false;
  let powerRead = false;

  for (const chassis of (await part('Chassis', () => members(link(root, 'Chassis')))) ?? []) {
    const id = typeof chassis['@odata.id'] === 'string' ? chassis['@odata.id'] : 'chassis';
    const temperaturesBefore = temperatures.length;
    const thermalSub = link(chassis, 'ThermalSubsystem');
    const thermalOld = link(chassis, 'Thermal');
    const thermalDone = thermalSub
      ? await part(`${id} ThermalSubsystem`, async () => {
          const sub = await get(thermalSub);
          const fanDocs = await members(link(sub, 'Fans'));
          const serving = new Map<string, boolean>();
          for (const doc of fanDocs) {
            const fan = subsystemFan(doc);
            if (fan) fans.push(fan);
            if (typeof doc['@odata.id'] === 'string') serving.set(doc['@odata.id'], servingNow(doc));
          }
          fanRedundancy.push(...redundancyGroups(sub.FanRedundancy, 'Fan redundancy', serving));
          const metricsPath = link(sub, 'ThermalMetrics');
          if (metricsPath) temperatures.push(...thermalMetrics(await get(metricsPath)));
          return true;
        })
      : undefined;
    if (!thermalDone && thermalOld) {
      const legacyDone = await part(`${id} Thermal`, async () => {
        const legacy = thermalLegacy(await get(thermalOld));
        fans.push(...legacy.fans);
        temperatures.push(...legacy.temperatures);
        fanRedundancy.push(...legacy.redundancy);
        return true;
      });
      thermalRead ||= legacyDone === true;
    }
    thermalRead ||= thermalDone === true;

    // A chassis whose thermal resources gave no temperature (none, or a ThermalMetrics without
    // readings) may still list them as Sensors: NVIDIA's HGX GPU chassis and OpenBMC-based BMCs do.
    const sensorsPath = link(chassis, 'Sensors');
    if (sensorsPath && temperatures.length === temperaturesBefore) {
      const read = await part(`${id} Sensors`, async () => {
        for (const doc of await members(sensorsPath)) {
          const t = sensorTemperature(doc);
          if (t) temperatures.push(t);
        }
        return true;
      });
      sensorsRead ||= read === true;
    }

    const powerSub = link(chassis, 'PowerSubsystem');
    const powerOld = link(chassis, 'Power');
    const powerDone = powerSub
      ? await part(`${id} PowerSubsystem`, async () => {
          const sub = await get(powerSub);
          const supplyDocs = await members(link(sub, 'PowerSupplies'));
          const serving = new Map<string, boolean>();
          const read = await mapLimit(supplyDocs, limits.concurrency, async (doc) => {
            const metricsPath = link(doc, 'Metrics');
            const metrics = metricsPath ? await part(metricsPath, () => get(metricsPath)) : undefined;
            return subsystemPsu(doc, metrics);
          });
          for (const doc of supplyDocs) if (typeof doc['@odata.id'] === 'string') serving.set(doc['@odata.id'], servingNow(doc));
          psus.push(...read);
          psuRedundancy.push(...redundancyGroups(sub.PowerSupplyRedundancy, 'PSU redundancy', serving));
          return true;
        })
      : undefined;
    if (!powerDone && powerOld) {
      const legacy = await part(`${id} Power`, async () => powerLegacy(await get(powerOld)));
      if (legacy) {
        psus.push(...legacy.psus);
        psuRedundancy.push(...legacy.redundancy);
      }
      powerRead ||= legacy !== undefined;
    }
    powerRead ||= powerDone === true;
  }

  const sample: HostSampleData = {
    origin: 'redfish',
    ...(thermalRead ? { fans: fans.slice(0, MAX_FANS_PER_SAMPLE) } : {}),
    ...(thermalRead || sensorsRead ? { temperatures: temperatures.slice(0, MAX_TEMPERATURES_PER_SAMPLE) } : {}),
    ...(thermalRead ? { fan_redundancy: fanRedundancy.slice(0, MAX_REDUNDANCY_GROUPS) } : {}),
    ...(powerRead ? { psus: psus.slice(0, MAX_PSUS_PER_SAMPLE), psu_redundancy: psuRedundancy.slice(0, MAX_REDUNDANCY_GROUPS) } : {}),
    ...(healths.length > 0 ? { system_health: worstHealth(healths) } : {}),
  };
  return { sample, entries, problems, incomplete: [...incomplete] };
}

/** A fan or PSU that is in service: enabled and not critical. */
function servingNow(doc: Json): boolean {
  return isObject(doc.Status) && doc.Status.State === 'Enabled' && healthOf(doc.Status) !== 'critical';
}

/** `work`, or a rejection from `expired` once `ms` pass; the work's own late result is dropped. */
async function beforeDeadline<T>(work: Promise<T>, ms: number, expired: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(expired()), ms);
  });
  // The request is bounded by its own timeout; what it says after the deadline is nobody's.
  work.catch(() => {});
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
