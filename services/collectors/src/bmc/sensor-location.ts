import type { HostTemperature } from '@gpualert/schema';

/**
 * Where a temperature sensor sits, from what the BMC says about it. Pure. Redfish's
 * `PhysicalContext` and IPMI's entity id are the BMC's own word and win (but for a regulator or
 * memory sensor filed under its chip, below); without them (or with a context that says nothing
 * of the place, such as `SystemBoard`) the sensor's name is read the way
 * vendors name them: Dell `Inlet Temp`/`System Board Inlet Temp`, HPE `01-Inlet Ambient`/`02-CPU 1`/
 * `44-P/S 2 Zone`, Supermicro `CPU1 Temp`/`GPU1 Temp`, Lenovo `Ambient Temp`/`CPU 1 Temp`, NVIDIA
 * HGX `HGX_GPU_SXM_1_TEMP_0`, OpenBMC `TEMP_CPU0`. Names are matched at letter boundaries, not
 * word boundaries: `CPU1` and `TEMP_CPU0` hold "cpu", `VRMCpu1` does not.
 */

export type TemperatureLocation = HostTemperature['location'];

/** Redfish PhysicalContext values (Resource.PhysicalContext) that name a place gpualert tells apart. */
const CONTEXTS: ReadonlyMap<string, TemperatureLocation> = new Map([
  ['Intake', 'inlet'],
  ['Exhaust', 'exhaust'],
  ['CPU', 'cpu'],
  ['CPUSubsystem', 'cpu'],
  ['GPU', 'gpu'],
  ['GPUSubsystem', 'gpu'],
  ['PowerSupply', 'psu'],
]);

/** IPMI entity ids (IPMI 2.0 table 43-13): 10 power supply, 55 and 64 air inlet, 3 and 65 processor. */
const ENTITIES: ReadonlyMap<string, TemperatureLocation> = new Map([
  ['10', 'psu'],
  ['55', 'inlet'],
  ['64', 'inlet'],
  ['3', 'cpu'],
  ['65', 'cpu'],
]);

const PSU = /(?<![a-z])(?:psu|ps\d|ps_|p\/s|pwr ?supply|power ?supply)/i;
const GPU = /(?<![a-z])(?:gpu|sxm)/i;
const INLET = /inlet|intake|ambient/i;
const EXHAUST = /exhaust|outlet|exit air/i;
const CPU = /(?<![a-z])(?:cpu|proc(?:essor)?(?![a-z]))|^P\d+ /i;
/** Memory and voltage-regulator sensors named after the socket they serve are not that CPU or GPU. */
const NOT_THE_CHIP = /dimm|(?<![a-z])(?:mem|memory|vr|vdd|vcc|vtt|pch)/i;

/** The location a sensor's name gives, `other` when it names none. */
export function locationByName(name: string): TemperatureLocation {
  if (PSU.test(name)) return 'psu';
  if (INLET.test(name)) return 'inlet';
  if (EXHAUST.test(name)) return 'exhaust';
  if (NOT_THE_CHIP.test(name)) return 'other';
  if (GPU.test(name)) return 'gpu';
  if (CPU.test(name)) return 'cpu';
  return 'other';
}

/**
 * A Redfish sensor's location: its PhysicalContext when that names a place, else its name. A
 * regulator or memory sensor filed under the chip it serves is not that chip: Supermicro gives its
 * `CPU_VRM Temp` PhysicalContext CPU (Redfish has `VoltageRegulator` for it).
 */
export function locationOfRedfish(context: unknown, name: string): TemperatureLocation {
  const placed = typeof context === 'string' ? CONTEXTS.get(context) : undefined;
  if ((placed === 'cpu' || placed === 'gpu') && NOT_THE_CHIP.test(name)) return 'other';
  return placed ?? locationByName(name);
}

/** An IPMI sensor's location: its entity id (`10` of `10.1`) when that names a place, else its name. */
export function locationOfIpmi(entityId: string, name: string): TemperatureLocation {
  return ENTITIES.get(entityId) ?? locationByName(name);
}
