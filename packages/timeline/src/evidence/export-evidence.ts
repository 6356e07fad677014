import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Bus } from '@gpualert/bus';
import { redactSecrets } from '@gpualert/log';
import { parseEnvelope, TOPICS, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { render } from '../formats.ts';
import { assembleEvidence, EVIDENCE_BOUNDS, type Evidence, type EvidenceQuery, type HostRecord } from './evidence.ts';
import { evidenceReadme, type EvidenceSource } from './evidence-readme.ts';
import { ustar, type ArchiveFile } from './ustar.ts';

/** The topics read over the window (inventories are read from the start: they are published only on change). */
const WINDOW_TOPICS = [
  TOPICS.kernelEvents,
  TOPICS.bmcEvents,
  TOPICS.actions,
  TOPICS.alerts,
  TOPICS.notifications,
  TOPICS.providerEvents,
  TOPICS.jobEvents,
  TOPICS.gpuSamples,
];
/** Kafka's answers for a topic that does not exist (a deployment that never ran the remediator or a BMC collector). */
const NO_TOPIC = /UNKNOWN_TOPIC|does not host this topic|not exist/i;
/** The folder inside the archive: a fixed name, never the host's. */
const FOLDER = 'gpualert-evidence';

async function readTopic(
  bus: Bus,
  topic: string,
  host: string,
  range: { from?: number; to: number },
  keep: number,
): Promise<{ envelopes: Envelope[]; dropped: number; missing: boolean }> {
  let missing = false;
  // Only the host's messages are held: on Kafka only its partition is fetched, the other hosts' on it passed over.
  const messages = await bus.read(topic, { ...range, key: host }).catch((error: unknown) => {
    if (!NO_TOPIC.test(String(error))) throw error;
    missing = true;
    return [];
  });
  let kept: Envelope[] = [];
  let dropped = 0;
  for (const m of messages) {
    const parsed = parseEnvelope(m.value);
    if (!parsed.ok || parsed.value.host !== host) continue;
    kept.push(parsed.value);
    if (kept.length >= 2 * keep) {
      dropped += kept.length - keep;
      kept = kept.slice(kept.length - keep);
    }
  }
  if (kept.length > keep) {
    dropped += kept.length - keep;
    kept = kept.slice(kept.length - keep);
  }
  return { envelopes: kept, dropped, missing };
}

/** Reads what the topics hold of one host: its inventories up to the window's end, everything else in the window. */
export async function readHostRecord(bus: Bus, query: EvidenceQuery, progress?: (topic: string) => void): Promise<HostRecord> {
  const dropped = new Map<string, number>();
  const missing: string[] = [];
  const inventories = await readTopic(bus, TOPICS.hostInventory, query.host, { to: query.to }, EVIDENCE_BOUNDS.inventories);
  dropped.set(TOPICS.hostInventory, inventories.dropped);
  if (inventories.missing) missing.push(TOPICS.hostInventory);
  progress?.(TOPICS.hostInventory);
  const envelopes: Envelope[] = [];
  for (const topic of WINDOW_TOPICS) {
    const read = await readTopic(bus, topic, query.host, { from: query.from, to: query.to }, EVIDENCE_BOUNDS.envelopesPerTopic);
    dropped.set(topic, read.dropped);
    if (read.missing) missing.push(topic);
    for (const e of read.envelopes) if (Date.parse(e.ts) >= query.from && Date.parse(e.ts) <= query.to) envelopes.push(e);
    progress?.(topic);
  }
  return {
    inventories: inventories.envelopes.filter((e): e is EnvelopeOf<'host.inventory'> => e.type === 'host.inventory' && Date.parse(e.ts) <= query.to),
    envelopes,
    dropped,
    missing,
  };
}

const jsonl = (rows: readonly unknown[]) => rows.map((r) => JSON.stringify(r)).join('\n') + (rows.length > 0 ? '\n' : '');

/** The archive's files, in the order they are written; a part with nothing in it has no file (the README says so). */
export function evidenceFiles(evidence: Evidence, madeAt: number, source: EvidenceSource): ArchiveFile[] {
  const files: ArchiveFile[] = [
    { name: 'README.md', content: evidenceReadme(evidence, madeAt, source) },
    {
      name: 'identity.json',
      content: `${JSON.stringify({ made_at: new Date(madeAt).toISOString(), window: { from: evidence.timeline.from, to: evidence.timeline.to }, ...evidence.identity }, null, 2)}\n`,
    },
  ];
  if (evidence.faults.length > 0) files.push({ name: 'xid-ecc-history.jsonl', content: jsonl(evidence.faults) });
  if (evidence.remaps.length > 0) files.push({ name: 'remapped-rows.json', content: `${JSON.stringify(evidence.remaps, null, 2)}\n` });
  if (evidence.sel.length > 0) files.push({ name: 'bmc-sel.jsonl', content: jsonl(evidence.sel) });
  files.push({ name: 'timeline.json', content: render(evidence.timeline, 'json') }, { name: 'timeline.html', content: render(evidence.timeline, 'html') });
  if (evidence.actions.length > 0) files.push({ name: 'actions.jsonl', content: jsonl(evidence.actions) });
  return files;
}

const HTML_ESCAPES: ReadonlyMap<string, string> = new Map([
  ['&', '&amp;'],
  ['<', '&lt;'],
  ['>', '&gt;'],
  ['"', '&quot;'],
]);

/** Shortest secret value taken literally: shorter ones (a port, `true`) would blank ordinary text. */
const MIN_SECRET_LENGTH = 6;

/**
 * The text with the given secret values (the settings' tokens, URLs and passwords) and anything
 * `redactSecrets` knows (webhook tokens, credentials in URLs) replaced by `[redacted]`.
 */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length < MIN_SECRET_LENGTH) continue;
    // as written, inside a JSON string, and inside the timeline's HTML
    const html = secret.replace(/[&<>"]/g, (c) => HTML_ESCAPES.get(c) ?? c);
    for (const form of new Set([secret, JSON.stringify(secret).slice(1, -1), html])) out = out.split(form).join('[redacted]');
  }
  return redactSecrets(out);
}

export interface EvidenceArchive {
  readonly evidence: Evidence;
  readonly files: readonly string[];
  /** The .tar.gz's bytes. */
  readonly bytes: Buffer;
}

/**
 * The whole export: read the host's record, assemble, write the files, scrub them of secrets,
 * pack them into one .tar.gz. Not `ok`, with why, when nothing of the host was seen in the window
 * or `--gpu` names no GPU of it: then no archive is made.
 */
export async function exportEvidence(
  bus: Bus,
  request: EvidenceQuery & { readonly madeAt: number; readonly source: EvidenceSource; readonly secrets: readonly string[] },
  progress?: (topic: string) => void,
): Promise<{ ok: true; archive: EvidenceArchive } | { ok: false; reason: string }> {
  const query: EvidenceQuery = { host: request.host, from: request.from, to: request.to, ...(request.gpu ? { gpu: request.gpu } : {}) };
  const record = await readHostRecord(bus, query, progress);
  const window = `between ${new Date(query.from).toISOString()} and ${new Date(query.to).toISOString()}`;
  if (record.inventories.length === 0 && record.envelopes.length === 0) return { ok: false, reason: `nothing was seen for host ${query.host} ${window}` };
  const assembled = assembleEvidence(record, query);
  if ('problem' in assembled) return { ok: false, reason: `host ${query.host}: ${assembled.problem}` };
  const files = evidenceFiles(assembled.evidence, request.madeAt, request.source).map((f) => ({
    name: f.name,
    content: scrubSecrets(typeof f.content === 'string' ? f.content : f.content.toString('utf8'), request.secrets),
  }));
  const bytes = await promisify(gzip)(ustar(FOLDER, files, request.madeAt));
  return { ok: true, archive: { evidence: assembled.evidence, files: files.map((f) => `${FOLDER}/${f.name}`), bytes } };
}
