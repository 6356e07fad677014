import { GpualertError, parseEnvelope, type EnvelopeOf } from '@gpualert/schema';
import type { Engine } from './engine.ts';
import { emptyEngineState, type EngineState } from './engine-state.ts';

export class RecordingError extends GpualertError {
  constructor(readonly line: number, message: string) {
    super('GA-RECORDING-INVALID', `line ${line}: ${message}`);
  }
}

/** How often, in event time, the clock ticks between envelopes. */
const TICK_EVERY_MS = 1_000;

/**
 * A recording through the engine with event time as the clock: the same input always gives
 * the same alerts. A line that is not an envelope stops the replay with its line number. No window
 * on event time here, unlike the live service: a recording is replayed long after it happened.
 */
export function replay(engine: Engine, lines: Iterable<string>, state: EngineState = emptyEngineState(), settleMs = 0): EnvelopeOf<'alert'>[] {
  const alerts: EnvelopeOf<'alert'>[] = [];
  let lastTick = -Infinity;
  let clock = -Infinity;
  let number = 0;
  for (const line of lines) {
    number += 1;
    if (line.trim() === '') continue;
    const parsed = parseEnvelope(line);
    if (!parsed.ok) throw new RecordingError(number, parsed.error.message);
    const at = Date.parse(parsed.value.ts);
    if (at - lastTick >= TICK_EVERY_MS && at > clock) {
      // Ticks run up to just before this envelope, in whole steps, so absences are seen on time.
      for (let t = Math.max(lastTick + TICK_EVERY_MS, at - 120_000); t < at && lastTick > -Infinity; t += TICK_EVERY_MS * 5) alerts.push(...engine.tick(state, t));
      lastTick = at;
    }
    clock = Math.max(clock, at);
    try {
      alerts.push(...engine.step(state, parsed.value));
    } catch (error) {
      // A bug, not bad input: still one line that names the envelope, never a bare stack.
      throw new RecordingError(number, `the engine failed on this ${parsed.value.type} of host ${JSON.stringify(parsed.value.host.slice(0, 80))}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  if (clock > -Infinity) {
    for (let t = clock + 5_000; t <= clock + settleMs; t += 5_000) alerts.push(...engine.tick(state, t));
    alerts.push(...engine.tick(state, clock));
  }
  return alerts;
}
