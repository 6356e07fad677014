/** Every Kafka topic gpualert uses; each message on them is keyed by `host`. */
export const TOPICS = {
  gpuSamples: 'gpualert.gpu.samples',
  kernelEvents: 'gpualert.kernel.events',
  providerEvents: 'gpualert.provider.events',
  hostInventory: 'gpualert.host.inventory',
  hostSamples: 'gpualert.host.samples',
  bmcEvents: 'gpualert.bmc.events',
  alerts: 'gpualert.alerts',
  notifications: 'gpualert.notifications',
  jobEvents: 'gpualert.job.events',
  usage: 'gpualert.usage',
  actions: 'gpualert.actions',
  deadletter: 'gpualert.deadletter',
} as const;

export type TopicName = (typeof TOPICS)[keyof typeof TOPICS];

export const ALL_TOPICS: readonly TopicName[] = Object.values(TOPICS);
