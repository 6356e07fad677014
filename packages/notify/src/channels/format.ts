import type { AlertView, Notification } from '../notifier-types.ts';
import { escapeChatMarkdown, escapeHtml, escapeSlack, oneLine } from './escape.ts';
import { cutChars } from './truncate.ts';

const REASON: Record<Notification['reason'], string> = {
  first: 'New',
  new_alerts: 'New alerts',
  changed: 'Changed',
  resolved: 'Resolved',
  repeat: 'Still firing',
  page: 'Page',
  page_resolve: 'Resolved',
};

/**
 * The longest title (subject, headline, chat preview): Slack's header block takes 150 characters,
 * and a summary longer than a line belongs in the body, which carries it once.
 * Source: https://api.slack.com/reference/block-kit/blocks#header
 */
export const TITLE_MAX_CHARS = 150;

/** How a message's text is written in one markup: outside text made literal, emphasis, a quoted line. */
export interface Markup {
  readonly text: (s: string) => string;
  readonly strong: (s: string) => string;
  readonly quote: (s: string) => string;
}

export const PLAIN: Markup = { text: (s) => s, strong: (s) => s, quote: (s) => s };
/** Slack mrkdwn: bold is `*x*` (not `**x**`). Source: https://api.slack.com/reference/surfaces/formatting#basic-formatting */
export const SLACK_MRKDWN: Markup = { text: escapeSlack, strong: (s) => `*${s}*`, quote: (s) => `> ${s}` };
/** The markdown subset of DingTalk and WeCom robots: bold `**x**`, quote `> x`. */
export const CHAT_MARKDOWN: Markup = { text: escapeChatMarkdown, strong: (s) => `**${s}**`, quote: (s) => `> ${s}` };

export function worst(notification: Notification): AlertView['severity'] {
  const order = ['info', 'warning', 'error', 'critical'] as const;
  return notification.alerts.reduce<AlertView['severity']>((w, a) => (order.indexOf(a.severity) > order.indexOf(w) ? a.severity : w), 'info');
}

/**
 * `[CRITICAL] gpu-node-002 GPU 3: GPU 3 on gpu-node-002 has disappeared` — severity, host, what
 * happened, on one line of at most TITLE_MAX_CHARS (cut between whole characters).
 */
export function title(notification: Notification): string {
  const first = notification.alerts[0];
  if (!first) return `[${REASON[notification.reason]}] gpualert`;
  const resolved = notification.alerts.every((a) => a.status === 'resolved');
  const more = notification.alerts.length > 1 ? ` (+${notification.alerts.length - 1} more)` : '';
  const head = `[${resolved ? 'RESOLVED' : worst(notification).toUpperCase()}] ${oneLine(first.host)}${first.gpu !== undefined ? ` GPU ${first.gpu}` : ''}: `;
  return `${head}${cutChars(oneLine(first.summary), Math.max(1, TITLE_MAX_CHARS - head.length - more.length))}${more}`;
}

/** One alert as the person paged needs it: what, where, since when, what to do, the evidence; each line one line. */
export function alertLines(alert: AlertView): string[] {
  const evidence = alert.evidence.slice(0, 5).map(oneLine);
  return [
    `${alert.status === 'resolved' ? 'RESOLVED' : alert.severity.toUpperCase()} — ${oneLine(alert.summary)}`,
    `host ${oneLine(alert.host)}${alert.gpu !== undefined ? `, GPU ${alert.gpu}` : ''} · ${oneLine(alert.category)} · since ${oneLine(alert.startsAt)}${alert.endsAt ? ` until ${oneLine(alert.endsAt)}` : ''}${alert.expected ? ' · expected (maintenance window)' : ''}`,
    ...(alert.action && alert.status === 'firing' ? [`action: ${oneLine(alert.action)}`] : []),
    ...(evidence.length > 0 ? [`evidence: ${evidence.join(', ')}${alert.evidence.length > 5 ? ` (+${alert.evidence.length - 5})` : ''}`] : []),
    `fingerprint ${oneLine(alert.fingerprint)}`,
  ];
}

function header(notification: Notification): string {
  return `${REASON[notification.reason]}: ${notification.alerts.length} alert${notification.alerts.length === 1 ? '' : 's'}${notification.firing > notification.alerts.length ? `, ${notification.firing} firing in the group` : ''}`;
}

/**
 * A message's bound in its channel's own measure (UTF-16 units, UTF-8 bytes, bytes as a JSON
 * string): alerts are written while they fit, and one line then says how many more the group has.
 * Writing stops there, so a group of 20,000 alerts costs what its message can hold, not 20,000
 * alerts' text (the channel's cut at its limit stays the last word).
 */
export interface Fit {
  readonly max: number;
  readonly size: (text: string) => number;
}

/** Room kept for the line that says how many alerts did not fit. */
const MORE_LINE_ROOM = 160;

/** "… 4,980 more alerts not shown: the message holds no more" */
export function moreLine(count: number): string {
  return `… ${count.toLocaleString('en-US')} more alert${count === 1 ? '' : 's'} not shown: the message holds no more`;
}

/** The first lines of a block within `room` (the last one kept cut between whole characters), and their size. */
function fitLines(block: readonly string[], room: number, size: (text: string) => number): [string[], number] {
  const kept: string[] = [];
  let used = 0;
  for (const line of block) {
    const cost = size(`\n${line}`);
    if (used + cost <= room) {
      kept.push(line);
      used += cost;
      continue;
    }
    // Each character is at least one unit of every measure: cut to what is left, then shorter by the overshoot's share while over.
    let budget = room - used - size('\n');
    let cut = budget > 1 ? cutChars(line, budget) : '';
    for (let over = size(`\n${cut}`); cut !== '' && over > room - used; over = size(`\n${cut}`)) {
      budget = Math.min(budget - 1, Math.floor((budget * (room - used)) / over));
      cut = budget > 1 ? cutChars(line, budget) : '';
    }
    if (cut !== '') {
      kept.push(cut);
      used += size(`\n${cut}`);
    }
    break;
  }
  return [kept, used];
}

/** The head, then each alert's block and an empty line, within `fit` when given. */
function withAlerts(
  head: readonly string[],
  notification: Notification,
  block: (alert: AlertView) => string[],
  more: (count: number) => string,
  fit?: Fit,
): string {
  const lines = [...head];
  let used = fit ? fit.size(lines.join('\n')) : 0;
  let shown = 0;
  for (const alert of notification.alerts) {
    let text = [...block(alert), ''];
    if (fit) {
      const room = fit.max - (notification.alerts.length > 1 ? MORE_LINE_ROOM : 0) - used;
      let cost = fit.size(`\n${text.join('\n')}`);
      if (cost > room && shown > 0) break;
      // The first alert is always written, cut to leave the more-line its room when it alone is too large.
      if (cost > room) [text, cost] = fitLines(text, room, fit.size);
      used += cost;
    }
    lines.push(...text);
    shown += 1;
  }
  if (shown < notification.alerts.length) lines.push(more(notification.alerts.length - shown));
  return lines.join('\n').trim();
}

/** The body in one markup: the title in bold, then each alert (its first line in bold, the rest quoted). */
export function rendered(notification: Notification, markup: Markup, fit?: Fit): string {
  const block = (a: AlertView) => alertLines(a).map((l, i) => (i === 0 ? markup.strong(markup.text(l)) : markup.quote(markup.text(l))));
  return withAlerts([markup.strong(markup.text(title(notification))), ''], notification, block, (n) => markup.text(moreLine(n)), fit);
}

export function plainText(notification: Notification, fit?: Fit): string {
  return withAlerts([header(notification), ''], notification, alertLines, moreLine, fit);
}

/** DingTalk and WeCom markdown, outside text escaped. */
export function markdown(notification: Notification, fit?: Fit): string {
  return rendered(notification, CHAT_MARKDOWN, fit);
}

export function html(notification: Notification): string {
  return `<h2>${escapeHtml(title(notification))}</h2>${notification.alerts
    .map(
      (a) =>
        `<p>${alertLines(a)
          .map((l, i) => (i === 0 ? `<b>${escapeHtml(l)}</b>` : escapeHtml(l)))
          .join('<br>')}</p>`,
    )
    .join('')}`;
}
