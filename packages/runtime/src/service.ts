import type { Bus } from '@gpualert/bus';
import type { Logger } from '@gpualert/log';
import type { StateStore } from '@gpualert/state';

export interface ServiceContext {
  readonly bus: Bus;
  readonly store: StateStore;
  readonly log: Logger;
}

/** A running service: what `gpualert up` starts in one process and stops on Ctrl-C. */
export interface RunningService {
  readonly name: string;
  stop(): Promise<void>;
}

export interface ServiceDefinition {
  readonly name: string;
  start(context: ServiceContext): Promise<RunningService>;
}
