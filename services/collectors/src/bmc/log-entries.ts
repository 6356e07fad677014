import type { BmcEventData } from '@gpualert/schema';
import { isObject, logEntry, type Json } from './redfish-parse.ts';

/** How a log lists its entries. Redfish sets no order: BMCs do both. */
export type LogOrder = 'oldest-first' | 'newest-first';

/** The bounds of one log's read (a part of `RedfishPollLimits`). */
export interface LogReadLimits {
  /** Pages of the log's Entries read per poll, the first one and `$skip` pages included. */
  readonly maxLogPages: number;
  /** Entries kept per log per poll: the newest. */
  readonly maxLogEntries: number;
}

export interface LogRead {
  readonly entries: BmcEventData[];
  /** A page or entry that failed, or the log that could not be read to its newest entry. */
  readonly problems: string[];
  /** True when the newest entries may be missing (the log is longer than the bound and cannot be skipped into). */
  readonly truncated: boolean;
}

/** A Members@odata.count past this is not a BMC's (a full SEL holds 512–4,096). */
const MAX_SANE_COUNT = 1_000_000_000;

/** A member's place in time: its Created, else its numeric Id (from `Id` or the last segment of `@odata.id`). */
function place(member: Json): { created?: number; id?: number } {
  const created = typeof member.Created === 'string' ? Date.parse(member.Created) : Number.NaN;
  const idText = typeof member.Id === 'string' ? member.Id : typeof member['@odata.id'] === 'string' ? (member['@odata.id'].split('/').pop() ?? '') : '';
  const id = /^\d{1,15}$/.test(idText) ? Number(idText) : Number.NaN;
  return { ...(Number.isFinite(created) ? { created } : {}), ...(Number.isFinite(id) ? { id } : {}) };
}

/**
 * Which way a page of entries runs, by its consecutive pairs: `Created` where both have one, else
 * numeric ids; the majority wins (a clock set back once does not flip it). A page that says
 * nothing is taken as oldest first, the order of an append-only log.
 */
export function logOrder(members: readonly Json[]): LogOrder {
  let byTime = 0;
  let byId = 0;
  let a: ReturnType<typeof place> | undefined;
  for (const member of members) {
    const b = place(member);
    if (a === undefined) {
      a = b;
      continue;
    }
    if (a.created !== undefined && b.created !== undefined && a.created !== b.created) byTime += a.created < b.created ? 1 : -1;
    else if (a.id !== undefined && b.id !== undefined && a.id !== b.id) byId += a.id < b.id ? 1 : -1;
    a = b;
  }
  const vote = byTime !== 0 ? byTime : byId;
  return vote < 0 ? 'newest-first' : 'oldest-first';
}

function objects(page: Json): Json[] {
  return Array.isArray(page.Members) ? page.Members.filter(isObject) : [];
}

function nextLink(page: Json): string | undefined {
  return typeof page['@odata.nextLink'] === 'string' ? page['@odata.nextLink'] : undefined;
}

function sameMember(a: Json | undefined, b: Json | undefined): boolean {
  if (!a || !b) return false;
  return (a['@odata.id'] ?? a.Id) === (b['@odata.id'] ?? b.Id);
}

function withQuery(path: string, query: string): string {
  return `${path}${path.includes('?') ? '&' : '?'}${query}`;
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A log's newest entries, at most `maxLogEntries`, in at most `maxLogPages` pages. A log that
 * fits in its first page is read whole. A longer one listed newest first is read from its front;
 * one listed oldest first is read from its end: through `$skip` when the BMC gives
 * `Members@odata.count` and honours it, else by following `@odata.nextLink` to the end within the
 * page bound, keeping the tail. When the end cannot be reached the log is `truncated` and a
 * problem says so: a poll never reads only a full log's oldest entries in silence.
 */
export async function readLogEntries(get: (path: string) => Promise<Json>, entriesPath: string, limits: LogReadLimits): Promise<LogRead> {
  const log = entriesPath.replace(/\/Entries\/?(\?.*)?$/, '');
  const problems: string[] = [];
  const first = await get(entriesPath);
  const firstMembers = objects(first);
  const count =
    typeof first['Members@odata.count'] === 'number' &&
    Number.isInteger(first['Members@odata.count']) &&
    first['Members@odata.count'] >= 0 &&
    first['Members@odata.count'] <= MAX_SANE_COUNT
      ? first['Members@odata.count']
      : undefined;
  const order = logOrder(firstMembers);

  /** Follows nextLinks from `page`, `pages` already read; `enough` stops early. A failed page ends the paging. */
  const follow = async (members: Json[], page: Json, pages: number): Promise<{ members: Json[]; atEnd: boolean }> => {
    let next = nextLink(page);
    // Newest first: once the bound is read, later pages hold only older entries.
    while (next && pages < limits.maxLogPages && !(order === 'newest-first' && members.length >= limits.maxLogEntries)) {
      let doc: Json;
      try {
        doc = await get(next);
      } catch (error) {
        problems.push(`${next}: ${reason(error)}`);
        return { members, atEnd: false };
      }
      pages += 1;
      members.push(...objects(doc));
      // Only the newest maxLogEntries are kept: drop the rest as pages come, so memory stays bounded.
      if (order === 'oldest-first' && members.length > limits.maxLogEntries) members.splice(0, members.length - limits.maxLogEntries);
      next = nextLink(doc);
    }
    return { members, atEnd: next === undefined };
  };

  let kept: Json[];
  let truncated = false;
  if (!nextLink(first)) {
    kept = keepNewest(firstMembers, order, limits.maxLogEntries);
  } else if (order === 'newest-first') {
    // The newest are on the first pages; what is left unread is older.
    kept = keepNewest((await follow([...firstMembers], first, 1)).members, order, limits.maxLogEntries);
  } else {
    const tail = count !== undefined ? await readTail(get, entriesPath, firstMembers, count, limits, problems) : undefined;
    if (tail) {
      // The first page and the $skip page are two of the bound.
      const read = await follow(tail.members, tail.page, 2);
      kept = keepNewest(read.members, order, limits.maxLogEntries);
      truncated = !read.atEnd;
    } else {
      const read = await follow([...firstMembers], first, 1);
      kept = keepNewest(read.members, order, limits.maxLogEntries);
      truncated = !read.atEnd;
    }
  }
  if (truncated) {
    problems.push(
      `${log}: SEL truncated: ${count !== undefined ? `${count} entries, ` : ''}the end not reached in ${limits.maxLogPages} pages; its newest entries may be missing`,
    );
  }

  const entries: BmcEventData[] = [];
  let failed = 0;
  for (const member of kept) {
    let doc: Json | undefined = member;
    // A collection lists links only on BMCs that do not expand; each is fetched then.
    if (typeof member.Id !== 'string' && typeof member['@odata.id'] === 'string') {
      try {
        doc = await get(member['@odata.id']);
      } catch (error) {
        if (failed++ === 0) problems.push(`${member['@odata.id']}: ${reason(error)}`);
        doc = undefined;
      }
    }
    const entry = doc ? logEntry(doc, log) : undefined;
    if (entry) entries.push(entry);
  }
  if (failed > 1) problems.push(`${log}: ${failed} entries could not be read`);
  return { entries, problems, truncated };
}

/** The newest `max` of `members` listed in `order`. */
function keepNewest(members: Json[], order: LogOrder, max: number): Json[] {
  return order === 'newest-first' ? members.slice(0, max) : members.slice(Math.max(0, members.length - max));
}

/**
 * The first page of a long oldest-first log's end, through `$skip`/`$top`: as many entries as the
 * page bound can read at the BMC's page size. Undefined when the log is short enough to page
 * through, or the BMC refuses or ignores `$skip` (it answers its first page again).
 */
async function readTail(
  get: (path: string) => Promise<Json>,
  entriesPath: string,
  firstMembers: Json[],
  count: number,
  limits: LogReadLimits,
  problems: string[],
): Promise<{ members: Json[]; page: Json } | undefined> {
  const pageSize = Math.max(1, firstMembers.length);
  const want = Math.min(limits.maxLogEntries, pageSize * (limits.maxLogPages - 1));
  const skip = count - want;
  if (want <= 0 || skip <= pageSize || limits.maxLogPages < 2) return undefined;
  let page: Json;
  try {
    page = await get(withQuery(entriesPath, `$skip=${skip}&$top=${want}`));
  } catch (error) {
    problems.push(`${entriesPath} $skip: ${reason(error)}`);
    return undefined;
  }
  const members = objects(page);
  if (members.length === 0 || sameMember(members[0], firstMembers[0])) return undefined;
  return { members, page };
}
