/**
 * One escaping function per markup. Each is applied to text that comes from outside (summaries,
 * hosts, labels, evidence) so it shows as text and never as markup: no mention, no link, no
 * formatting someone else chose.
 */

/** Control characters (a newline in a label) end a line early or start a heading; one line shows them as spaces. */
export function oneLine(text: string): string {
  return text.replace(/[\p{Cc}\u2028\u2029]+/gu, ' ');
}

/**
 * Slack mrkdwn: `&`, `<`, `>` are its control characters (`<!channel>` pings, `<url|text>` links)
 * and must be sent as `&amp;`, `&lt;`, `&gt;`.
 * Source: https://api.slack.com/reference/surfaces/formatting#escaping
 */
export function escapeSlack(text: string): string {
  return text.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;'));
}

/**
 * Feishu text, DingTalk and WeCom markdown: tags in text are live (`<at user_id="all">` mentions
 * everyone on Feishu, `<@userid>` on WeCom, `<font>` on DingTalk and WeCom) and none of them
 * documents an entity or a backslash escape for `<`, so angle brackets become their full-width
 * look-alikes; markdown's emphasis, code and link characters take a backslash.
 * Sources: https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot (at all),
 * https://developer.work.weixin.qq.com/document/path/91770 (markdown, <@userid>, <font>),
 * https://open.dingtalk.com/document/orgapp/custom-robot-access (markdown subset).
 */
export function escapeChatMarkdown(text: string): string {
  return text.replace(/[<>]/g, (c) => (c === '<' ? '＜' : '＞')).replace(/[\\`*_~[\]#|]/g, '\\$&');
}

/** Feishu plain text (`msg_type: text`): only tags are live there, so only angle brackets are neutralised. */
export function escapeFeishuText(text: string): string {
  return text.replace(/[<>]/g, (c) => (c === '<' ? '＜' : '＞'));
}

/**
 * Jira wiki markup (Data Center, REST v2): a backslash makes each markup character literal
 * (`{code}`, `[link]`, `*bold*`, `|table|`, `!image!`…).
 * Source: https://jira.atlassian.com/secure/WikiRendererHelpAction.jspa?section=all
 */
export function escapeJiraWiki(text: string): string {
  return text.replace(/[\\{}[\]*_+^~?|!#\-]/g, '\\$&');
}

const HTML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** HTML text and attribute values (email). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);
}

/** JQL string literal: a double quote or backslash in a value would end the literal. */
export function jqlString(text: string): string {
  return `"${text.replace(/["\\]/g, '\\$&')}"`;
}
