import { EVIDENCE_BOUNDS, type Evidence } from './evidence.ts';
import { supportRoute } from './support-routes.ts';

/** Where the archive's data was read, as the README says it (never an address: broker lists are secrets). */
export type EvidenceSource = 'kafka' | 'embedded';

/** A value from an envelope, on one line and cut, for a Markdown line. */
function oneLine(value: string, max = 256): string {
  const flat = value.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

const ISO = (at: number) => new Date(at).toISOString();

/** The archive's README.md: what is in it, for whom, and what was not seen. */
export function evidenceReadme(evidence: Evidence, madeAt: number, source: EvidenceSource): string {
  const { query, identity, gpu } = evidence;
  const scope = gpu === undefined ? 'every GPU of the host' : `GPU ${gpu}${identity.gpus[0]?.uuid ? ` (${identity.gpus[0].uuid})` : ''}`;
  const route = supportRoute(evidence.provider);
  const lines = [
    `# GPU fault evidence: ${oneLine(query.host)}`,
    '',
    `Made by \`gpualert evidence\` at ${ISO(madeAt)} from ${source === 'kafka' ? "the deployment's Kafka topics" : "gpualert's embedded log (`gpualert up`)"}.`,
    '',
    '| | |',
    '|---|---|',
    `| Host | ${oneLine(query.host)} |`,
    `| GPU(s) | ${scope} |`,
    `| Window | ${ISO(query.from)} – ${ISO(query.to)} (UTC) |`,
    `| GPU model | ${oneLine(identity.gpu_model ?? 'not known (no inventory was seen)')} |`,
    `| Driver / CUDA | ${oneLine(identity.driver_version ?? 'not known')} / ${oneLine(identity.cuda_version ?? 'not known')} |`,
    `| Provider | ${evidence.provider === undefined ? 'none named by the inventory or provider events' : oneLine(evidence.provider, 64)} |`,
    `| Instance | ${oneLine([identity.instance_id, identity.instance_type].filter((v) => v !== null).join(', ') || 'not known')} |`,
    '',
    '## Support route',
    '',
    route
      ? `${route.provider}: ${route.route}. Quote ${route.quote} (identity.json: \`instance_id\`), the GPU's serial and UUID, and attach this archive.`
      : 'unknown provider: contact your operator.',
    '',
    '## Contents',
    '',
    '| file | what |',
    '|---|---|',
    ...contents(evidence).map(([file, what]) => `| ${file} | ${what} |`),
    '',
    '## What was seen',
    '',
    ...seenLines(evidence),
    '',
    '## Not collected by gpualert',
    '',
    '- Remapped-row counts (correctable, uncorrectable) and retired pages: run `nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT` on the host and attach its output.',
    "- A per-GPU VBIOS version: the inventory keeps the first GPU's (`nvidia-smi --query-gpu=vbios_version`).",
    "- NVIDIA's own bug report: `nvidia-bug-report.sh` on the host, if the vendor asks for it.",
    '',
    '## Bounds',
    '',
    `Each part holds at most: ${EVIDENCE_BOUNDS.faults} Xid/ECC lines, ${EVIDENCE_BOUNDS.selEntries} SEL entries, ${EVIDENCE_BOUNDS.actions} actions, ${EVIDENCE_BOUNDS.timelineEntries} timeline lines and ${EVIDENCE_BOUNDS.timelineMetrics} per-minute metric rows (the newest); ${EVIDENCE_BOUNDS.envelopesPerTopic} of the host's envelopes are read per topic and ${EVIDENCE_BOUNDS.inventories} inventories.`,
    '',
    ...(evidence.truncated.length === 0 ? ['No bound cut anything.'] : evidence.truncated.map((t) => `- Cut: ${t}.`)),
    '',
  ];
  return lines.join('\n');
}

/** The files the archive holds, each with what it is; a part with nothing in it has no file. */
function contents(e: Evidence): [string, string][] {
  const out: [string, string][] = [
    ['README.md', 'this page'],
    [
      'identity.json',
      `the host's last inventory before the window's end${e.identity.inventory_at ? ` (${e.identity.inventory_at})` : ''}: each GPU's index, serial, UUID, PCI bus and name; the driver, CUDA, VBIOS, kernel, provider and instance; each inventory published in the window`,
    ],
  ];
  if (e.faults.length > 0)
    out.push([
      'xid-ecc-history.jsonl',
      "one JSON line per Xid, SXid, ECC, row-remap and fallen-off-the-bus kernel event, and per change of a GPU's ECC counters (volatile and aggregate, single- and double-bit) in its samples, oldest first",
    ]);
  if (e.remaps.length > 0)
    out.push([
      'remapped-rows.json',
      "per GPU: its last sample's `remap_pending` and `remap_failure`, when either was first and last seen true, and how many row-remap events (Xid 63, 64) the kernel logged",
    ]);
  if (e.sel.length > 0)
    out.push(['bmc-sel.jsonl', "one JSON line per entry of the host's BMC log (IPMI SEL or Redfish log service) first seen in the window, oldest first"]);
  out.push([
    'timeline.json, timeline.html',
    'the incident timeline of the host (as `gpualert timeline --host`) over the window: every event in time order and per-minute GPU metrics',
  ]);
  if (e.actions.length > 0)
    out.push(['actions.jsonl', "the remediator's envelopes for the host (`action`, `action.approval`, `action.result` on gpualert.actions), oldest first"]);
  return out;
}

function seenLines(e: Evidence): string[] {
  const gpuNote = e.gpu === undefined ? '' : ` for GPU ${e.gpu} (events that name no GPU are kept)`;
  const kernel = e.faults.filter((f) => f.source === 'kernel');
  const xids = kernel.filter((f) => typeof f.xid === 'number' || f.kind === 'xid' || f.kind === 'sxid');
  const eccEvents = kernel.filter((f) => f.kind !== 'xid' && f.kind !== 'sxid');
  const counterChanges = e.faults.filter((f) => f.kind === 'ecc_counters_changed');
  const codes = [...new Set(xids.map((f) => f.xid).filter((x): x is number => typeof x === 'number'))].sort((a, b) => a - b);
  const actions = e.actions.filter((a) => a.type === 'action');
  return [
    e.identity.inventory_at === null
      ? `- No inventory was seen for this host up to the window's end: identity.json holds what its GPU samples say (no serials, no VBIOS, no driver).`
      : `- Inventory of ${e.identity.inventory_at}: ${e.identity.gpus.length} GPU(s) listed${e.gpu === undefined ? '' : ' (narrowed to one)'}.`,
    e.faults.length === 0 ? '- Nothing for xid-ecc-history.jsonl, so there is none.' : `- xid-ecc-history.jsonl: ${e.faults.length} line(s).`,
    xids.length === 0
      ? `- No Xid events were seen for this host in the window${gpuNote}.`
      : `- ${xids.length} kernel event(s) with an Xid${gpuNote}: Xid ${codes.join(', ')}.`,
    eccEvents.length === 0
      ? `- No ECC, row-remap or fallen-off-the-bus kernel events were seen for this host in the window${gpuNote}.`
      : `- ${eccEvents.length} ECC, row-remap or fallen-off-the-bus kernel event(s)${gpuNote}.`,
    counterChanges.length === 0
      ? '- No ECC counter changed in the GPU samples of the window.'
      : `- ${counterChanges.length} ECC counter change(s) in the GPU samples.`,
    e.remaps.length === 0
      ? '- No remapped-row readings (`remap_pending`, `remap_failure`) and no row-remap events were seen for this host in the window: so there is no remapped-rows.json.'
      : `- Remapped-row readings for ${e.remaps.length} GPU(s)${e.remaps.some((r) => r.remap_pending === true || r.remap_failure === true) ? ', some pending or failed at the last sample' : ', none pending or failed at the last sample'}.`,
    e.sel.length === 0
      ? '- No BMC SEL entries were seen for this host in the window (no BMC collector for it, or its log was quiet): so there is no bmc-sel.jsonl.'
      : `- ${e.sel.length} BMC SEL entr${e.sel.length === 1 ? 'y' : 'ies'}.`,
    e.actions.length === 0
      ? '- No remediation actions were taken or proposed for this host in the window: so there is no actions.jsonl.'
      : `- ${actions.length} action(s): ${[...new Set(actions.map((a) => (a.type === 'action' ? `${a.data.kind} (${a.data.phase})` : '')))].join(', ')}, with ${e.actions.length - actions.length} approval(s) and result(s).`,
    `- The timeline holds ${e.timeline.entries.length} line(s) and ${e.timeline.metrics.length} per-minute metric row(s).`,
    ...(e.missing.length === 0 ? [] : [`- These topics do not exist in this deployment, so nothing came from them: ${e.missing.join(', ')}.`]),
  ];
}
