import { readFileSync } from 'node:fs';
import { envelopeMessage, type Bus } from '@gpualert/bus';
import { KernelLogParser } from '@gpualert/kernel-log';
import { ADAPTERS } from '@gpualert/providers';
import { bundledPath, type XidCatalog } from '@gpualert/rules';
import { newEnvelope, parseEnvelope, stableId, TOPICS, type Envelope } from '@gpualert/schema';

export const DEMO_RECORDING = bundledPath('demo/incident.jsonl');
/** The bundled recordings `up --demo` can play (`--demo-recording`): the default incident, a chassis fan failing (one cooling incident), and a 4-host training job losing a GPU (one job incident). */
export const DEMO_RECORDINGS = { incident: DEMO_RECORDING, cooling: bundledPath('demo/cooling.jsonl'), job: bundledPath('demo/job-incident.jsonl') } as const;
export type DemoRecording = keyof typeof DEMO_RECORDINGS;

const TOPIC: Partial<Record<Envelope['type'], string>> = {
  'gpu.sample': TOPICS.gpuSamples,
  'kernel.event': TOPICS.kernelEvents,
  'provider.event': TOPICS.providerEvents,
  'host.inventory': TOPICS.hostInventory,
  'host.sample': TOPICS.hostSamples,
  'bmc.event': TOPICS.bmcEvents,
  'job.event': TOPICS.jobEvents,
};

/**
 * Plays the bundled incident into the bus as the collectors would (raw kernel lines and
 * provider payloads parsed on the way), `speed` times faster than it happened.
 */
export async function playDemo(bus: Bus, catalog: XidCatalog, speed: number, stopped: () => boolean, recording: string = DEMO_RECORDING): Promise<number> {
  const envelopes = readFileSync(recording, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((line, i) => {
      const parsed = parseEnvelope(line);
      if (!parsed.ok) throw new Error(`${recording}:${i + 1}: ${parsed.error.message}`);
      return parsed.value;
    });
  const parsers = new Map<string, KernelLogParser>();
  const [first] = envelopes;
  if (!first) throw new Error(`${recording}: no envelopes to play`);
  const start = Date.parse(first.ts);
  const began = Date.now();
  for (const envelope of envelopes) {
    if (stopped()) return 0;
    const wait = began + (Date.parse(envelope.ts) - start) / speed - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const out: Envelope[] = [];
    const at = Date.parse(envelope.ts);
    // The recording's clock closes kernel bursts, as the collector's clock would.
    for (const [host, parser] of parsers) {
      for (const event of parser.tick(at)) {
        out.push(
          newEnvelope({
            type: 'kernel.event',
            id: stableId(host, event.position, event.ts),
            host,
            source: 'collector-kernel/demo',
            ts: event.ts,
            data: event.data,
          }),
        );
      }
    }
    if (envelope.type === 'kernel.line') {
      let parser = parsers.get(envelope.host);
      if (!parser) parsers.set(envelope.host, (parser = new KernelLogParser({ catalog })));
      for (const event of parser.push(envelope.data.line, at)) {
        out.push(
          newEnvelope({
            type: 'kernel.event',
            id: stableId(envelope.host, event.position, event.ts),
            host: envelope.host,
            source: 'collector-kernel/demo',
            ts: event.ts,
            labels: envelope.labels,
            data: event.data,
          }),
        );
      }
    } else if (envelope.type === 'provider.raw') {
      const result = ADAPTERS[envelope.data.provider](envelope.data.payload, { host: envelope.host, receivedAt: envelope.ts });
      if (result.ok) {
        for (const data of result.events)
          out.push(
            newEnvelope({
              type: 'provider.event',
              id: stableId(envelope.id, data.event_id),
              host: envelope.host,
              source: 'collector-provider/demo',
              ts: envelope.ts,
              labels: envelope.labels,
              data,
            }),
          );
      }
    } else {
      out.push(envelope);
    }
    for (const e of out) {
      const topic = TOPIC[e.type];
      if (topic) await bus.publish(topic, [envelopeMessage(e)]);
    }
  }
  return envelopes.length;
}
