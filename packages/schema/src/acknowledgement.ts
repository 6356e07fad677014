import { z } from 'zod';

/** The pagers whose webhooks the intake takes acknowledgements from (`POST /v1/pager/{pager}`). */
export const PAGERS = ['pagerduty', 'opsgenie'] as const;
export const Pager = z.enum(PAGERS);
export type Pager = z.infer<typeof Pager>;

/** What a person did to a page, in the pager's words reduced to these. */
export const ACKNOWLEDGEMENT_ACTIONS = ['acknowledged', 'unacknowledged', 'resolved', 'reassigned', 'escalated'] as const;

/** The longest text an acknowledgement carries (a name, an id, a title, a link: cut, not refused). */
export const MAX_ACKNOWLEDGEMENT_TEXT_LENGTH = 512;
const Text = z.string().max(MAX_ACKNOWLEDGEMENT_TEXT_LENGTH);

/**
 * `acknowledgement` on `gpualert.notifications`: a pager said someone acknowledged (or resolved,
 * reassigned…) a page gpualert sent. `fingerprint` is the page's dedup key (PagerDuty's
 * `incident_key`, Opsgenie's `alias`), which gpualert sets to the alert's fingerprint.
 */
export const AcknowledgementData = z.object({
  pager: Pager,
  action: z.enum(ACKNOWLEDGEMENT_ACTIONS),
  fingerprint: z.string().min(1).max(512),
  /** Who, as the pager names them (a user's name or e-mail); absent when the pager acted itself (a timeout). */
  by: Text.optional(),
  /** The pager's own id of the incident or alert, and of this event (its deliveries' dedup key). */
  pager_incident: Text,
  pager_event: Text,
  /** The pager's title of the incident or alert, and its link. */
  title: Text.optional(),
  url: Text.optional(),
});
export type AcknowledgementData = z.infer<typeof AcknowledgementData>;
