import type { Bus, OutgoingMessage } from '@gpualert/bus';
import { Counter, Registry } from 'prom-client';

/** What the agent knows about one topic's publishes: the ground truth of "is this host reporting". */
export interface TopicHealth {
  readonly published: number;
  readonly failed: number;
  /** Epoch ms of the last acknowledged publish; undefined before the first. */
  readonly lastOkMs: number | undefined;
}

/**
 * The bus the agent's collectors share, counting what each topic published and when it last got
 * through. The collectors stay unaware of it; /healthz and /metrics read it.
 */
export class PublishTracker {
  readonly registry = new Registry();
  private readonly topics = new Map<string, { published: number; failed: number; lastOkMs: number | undefined }>();
  private readonly publishedTotal = new Counter({
    name: 'gpualert_agent_published_messages_total',
    help: 'Messages the agent published, by topic.',
    labelNames: ['topic'] as const,
    registers: [this.registry],
  });
  private readonly failedTotal = new Counter({
    name: 'gpualert_agent_publish_failures_total',
    help: 'Publishes that failed (the collector retries or drops per its own rules), by topic.',
    labelNames: ['topic'] as const,
    registers: [this.registry],
  });

  constructor(private readonly now: () => number = Date.now) {}

  wrap(bus: Bus): Bus {
    const publish = async (topic: string, messages: readonly OutgoingMessage[]): Promise<void> => {
      const entry = this.entry(topic);
      try {
        await bus.publish(topic, messages);
      } catch (error) {
        entry.failed += 1;
        this.failedTotal.inc({ topic });
        throw error;
      }
      entry.published += messages.length;
      entry.lastOkMs = this.now();
      this.publishedTotal.inc({ topic }, messages.length);
    };
    // Everything but publish goes to the real bus untouched.
    return new Proxy(bus, {
      get: (target, key) => {
        if (key === 'publish') return publish;
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  health(topic: string): TopicHealth {
    const entry = this.topics.get(topic);
    return { published: entry?.published ?? 0, failed: entry?.failed ?? 0, lastOkMs: entry?.lastOkMs };
  }

  private entry(topic: string) {
    let entry = this.topics.get(topic);
    if (!entry) this.topics.set(topic, (entry = { published: 0, failed: 0, lastOkMs: undefined }));
    return entry;
  }
}
