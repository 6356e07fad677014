import type { HostFault, KernelEventKind, Severity } from '@gpualert/schema';

/** What one complete kernel message is to gpualert. */
export type Classified =
  | {
      readonly type: 'event';
      readonly kind: KernelEventKind;
      readonly text: string;
      readonly pciBus?: string | undefined;
      readonly xid?: number | undefined;
      readonly mig?: { gpu_instance: number; compute_instance?: number };
      readonly pid?: number | undefined;
      readonly process?: string | undefined;
      /** Set when the line itself decides; Xid lines otherwise take the catalog's. */
      readonly severity?: Severity | undefined;
      readonly meaning?: string | undefined;
      readonly action?: string | undefined;
      /** The address is only an event when it belongs to a GPU (PCIe lines of other devices). */
      readonly needsGpu?: boolean | undefined;
      /** With kind `host`: which fault. */
      readonly hostFault?: HostFault | undefined;
      /** A PCIe port's own error: the port's full address (`dddd:bb:dd.f`). */
      readonly port?: string | undefined;
      /** The full address an AER line names, so a known bridge's error becomes the port's. */
      readonly address?: string | undefined;
      /**
       * Lines of one fault that print as several events (RmInitAdapter then rm_init_adapter, DPC
       * then AER, "Kill process" then "Killed process", BUG then Oops) share a family: a line whose
       * family is the open event's, within the gap, is attached to it rather than counted.
       */
      readonly family?: string | undefined;
      /** A new occurrence of its family's fault (an SXid header on another link): folding counts it. */
      readonly counts?: boolean | undefined;
      /** The device minor number an address-less driver line names: two minors are two GPUs. */
      readonly minor?: number | undefined;
    }
  /** A continuation of the event before it (GSP tables, stack traces, AER register dumps). */
  | { readonly type: 'detail'; readonly text: string }
  | { readonly type: 'drop' };

export type ClassifiedEvent = Extract<Classified, { type: 'event' }>;
