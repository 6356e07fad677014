import { GpualertError, parseEnvelope, type EnvelopeOf } from '@gpualert/schema';
import type { Engine } from './engine.ts';
import { emptyEngineState, type EngineState } from './engine-state.ts';
import { StreamClock } from './time-policy.ts';

export class RecordingError extends GpualertError {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super('GA-RECORDING-INVALID', `line ${line}: ${message}`);
  }
}

/** How a replay meets a line that is not an envelope, or a sample dated too far ahead of its clock (`StreamClock.admit`): with `skip`, it is passed over (as the service dead-letters it) and said; without, the replay stops there. */
export interface ReplayOptions {
  readonly skip?: (line: number, reason: string) => void;
}

/**
 * A recording through the engine with event time as the clock, by the one time policy the
 * service follows too (`StreamClock`): the same input always gives the same alerts, and the alerts
 * the service would have raised. A line that is not an envelope stops the replay with its line
 * number, or, with `options.skip`, is handed to it and passed over. No window on event time here,
 * unlike the live service: a recording is replayed long after it happened.
 */
export function replay(engine: Engine, lines: Iterable<string>, state: EngineState = emptyEngineState(), options: ReplayOptions = {}): EnvelopeOf<'alert'>[] {
  const alerts: EnvelopeOf<'alert'>[] = [];
  const clock = new StreamClock(engine);
  let last = -Infinity;
  let number = 0;
  for (const line of lines) {
    number += 1;
    if (line.trim() === '') continue;
    const parsed = parseEnvelope(line);
    if (!parsed.ok) {
      if (!options.skip) throw new RecordingError(number, parsed.error.message);
      options.skip(number, parsed.error.message);
      continue;
    }
    const ahead = clock.admit(state, parsed.value);
    if (ahead !== undefined) {
      if (!options.skip) throw new RecordingError(number, ahead);
      options.skip(number, ahead);
      continue;
    }
    last = Math.max(last, Date.parse(parsed.value.ts));
    try {
      alerts.push(...clock.judge(state, parsed.value));
      // A host's inventory that changed its cluster: the cluster's other hosts are judged again (as the service does at its tick).
      if (parsed.value.type === 'host.inventory') alerts.push(...engine.rejudgeClusters(state, engine.takeChangedClusters()));
    } catch (error) {
      // A bug, not bad input: still one line that names the envelope, never a bare stack.
      throw new RecordingError(
        number,
        `the engine failed on this ${parsed.value.type} of host ${JSON.stringify(parsed.value.host.slice(0, 80))}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  // The end of the recording is a moment too: kernel bursts still open are closed, quiet periods end.
  if (last > -Infinity) alerts.push(...clock.tick(state, last));
  return alerts;
}
