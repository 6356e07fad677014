import type { BmcEventData, BmcHealth, HostFan, HostPsu, HostRedundancy, HostSampleData, HostTemperature } from '@gpualert/schema';
import {
  MAX_FANS_PER_SAMPLE, MAX_PSUS_PER_SAMPLE, MAX_REDUNDANCY_GROUPS, MAX_TEMPERATURES_PER_SAMPLE,
} from '@gpualert/schema';
import { RedfishError } from './redfish-client.ts';
import {
  healthOf, isObject, link, logEntry, memberIds, powerLegacy, redundancyGroups, subsystemFan, subsystemPsu, thermalLegacy,
  thermalMetrics, worstHealth, type Json,
} from './redfish-parse.ts';

/** What one poll may cost a BMC, whatever its documents say. */
export interface RedfishPollLimits {
  /** Members followed per collection (chassis, fans, PSUs, systems, log services). */
  readonly maxMembers: number;
  /** Requests per poll, all together: a BMC with a thousand links still costs this many. */
  readonly maxRequests: number;
  /** Requests in flight at once to this BMC. */
  readonly concurrency: number;
  /** Pages of one log's Entries followed through @odata.nextLink. */
  readonly maxLogPages: number;
  /** Entries read per log per poll. */
  readonly maxLogEntries: number;
}

export const DEFAULT_REDFISH_POLL_LIMITS: RedfishPollLimits = {
  maxMembers: 32, maxRequests: 200, concurrency: 2, maxLogPages: 4, maxLogEntries: 500,
};

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
}

/** Runs `work` over `items` with at most `limit` at once, in order of the results. */
async function mapLimit<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * One poll of a BMC: chassis thermal (ThermalSubsystem, else the legacy Thermal) and power
 * (PowerSubsystem, else Power), the systems' health, and the log services' entries. The service
 * root failing fails the poll; any other part failing is a problem noted and the rest is read.
 * Depth is fixed by the walk (root → collection → member → subsystem → collection → member),
 * breadth by `maxMembers`, the whole by `maxRequests`.
 */
export async function pollRedfish(client: RedfishGetter, limits: RedfishPollLimits = DEFAULT_REDFISH_POLL_LIMITS): Promise<RedfishPoll> {
  let requests = 0;
  const problems: string[] = [];
  const get = async (path: string): Promise<Json> => {
    if (++requests > limits.maxRequests) throw new RedfishError('command_failed', `request budget of ${limits.maxRequests} per poll spent before ${path}`);
    return client.get(path);
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
  const members = async (collectionPath: string | undefined): Promise<Json[]> => {
    if (!collectionPath) return [];
    const collection = await get(collectionPath);
    const ids = memberIds(collection, limits.maxMembers);
    const docs = await mapLimit(ids, limits.concurrency, (id) => part(id, () => get(id)));
    return docs.filter((d): d is Json => d !== undefined);
  };

  const root = await get('/redfish/v1');
  const fans: HostFan[] = [];
  const temperatures: HostTemperature[] = [];
  const psus: HostPsu[] = [];
  const fanRedundancy: HostRedundancy[] = [];
  const psuRedundancy: HostRedundancy[] = [];
  let thermalRead = false;
  let powerRead = false;

  for (const chassis of (await part('Chassis', () => members(link(root, 'Chassis')))) ?? []) {
    const id = typeof chassis['@odata.id'] === 'string' ? chassis['@odata.id'] : 'chassis';
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
          supplyDocs.forEach((doc, i) => {
            if (typeof doc['@odata.id'] === 'string') serving.set(doc['@odata.id'], servingNow(doc));
            psus.push(read[i]!);
          });
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

  const healths: BmcHealth[] = [];
  const entries: BmcEventData[] = [];
  const logHolders: Json[] = [];
  for (const system of (await part('Systems', () => members(link(root, 'Systems')))) ?? []) {
    healths.push(healthOf(system.Status, 'HealthRollup') === 'unknown' ? healthOf(system.Status) : healthOf(system.Status, 'HealthRollup'));
    logHolders.push(system);
  }
  logHolders.push(...((await part('Managers', () => members(link(root, 'Managers')))) ?? []));
  for (const holder of logHolders) {
    for (const service of (await part(`${String(holder['@odata.id'])} LogServices`, () => members(link(holder, 'LogServices')))) ?? []) {
      const entriesPath = link(service, 'Entries');
      if (!entriesPath) continue;
      const read = await part(entriesPath, () => logEntries(get, entriesPath, limits));
      if (read) entries.push(...read.entries);
      if (read?.problem) problems.push(read.problem);
    }
  }

  const sample: HostSampleData = {
    origin: 'redfish',
    ...(thermalRead ? { fans: fans.slice(0, MAX_FANS_PER_SAMPLE), temperatures: temperatures.slice(0, MAX_TEMPERATURES_PER_SAMPLE) } : {}),
    ...(thermalRead ? { fan_redundancy: fanRedundancy.slice(0, MAX_REDUNDANCY_GROUPS) } : {}),
    ...(powerRead ? { psus: psus.slice(0, MAX_PSUS_PER_SAMPLE), psu_redundancy: psuRedundancy.slice(0, MAX_REDUNDANCY_GROUPS) } : {}),
    ...(healths.length > 0 ? { system_health: worstHealth(healths) } : {}),
  };
  return { sample, entries, problems };
}

/** A fan or PSU that is in service: enabled and not critical. */
function servingNow(doc: Json): boolean {
  return isObject(doc.Status) && doc.Status.State === 'Enabled' && healthOf(doc.Status) !== 'critical';
}

/**
 * A log's entries: the collection's (expanded) Members, then @odata.nextLink pages up to the
 * bound. A next page that fails ends the paging (what was read stands): BMCs answer 404 to
 * skip tokens they advertised more often than one would hope.
 */
async function logEntries(
  get: (path: string) => Promise<Json>, entriesPath: string, limits: RedfishPollLimits,
): Promise<{ entries: BmcEventData[]; problem?: string }> {
  const log = entriesPath.replace(/\/Entries\/?$/, '');
  const entries: BmcEventData[] = [];
  let page: Json | undefined = await get(entriesPath);
  for (let pages = 1; page; pages++) {
    for (const member of Array.isArray(page.Members) ? page.Members : []) {
      if (entries.length >= limits.maxLogEntries) return { entries };
      if (!isObject(member)) continue;
      // A collection lists links only on BMCs that do not expand; each is fetched then.
      const doc = typeof member.Id === 'string' ? member : typeof member['@odata.id'] === 'string' ? await get(member['@odata.id']) : undefined;
      const entry = doc ? logEntry(doc, log) : undefined;
      if (entry) entries.push(entry);
    }
    const next = typeof page['@odata.nextLink'] === 'string' ? page['@odata.nextLink'] : undefined;
    if (!next || pages >= limits.maxLogPages) break;
    try {
      page = await get(next);
    } catch (error) {
      return { entries, problem: `${next}: ${error instanceof Error ? error.message : String(error)}` };
    }
  }
  return { entries };
}
