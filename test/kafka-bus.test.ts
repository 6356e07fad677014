import { inject } from 'vitest';
import { busConformance } from '@gpualert/test-support';
import { KafkaBus } from '../packages/bus/src/kafka-bus.ts';
import { uniqueName } from './infra/wait-for.ts';

busConformance('Kafka', async () => new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: `${uniqueName('t')}.`, partitions: 4 }), 2_000);
