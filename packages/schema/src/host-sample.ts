import { z } from 'zod';
import { CONTROL_CHARACTERS } from './bounds.ts';
import { CollectorError } from './data.ts';
import { Severity } from './severity.ts';

/**
 * The host around the GPUs: what its BMC says (fans, temperatures, PSUs, redundancy, system
 * health) and its training network's ports (InfiniBand / RoCE). `host.sample` carries a reading,
 * `bmc.event` one new BMC log entry (SEL, Redfish log service). docs/architecture.md, "The host layer".
 */

/** Names of sensors and ports: a BMC's own labels are short ("Fan Block 1", "PS1 Status"). */
export const MAX_HOST_SENSOR_NAME_LENGTH = 128;
/** The densest GPU chassis (8-GPU HGX trays, blade enclosures) report a few dozen fans; 256 is ample. */
export const MAX_FANS_PER_SAMPLE = 256;
/** Temperature sensors: an SDR lists a hundred or so on the biggest boards. */
export const MAX_TEMPERATURES_PER_SAMPLE = 512;
/** PSUs: 2 to 12 in a GPU server, a few dozen in a blade chassis. */
export const MAX_PSUS_PER_SAMPLE = 64;
/** Redundancy groups (fans, PSUs) per chassis; a handful in practice. */
export const MAX_REDUNDANCY_GROUPS = 16;
/** InfiniBand / RoCE ports: 8–12 HCAs of 1–2 ports on a GPU node; 256 leaves room for switches. */
export const MAX_IB_PORTS_PER_SAMPLE = 256;
/** A BMC log message as an operator reads it; longer ones are cut, not refused. */
export const MAX_BMC_MESSAGE_LENGTH = 1_024;

/** Redfish's Status.Health (OK, Warning, Critical) and IPMI's sensor status (ok, nc, cr, nr) on one scale. */
export const BMC_HEALTHS = ['ok', 'warning', 'critical', 'unknown'] as const;
export const BmcHealth = z.enum(BMC_HEALTHS);
export type BmcHealth = z.infer<typeof BmcHealth>;

const SensorName = z
  .string()
  .min(1)
  .max(MAX_HOST_SENSOR_NAME_LENGTH)
  .refine((v) => !CONTROL_CHARACTERS.test(v), 'expected a name without control characters');
/** A reading the source did not give is `null`, never 0 (a fan at 0 RPM has stopped). */
const Reading = z.number().finite().nullable();

export const HostFan = z.object({
  name: SensorName,
  rpm: Reading,
  /** Redfish's SpeedPercent, or IPMI's "21.56 percent"; `null` when only RPM is known. */
  percent: Reading.optional(),
  health: BmcHealth,
});
export type HostFan = z.infer<typeof HostFan>;

/** Where a temperature is read: the air coming in or going out, a CPU, a GPU, a power supply, or elsewhere. */
export const TEMPERATURE_LOCATIONS = ['inlet', 'exhaust', 'cpu', 'gpu', 'psu', 'other'] as const;
export const HostTemperature = z.object({
  name: SensorName,
  celsius: Reading,
  location: z.enum(TEMPERATURE_LOCATIONS),
  health: BmcHealth,
});
export type HostTemperature = z.infer<typeof HostTemperature>;

/** A PSU's state: in service, switched off or offline, not there at all, or not said. */
export const PSU_STATES = ['enabled', 'disabled', 'absent', 'unknown'] as const;
export const HostPsu = z.object({
  name: SensorName,
  health: BmcHealth,
  /** Output power (input where that is all the BMC gives). */
  watts: Reading,
  state: z.enum(PSU_STATES),
});
export type HostPsu = z.infer<typeof HostPsu>;

/** `full`: every member there; `lost`: running without a spare (Redfish Health ≠ OK, IPMI "Redundancy Lost"/"Non-Redundant"). */
export const REDUNDANCY_STATES = ['full', 'lost', 'unknown'] as const;
export const HostRedundancy = z.object({
  name: SensorName,
  state: z.enum(REDUNDANCY_STATES),
  health: BmcHealth,
});
export type HostRedundancy = z.infer<typeof HostRedundancy>;

/**
 * The error counters the guides watch (counters/ and hw_counters/ of sysfs, perfquery's names
 * in docs/architecture.md): a fixed list, so a port's counters are bounded whatever a driver adds.
 */
export const IB_PORT_COUNTERS = [
  'link_downed',
  'link_error_recovery',
  'symbol_error',
  'port_rcv_errors',
  'port_xmit_discards',
  'port_rcv_remote_physical_errors',
  'port_rcv_switch_relay_errors',
  'local_link_integrity_errors',
  'excessive_buffer_overrun_errors',
  'port_xmit_constraint_errors',
  'port_rcv_constraint_errors',
  'vl15_dropped',
  'port_xmit_wait',
  // hw_counters (mlx5): RDMA retransmits and drops, what RoCE's packet loss shows as.
  'out_of_sequence',
  'packet_seq_err',
  'local_ack_timeout_err',
  'rnr_nak_retry_err',
  'out_of_buffer',
  'implied_nak_seq_err',
  'req_cqe_error',
  'resp_cqe_error',
  'np_cnp_sent',
  'rp_cnp_handled',
  'np_ecn_marked_roce_packets',
] as const;
export type IbPortCounter = (typeof IB_PORT_COUNTERS)[number];
const Count = z.number().int().nonnegative();
export const IbPortCounters = z
  .object(Object.fromEntries(IB_PORT_COUNTERS.map((name) => [name, Count.optional()])) as Record<IbPortCounter, z.ZodOptional<typeof Count>>)
  .strict();
export type IbPortCounters = z.infer<typeof IbPortCounters>;

/** Port states (`active_defer`: IBTA's ActiveDefer, the kernel's `5: ACTIVE_DEFER`; added after the first five). */
export const IB_PORT_STATES = ['active', 'down', 'init', 'armed', 'unknown', 'active_defer'] as const;
/** Physical states, as infiniband-diags names them (`phy_test`: PhyTest, added after the first seven). */
export const IB_PHYS_STATES = ['link_up', 'polling', 'disabled', 'sleep', 'training', 'link_error_recovery', 'unknown', 'phy_test'] as const;
export const IbPort = z.object({
  /** The HCA, as sysfs and ibstat name it (`mlx5_0`, `mlx5_bond_0`). */
  device: SensorName,
  port: z.number().int().min(1).max(255),
  state: z.enum(IB_PORT_STATES),
  phys_state: z.enum(IB_PHYS_STATES),
  /** Gb/s as the port trained (400 for 4X NDR); `null` when not said. */
  rate_gbps: Reading,
  link_layer: z.enum(['infiniband', 'ethernet', 'unknown']),
  counters: IbPortCounters,
});
export type IbPort = z.infer<typeof IbPort>;

/**
 * One reading of a host's BMC or training network. A list that is absent was not measured by this
 * source (a BMC sample has no `ib_ports`); an empty list was measured and holds nothing.
 */
export const HostSampleData = z.object({
  /** Where the reading came from: `redfish`, `ipmitool`, `sysfs`, `ibstat`, `perfquery`. */
  origin: z.enum(['redfish', 'ipmitool', 'sysfs', 'ibstat', 'perfquery']),
  fans: z.array(HostFan).max(MAX_FANS_PER_SAMPLE).optional(),
  temperatures: z.array(HostTemperature).max(MAX_TEMPERATURES_PER_SAMPLE).optional(),
  psus: z.array(HostPsu).max(MAX_PSUS_PER_SAMPLE).optional(),
  fan_redundancy: z.array(HostRedundancy).max(MAX_REDUNDANCY_GROUPS).optional(),
  psu_redundancy: z.array(HostRedundancy).max(MAX_REDUNDANCY_GROUPS).optional(),
  /** The worst of the BMC's computer systems' Status.HealthRollup (Health where no rollup). */
  system_health: BmcHealth.optional(),
  ib_ports: z.array(IbPort).max(MAX_IB_PORTS_PER_SAMPLE).optional(),
  /** Set when the poll failed (BMC unreachable, 401, unparseable): the engine can tell a silent BMC from a healthy one. */
  error: CollectorError.optional(),
});
export type HostSampleData = z.infer<typeof HostSampleData>;

/** One BMC log entry (an IPMI SEL record, a Redfish LogEntry), published once when first seen. */
export const BmcEventData = z.object({
  /** The entry's id in its log (SEL record id, LogEntry Id). */
  entry_id: z.string().min(1).max(128),
  /** Which log: the Redfish LogService path, or `sel` for ipmitool. */
  log: z.string().min(1).max(256),
  /** When the BMC recorded it (its own clock, UTC assumed for IPMI); absent when it could not say ("Pre-Init"). */
  created: z.iso.datetime({ offset: true }).optional(),
  severity: Severity,
  message: z.string().max(MAX_BMC_MESSAGE_LENGTH),
  sensor: z.string().max(MAX_HOST_SENSOR_NAME_LENGTH).optional(),
  /** Redfish MessageId / EntryCode, for rules to match on. */
  code: z.string().max(256).optional(),
  /** IPMI: whether the event was asserted (false: the condition cleared). */
  asserted: z.boolean().optional(),
});
export type BmcEventData = z.infer<typeof BmcEventData>;
