// The Kafka-backed bus, an entry of its own (`@gpualert/bus/kafka`): importing the package's main
// entry does not load kafkajs, so `gpualert up` on its in-process bus does not hold it.
export { KafkaBus } from './kafka-bus.ts';
