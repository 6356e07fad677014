import type { Envelope, EnvelopeOf } from '@gpualert/schema';
import { HOST_TICK_MS, type Engine } from './engine.ts';
import type { EngineState, HostState } from './engine-state.ts';

/**
 * Grid points a sample may catch up at once: a recording with a gap of hours, or a stream of
 * samples dated far ahead, costs a bounded number of ticks (the last two minutes' worth).
 */
export const MAX_CATCH_UP_TICKS = 12;

/**
 * How far ahead of the stream's event clock one sample may move it: 15 minutes. A sample dated
 * further ahead (a host whose clock says 9999) is not admitted, unless another host's sample agrees
 * with it (within the same bound): then the whole stream resumed after a gap, and the clock leaps.
 * On a stream of one host, that host's next sample agreeing is enough.
 */
export const MAX_CLOCK_LEAP_MS = 15 * 60_000;

/**
 * How time passes for the engine, the one policy of the service (both clock modes), `gpualert
 * replay`, `up --demo` and the tests:
 *
 * - each envelope is judged with its host's own clock (`Engine.advance`: the host ticks every
 *   10 s of its own samples' event time, and only samples move it);
 * - on the event clock, the samples of one stream (a recording; a partition of the service) move
 *   that stream's clock, and at every 10-second grid point it passes, each host of the stream
 *   whose own clock is 10 s or more behind is ticked at the grid point: a host that went silent is
 *   seen going silent, at the same time in a replay and in the service;
 * - on the wall clock, the service ticks every host by the machine's time instead (`tick`), and
 *   only while it is caught up on its input.
 *
 * One instance per stream: it keeps the stream's clock (not persisted: after a restart the first
 * sample sets it, and the grid points in between are not ticked).
 */
export class StreamClock {
  private clock = -Infinity;
  /** The last sample that would have leapt the clock, waiting for a second to agree. */
  private leap: { readonly host: string; readonly at: number } | undefined;

  /**
   * `hosts`: the hosts of the stream, kept by the caller (the service: a partition's); without
   * it, every host in the state is of the stream (a recording).
   */
  constructor(
    private readonly engine: Engine,
    private readonly mode: 'event' | 'wall' = 'event',
    private readonly hosts?: ReadonlySet<string>,
    /** Where the stream's clock stood (a restart that knows it). */
    since = -Infinity,
  ) {
    this.clock = since;
  }

  /** The stream's event clock: the latest sample time seen (−∞ before any). */
  get now(): number {
    return this.clock;
  }

  /**
   * Whether an envelope may be judged by this clock: undefined when it may, else the reason it may
   * not (the caller dead-letters it, the service and `replay` alike). Only a sample dated more than
   * `MAX_CLOCK_LEAP_MS` ahead of the clock is refused, until a second sample agrees with it; judged,
   * it would tick every other host of the stream as silent, then hold the clock there.
   */
  admit(state: EngineState, envelope: Envelope): string | undefined {
    if (this.mode !== 'event' || envelope.type !== 'gpu.sample' || this.clock === -Infinity) return undefined;
    const at = Date.parse(envelope.ts);
    if (at - this.clock <= MAX_CLOCK_LEAP_MS) return undefined;
    const pending = this.leap;
    const alone = this.hostCount(state) <= 1;
    if (pending && (alone || pending.host !== envelope.host) && Math.abs(at - pending.at) <= MAX_CLOCK_LEAP_MS) {
      this.leap = undefined;
      return undefined;
    }
    this.leap = { host: envelope.host, at };
    return `ts: expected at most ${MAX_CLOCK_LEAP_MS / 60_000} min after the stream's event clock (${new Date(this.clock).toISOString()}), got ${envelope.ts}: the host's clock is ahead (a second host's sample as far ahead would move the clock)`;
  }

  judge(state: EngineState, envelope: Envelope): EnvelopeOf<'alert'>[] {
    const alerts: EnvelopeOf<'alert'>[] = [];
    if (this.mode === 'event' && envelope.type === 'gpu.sample') {
      const at = Date.parse(envelope.ts);
      if (at > this.clock) {
        const from = this.clock === -Infinity ? Infinity : Math.max(gridAfter(this.clock), gridAfter(at) - MAX_CATCH_UP_TICKS * HOST_TICK_MS);
        for (let g = from; g <= at; g += HOST_TICK_MS) alerts.push(...this.tickSilent(state, g));
        this.clock = at;
      }
    }
    alerts.push(...this.engine.advance(state, envelope));
    return alerts;
  }

  /** Time passes with no input: every host of the stream at `now` (the wall clock; the end of a recording). */
  tick(state: EngineState, now: number): EnvelopeOf<'alert'>[] {
    const alerts: EnvelopeOf<'alert'>[] = [];
    for (const host of this.hostsOf(state)) alerts.push(...this.engine.tickHost(state, host, now));
    return alerts;
  }

  private hostCount(state: EngineState): number {
    return this.hosts ? this.hosts.size : Object.keys(state.hosts).length;
  }

  private hostsOf(state: EngineState): Iterable<HostState> {
    return hostsIn(state, this.hosts);
  }

  private tickSilent(state: EngineState, at: number): EnvelopeOf<'alert'>[] {
    const alerts: EnvelopeOf<'alert'>[] = [];
    for (const host of this.hostsOf(state)) {
      if (at - host.lastTick < HOST_TICK_MS) continue; // its own samples keep its clock
      alerts.push(...this.engine.tickHost(state, host, at));
      host.lastTick = at;
    }
    return alerts;
  }
}

function* hostsIn(state: EngineState, names: ReadonlySet<string> | undefined): Generator<HostState> {
  if (!names) {
    yield* Object.values(state.hosts);
    return;
  }
  for (const name of names) {
    const host = state.hosts[name];
    if (host) yield host;
  }
}

/** The first grid point (a multiple of the tick) strictly after `t`. */
function gridAfter(t: number): number {
  return (Math.floor(t / HOST_TICK_MS) + 1) * HOST_TICK_MS;
}
