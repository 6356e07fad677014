import type { V1Taint } from '@kubernetes/client-node';

/** The taint gpualert puts on a node it drains; a resume lifts this key and no other. */
export const TAINT_KEY = 'gpualert.io/quarantine';
/** The whole reason for the drain (a taint's value is too short and too narrow to hold it). */
export const REASON_ANNOTATION = 'gpualert.io/quarantine-reason';
/** Set when gpualert cordoned the node itself: a resume uncordons only then, never lifting someone else's cordon. */
export const CORDON_ANNOTATION = 'gpualert.io/cordoned';

/** A label value's limit, which a taint's value shares. */
const MAX_TAINT_VALUE_LENGTH = 63;
/** The longest reason kept in the annotation. */
const MAX_REASON_LENGTH = 1_024;

/** gpualert's NoSchedule taint, its value a short form of the reason. */
export function quarantineTaint(reason: string): V1Taint {
  return { key: TAINT_KEY, effect: 'NoSchedule', value: taintValue(reason) };
}

/**
 * A reason as a taint value Kubernetes accepts (a label value: at most 63 characters of letters,
 * digits, `-`, `_` and `.`, a letter or digit at each end): every other run of characters becomes
 * one `-`. `gpualert` when nothing is left.
 */
export function taintValue(reason: string): string {
  const trim = (text: string) => text.replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  const value = trim(trim(reason.replace(/[^A-Za-z0-9_.-]+/g, '-')).slice(0, MAX_TAINT_VALUE_LENGTH));
  return value === '' ? 'gpualert' : value;
}

/** The reason as the annotation keeps it: one line, bounded. */
export function reasonAnnotation(reason: string): string {
  return reason
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .trim()
    .slice(0, MAX_REASON_LENGTH);
}

/** Whether a node's taints hold gpualert's. */
export function hasQuarantine(taints: readonly V1Taint[] | undefined): boolean {
  return (taints ?? []).some((t) => t.key === TAINT_KEY);
}
