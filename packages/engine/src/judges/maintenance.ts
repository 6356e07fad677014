import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';

/** A provider's announced maintenance: firing while scheduled or started, resolved when it completes or is cancelled. */
export const maintenance: Judge<'maintenance'> = {
  provider(ctx, rule) {
    const { host, at, data } = ctx;
    for (const id of ctx.forgotten) {
      // A window no longer kept ends its alert too: resolved once, not left firing with nothing to end it.
      const key = `${rule.id}|${id}`;
      const old = host.trackers[key];
      if (old?.firing) ctx.conditions.resolve(host, key, old, at);
      delete host.trackers[key];
    }
    const open = data.status === 'scheduled' || data.status === 'started';
    const key = `${rule.id}|${data.event_id}`;
    const summary = fill(rule.summary, { host: host.host, detail: `${host.host}: ${ctx.window.description}` });
    const tracker = host.trackers[key];
    if (tracker) tracker.summary = summary; // the resolve says how it ended
    ctx.conditions.observe(host, key, rule, undefined, at, { breaching: open, summary });
    // A firing window the provider moved is said again, with its new times.
    if (open && ctx.moved && tracker?.firing) ctx.conditions.retell(host, key, at);
  },
};
