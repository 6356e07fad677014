import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { close, listen } from './http.ts';

export type Failure = '500' | '429' | 'body-error' | 'slow';
/** What the loopback Feishu's 429 puts in `x-ogw-ratelimit-reset`. */
export const FEISHU_RESET_SECONDS = '52';

export interface Received {
  readonly vendor: string;
  readonly path: string;
  readonly body: any;
  readonly at: number;
}

type Answer = { status: number; body: unknown; headers?: Record<string, string> };

/** A lone surrogate in a string the vendor receives: half an emoji, cut by a UTF-16 `.slice()`. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Every string anywhere in a JSON value, with its path. */
function strings(value: unknown, path = '$'): [string, string][] {
  if (typeof value === 'string') return [[path, value]];
  if (Array.isArray(value)) return value.flatMap((v, i) => strings(v, `${path}[${i}]`));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => strings(v, `${path}.${k}`));
  return [];
}

/** A vendor's documented rate as a sliding window: at most `max` in any `windowMs`. */
class Window {
  private readonly times: number[] = [];
  constructor(
    private readonly max: number,
    private readonly windowMs: number,
  ) {}
  over(now: number): boolean {
    while (this.times.length > 0 && this.times[0]! <= now - this.windowMs) this.times.shift();
    if (this.times.length >= this.max) return true;
    this.times.push(now);
    return false;
  }
}

/**
 * The close codes in ServiceNow's default incident choice list (current releases).
 * Source: https://www.servicenow.com/docs/r/it-service-management/incident-management/resolve-and-close-an-incident.html
 */
const SERVICENOW_CLOSE_CODES = [
  'Duplicate',
  'Known error',
  'No resolution provided',
  'Resolved by caller',
  'Resolved by change',
  'Resolved by problem',
  'Resolved by request',
  'Solution provided',
  'Workaround provided',
  'User error',
];

/**
 * Real HTTP servers on loopback that play Slack, Feishu, DingTalk, WeCom, PagerDuty, Opsgenie,
 * Jira, ServiceNow and a webhook receiver, built from each vendor's published contract (each
 * check cites it): required fields, enums, lengths, byte sizes, signatures, rate limits, and the
 * vendor's own error bodies (HTTP 200 with a `code`/`errcode` where the vendor does that). What a
 * real vendor accepts but renders as markup (a mention, a link) lands in `pings`; a string with
 * half a character in it is refused. Each can fail on demand.
 */
export class VendorReceivers {
  readonly received: Received[] = [];
  readonly rejected: { vendor: string; reason: string }[] = [];
  /** Accepted messages that would ping or link where the sender meant plain text. */
  readonly pings: { vendor: string; text: string }[] = [];
  /** Every request as it arrives, before it is answered: a sender killed mid-request shows here. */
  readonly arrivals: { vendor: string; at: number }[] = [];
  /** Every 500 and 429 answered while a failure was set: what the sender was actually told. */
  readonly refusals: { vendor: string; status: number; at: number }[] = [];
  private failures = new Map<string, { kind: Failure; until: number; count: number }>();
  /** The next request to a vendor waits here until the test opens it (hold). */
  private readonly gates = new Map<string, Promise<void>>();
  private readonly jiraIssues = new Map<string, { key: string; labels: string[]; status: string; comments: string[] }>();
  private readonly incidents = new Map<
    string,
    { sys_id: string; correlation_id: string; state: string; notes: string[]; cmdb_ci?: string; close_code?: string }
  >();
  private readonly windows = new Map<string, Window[]>();
  private dingtalkBlockedUntil = 0;
  private server: Server | undefined;
  base = '';

  /**
   * `jira`: which Jira to play (Cloud: REST v3, `/search` gone; Data Center: REST v2). `rateLimits`:
   * false turns the vendors' rate limits off (a test that floods on purpose).
   */
  constructor(
    readonly secrets: { feishu: string; dingtalk: string; webhook: string; routingKey: string; opsgenie: string },
    readonly options: { jira?: 'cloud' | 'datacenter'; rateLimits?: boolean } = {},
  ) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(({ status, body, headers }) => {
        res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json', ...headers });
        res.end(typeof body === 'string' ? body : JSON.stringify(body));
      });
    });
    this.base = await listen(this.server);
  }

  async stop(): Promise<void> {
    if (this.server) await close(this.server);
  }

  /** The next `count` requests to a vendor fail this way, or all of them until `forMs` passes. */
  fail(vendor: string, kind: Failure, options: { count?: number; forMs?: number } = {}): void {
    this.failures.set(vendor, { kind, count: options.count ?? Infinity, until: options.forMs !== undefined ? Date.now() + options.forMs : Infinity });
  }

  /** The next request to a vendor is held, unanswered, until the returned function is called (at most 30 s); then it is answered as usual. */
  hold(vendor: string): () => void {
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
      setTimeout(resolve, 30_000).unref();
    });
    this.gates.set(vendor, gate);
    return open;
  }

  heal(vendor: string): void {
    this.failures.delete(vendor);
  }

  of(vendor: string): Received[] {
    return this.received.filter((r) => r.vendor === vendor);
  }

  jira(): { key: string; labels: string[]; status: string; comments: string[] }[] {
    return [...this.jiraIssues.values()];
  }

  servicenow(): { sys_id: string; correlation_id: string; state: string; notes: string[] }[] {
    return [...this.incidents.values()].map(({ sys_id, correlation_id, state, notes }) => ({ sys_id, correlation_id, state, notes }));
  }

  /** The ServiceNow incidents with every field this receiver keeps (cmdb_ci, close_code). */
  servicenowIncidents(): { sys_id: string; correlation_id: string; state: string; cmdb_ci?: string; close_code?: string }[] {
    return [...this.incidents.values()];
  }

  /** True when this send is over the vendor's documented rate (each window counts it). */
  private overRate(vendor: string, limits: [max: number, windowMs: number][]): boolean {
    if (this.options.rateLimits === false) return false;
    let windows = this.windows.get(vendor);
    if (!windows) this.windows.set(vendor, (windows = limits.map(([max, ms]) => new Window(max, ms))));
    const now = Date.now();
    return windows.map((w) => w.over(now)).some(Boolean);
  }

  private async handle(req: IncomingMessage): Promise<Answer> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const bytes = Buffer.concat(chunks);
    const raw = bytes.toString('utf8');
    const url = new URL(req.url ?? '/', 'http://x');
    const vendor = url.pathname.split('/')[1] ?? '';
    this.arrivals.push({ vendor, at: Date.now() });
    const gate = this.gates.get(vendor);
    if (gate) {
      this.gates.delete(vendor);
      await gate;
    }
    const failure = this.failures.get(vendor);
    if (failure && failure.count > 0 && Date.now() < failure.until) {
      failure.count -= 1;
      if (failure.kind === '500') {
        this.refusals.push({ vendor, status: 500, at: Date.now() });
        return { status: 500, body: 'internal error' };
      }
      if (failure.kind === '429') {
        this.refusals.push({ vendor, status: 429, at: Date.now() });
        // Feishu's gateway says how long in its own header, with no Retry-After (its frequency-control page).
        if (vendor === 'feishu')
          return {
            status: 429,
            body: { code: 99991400, msg: 'request trigger frequency limit' },
            headers: { 'x-ogw-ratelimit-limit': '100', 'x-ogw-ratelimit-reset': FEISHU_RESET_SECONDS },
          };
        return { status: 429, body: 'rate_limited', headers: { 'retry-after': '1' } };
      }
      if (failure.kind === 'slow') await new Promise((r) => setTimeout(r, 15_000));
      if (failure.kind === 'body-error') {
        // Each vendor's own rate-limit answer: Feishu 11232 (9499 is a malformed request, not a limit), DingTalk 130101, WeCom 45009.
        return {
          status: 200,
          body:
            vendor === 'feishu'
              ? { code: 11232, msg: 'frequency limited psm[lark.oapi.app_platform_runtime]appID[1]' }
              : vendor === 'wecom'
                ? { errcode: 45009, errmsg: 'api freq out of limit' }
                : { errcode: 130101, errmsg: 'send too fast, exceed 20 times per minute' },
        };
      }
    }
    let body: any = {};
    let json = true;
    if (raw) {
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
        json = false;
      }
    }
    const accept = () => this.received.push({ vendor, path: url.pathname, body, at: Date.now() });
    const reject = (reason: string) => this.rejected.push({ vendor, reason });
    const ping = (text: string) => this.pings.push({ vendor, text: text.slice(0, 200) });
    // No vendor takes half a character: a lone surrogate is not UTF-8 and comes back as U+FFFD or an error.
    const half = json ? strings(body).find(([, s]) => LONE_SURROGATE.test(s)) : undefined;
    if (half && vendor !== 'webhook') {
      reject(`half a character at ${half[0]}`);
      return this.invalid(vendor, `half a character at ${half[0]}`);
    }
    switch (vendor) {
      case 'slack':
        return this.slack(json, body, accept, reject, ping);
      case 'feishu':
        return this.feishu(json, body, bytes.length, accept, reject, ping);
      case 'dingtalk':
        return this.dingtalk(url, json, body, bytes.length, accept, reject, ping);
      case 'wecom':
        return this.wecom(json, body, accept, reject, ping);
      case 'pagerduty':
        return url.pathname.endsWith('/generic/2010-04-15/create_event.json')
          ? this.pagerdutyV1(json, body, accept, reject)
          : this.pagerduty(json, body, bytes.length, accept, reject);
      case 'opsgenie':
        return this.opsgenie(req.headers, url, json, body, accept, reject);
      case 'victorops':
        return this.victorops(url, json, body, accept, reject);
      case 'pushover':
        return this.pushover(json, body, accept, reject);
      case 'webhook':
        return this.webhook(req.headers, raw, accept, reject);
      case 'jira':
        return this.jiraApi(req.method ?? 'GET', url, body, accept, reject);
      case 'snow':
        return this.snowApi(req.method ?? 'GET', url, body, accept, reject);
      default:
        return { status: 404, body: { error: 'no such vendor' } };
    }
  }

  /** How each vendor answers a request it cannot take (used for half characters). */
  private invalid(vendor: string, reason: string): Answer {
    switch (vendor) {
      case 'feishu':
        return { status: 200, body: { code: 9499, msg: `Bad Request: ${reason}` } };
      case 'dingtalk':
      case 'wecom':
        return { status: 200, body: { errcode: 40035, errmsg: `invalid parameter: ${reason}` } };
      case 'slack':
        return { status: 400, body: 'invalid_payload' };
      case 'opsgenie':
        return { status: 422, body: { message: reason } };
      case 'victorops':
        return { status: 400, body: { result: 'failure', message: reason } };
      case 'pushover':
        return { status: 400, body: { status: 0, errors: [reason] } };
      default:
        return { status: 400, body: { errors: [reason] } };
    }
  }

  /**
   * Pushover (`POST /1/messages.json`): `token` and `user` required, `message` 1 to 1,024
   * characters, `title` at most 250, `priority` -2 to 2, and with 2 `retry` at least 30 and
   * `expire` at most 10,800; 200 `{status: 1, request}`, 400 `{status: 0, errors}`.
   * Source: https://pushover.net/api. The token is the test's routing key secret.
   */
  private pushover(json: boolean, body: any, accept: () => void, reject: (r: string) => void): Answer {
    const errors: string[] = [];
    if (!json || typeof body !== 'object' || body === null) errors.push('body is not JSON');
    else {
      if (body.token !== this.secrets.routingKey) errors.push('application token is invalid');
      if (typeof body.user !== 'string' || body.user === '') errors.push('user identifier is not a valid user');
      if (typeof body.message !== 'string' || body.message === '' || body.message.length > 1024)
        errors.push('message cannot be blank and must be at most 1024 characters');
      if (body.title !== undefined && (typeof body.title !== 'string' || body.title.length > 250)) errors.push('title is too long');
      const priority = body.priority ?? 0;
      if (![-2, -1, 0, 1, 2].includes(priority)) errors.push('priority is invalid');
      if (priority === 2 && !(body.retry >= 30 && body.expire <= 10_800))
        errors.push('retry must be at least 30 and expire at most 10800 for emergency priority');
    }
    if (errors.length > 0) {
      reject(errors.join('; '));
      return { status: 400, body: { status: 0, errors } };
    }
    accept();
    return { status: 200, body: { status: 1, request: 'loopback' } };
  }

  /**
   * Splunk On-Call (VictorOps) REST endpoint: `POST …/integrations/generic/20131114/alert/{api_key}/{routing_key}`;
   * `message_type` one of CRITICAL, WARNING, INFO, ACKNOWLEDGEMENT, RECOVERY; `entity_id` names
   * the incident (required here to resolve); 200 `{result: "success", entity_id}`, else
   * `{result: "failure", message}`. The api key is the test's routing key secret.
   * Source: Splunk On-Call's REST endpoint integration guide.
   */
  private victorops(url: URL, json: boolean, body: any, accept: () => void, reject: (r: string) => void): Answer {
    const path = /^\/victorops\/integrations\/generic\/20131114\/alert\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    const errors: string[] = [];
    if (!path || decodeURIComponent(path[1]!) !== this.secrets.routingKey) errors.push('unknown api key or path');
    if (!json || typeof body !== 'object' || body === null) errors.push('body is not JSON');
    else {
      if (!['CRITICAL', 'WARNING', 'INFO', 'ACKNOWLEDGEMENT', 'RECOVERY'].includes(body.message_type)) errors.push('message_type');
      if (body.message_type === 'RECOVERY' && !body.entity_id) errors.push('entity_id required to recover');
      for (const field of ['entity_id', 'entity_display_name', 'state_message', 'monitoring_tool']) {
        if (body[field] !== undefined && typeof body[field] !== 'string') errors.push(`${field} is not a string`);
      }
    }
    if (errors.length > 0) {
      reject(errors.join('; '));
      return { status: 400, body: { result: 'failure', message: errors.join('; ') } };
    }
    accept();
    return { status: 200, body: { result: 'success', entity_id: body.entity_id } };
  }

  /**
   * PagerDuty Events API v1 (`POST /generic/2010-04-15/create_event.json`): `service_key` (the
   * integration's 32 characters), `event_type` trigger/acknowledge/resolve, `description` required
   * to trigger and at most 1,024 characters, `incident_key` required to acknowledge or resolve;
   * 200 `{status: "success", message: "Event processed", incident_key}`, 400 `invalid event`.
   * Source: https://developer.pagerduty.com/docs/events-api-v1-overview
   */
  private pagerdutyV1(json: boolean, body: any, accept: () => void, reject: (r: string) => void): Answer {
    const errors: string[] = [];
    if (!json || typeof body !== 'object') errors.push('body is not JSON');
    else {
      if (body.service_key !== this.secrets.routingKey || String(body.service_key).length !== 32) errors.push('service_key');
      if (!['trigger', 'acknowledge', 'resolve'].includes(body.event_type)) errors.push('event_type');
      if (body.event_type === 'trigger' && (typeof body.description !== 'string' || body.description === '' || body.description.length > 1024))
        errors.push('description missing or over 1024');
      if (body.event_type !== 'trigger' && !body.incident_key) errors.push('incident_key required to acknowledge or resolve');
      if ('routing_key' in body || 'payload' in body) errors.push('an Events API v2 field sent to v1');
    }
    if (errors.length > 0) {
      reject(errors.join('; '));
      return { status: 400, body: { status: 'invalid event', message: 'Event object is invalid', errors } };
    }
    accept();
    return { status: 200, body: { status: 'success', message: 'Event processed', incident_key: body.incident_key ?? 'generated' } };
  }

  /**
   * Slack incoming webhook: JSON with `text` or `blocks`; ≤ 50 blocks; a section's text ≤ 3,000
   * characters; errors 400 `invalid_payload` / `invalid_blocks` / `no_text`; about 1 a second.
   * `&`, `<`, `>` are control characters: a raw `<` makes a mention (`<!channel>`) or a link.
   * Sources: https://api.slack.com/messaging/webhooks#handling_errors,
   * https://api.slack.com/reference/block-kit/blocks#section, https://api.slack.com/reference/surfaces/formatting#escaping,
   * https://api.slack.com/docs/rate-limits#incoming-webhooks
   */
  private slack(json: boolean, body: any, accept: () => void, reject: (r: string) => void, ping: (t: string) => void): Answer {
    if (!json || typeof body !== 'object') return { status: 400, body: 'invalid_payload' };
    const blocks: any[] = Array.isArray(body.blocks) ? body.blocks : [];
    if (typeof body.text !== 'string' && blocks.length === 0) return { status: 400, body: 'no_text' };
    if (blocks.length > 50) return { status: 400, body: 'invalid_blocks' };
    for (const block of blocks) {
      if (
        block.type === 'section' &&
        (typeof block.text?.text !== 'string' || block.text.text.length > 3000 || !['mrkdwn', 'plain_text'].includes(block.text.type))
      ) {
        reject('section text over 3000 characters or malformed');
        return { status: 400, body: 'invalid_blocks' };
      }
      // An image block: image_url ≤ 3,000 characters, alt_text ≤ 2,000 (https://api.slack.com/reference/block-kit/blocks#image).
      if (
        block.type === 'image' &&
        (typeof block.image_url !== 'string' ||
          !/^https?:\/\//.test(block.image_url) ||
          block.image_url.length > 3000 ||
          typeof block.alt_text !== 'string' ||
          block.alt_text.length > 2000)
      ) {
        reject('image block malformed');
        return { status: 400, body: 'invalid_blocks' };
      }
    }
    if (['username', 'icon_emoji', 'icon_url'].some((field) => body[field] !== undefined && typeof body[field] !== 'string'))
      return { status: 400, body: 'invalid_payload' };
    if (this.overRate('slack', [[1, 1_000]])) return { status: 429, body: 'rate_limited', headers: { 'retry-after': '1' } };
    for (const text of [body.text, ...blocks.map((b) => (b.text?.type === 'mrkdwn' ? b.text.text : undefined))]) {
      if (typeof text === 'string' && /<[^>]*>/.test(text)) ping(text.match(/<[^>]*>/)![0]);
    }
    accept();
    return { status: 200, body: 'ok' };
  }

  /**
   * Feishu custom bot: `msg_type` + `content`; with signing, `timestamp` (s) and `sign`
   * (19021 when wrong or over an hour off); body ≤ 20 KB; 100 a minute and 5 a second (11232);
   * errors as HTTP 200 with `code` ≠ 0 (9499 a malformed request). `<at user_id="all">` in text
   * mentions everyone. Source: https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot
   */
  private feishu(json: boolean, body: any, size: number, accept: () => void, reject: (r: string) => void, ping: (t: string) => void): Answer {
    if (!json || typeof body !== 'object') return { status: 200, body: { code: 9499, msg: 'Bad Request' } };
    if (size > 20 * 1024) {
      reject(`body of ${size} bytes over 20 KB`);
      return { status: 200, body: { code: 9499, msg: 'request body over 20 KB' } };
    }
    if (this.secrets.feishu) {
      const expected = createHmac('sha256', `${body.timestamp}\n${this.secrets.feishu}`).update('').digest('base64');
      if (body.sign !== expected || Math.abs(Date.now() / 1000 - Number(body.timestamp)) > 3600) {
        reject('bad signature');
        return { status: 200, body: { code: 19021, msg: 'sign match fail or timestamp is not within one hour from current time' } };
      }
    }
    if (
      !['text', 'post', 'image', 'share_chat', 'interactive'].includes(body.msg_type) ||
      (body.msg_type === 'text' && typeof body.content?.text !== 'string')
    ) {
      reject('msg_type or content');
      return { status: 200, body: { code: 9499, msg: 'Bad Request' } };
    }
    if (
      this.overRate('feishu', [
        [5, 1_000],
        [100, 60_000],
      ])
    )
      return { status: 200, body: { code: 11232, msg: 'frequency limited' } };
    if (/<at\b/i.test(body.content?.text ?? '')) ping(body.content.text.match(/<at\b[^>]*>/i)?.[0] ?? '<at');
    accept();
    return { status: 200, body: { code: 0, msg: 'success', data: {} } };
  }

  /**
   * DingTalk custom robot: `timestamp` (ms, within an hour) and `sign` in the query (310000 when
   * wrong); `msgtype` markdown needs `title` and `text`; 20 a minute, then throttled for 10
   * minutes (130101); errors as HTTP 200 with `errcode` ≠ 0. Only `at.isAtAll`/`atMobiles` ping.
   * Source: https://open.dingtalk.com/document/orgapp/custom-robot-access
   */
  private dingtalk(url: URL, json: boolean, body: any, size: number, accept: () => void, reject: (r: string) => void, ping: (t: string) => void): Answer {
    if (this.secrets.dingtalk) {
      const ts = url.searchParams.get('timestamp') ?? '';
      const expected = createHmac('sha256', this.secrets.dingtalk).update(`${ts}\n${this.secrets.dingtalk}`).digest('base64');
      if (url.searchParams.get('sign') !== expected || Math.abs(Date.now() - Number(ts)) > 3_600_000) {
        reject('bad signature');
        return { status: 200, body: { errcode: 310000, errmsg: 'sign not match' } };
      }
    }
    if (!json || !['text', 'link', 'markdown', 'actionCard', 'feedCard'].includes(body.msgtype))
      return { status: 200, body: { errcode: 40035, errmsg: 'missing parameter msgtype' } };
    if (body.msgtype === 'markdown' && (typeof body.markdown?.title !== 'string' || typeof body.markdown?.text !== 'string' || body.markdown.title === '')) {
      reject('markdown needs title and text');
      return { status: 200, body: { errcode: 40035, errmsg: 'missing parameter markdown.title or text' } };
    }
    // The tightest published bound on a robot message's parameters (15,000 bytes). https://open.dingtalk.com/document/orgapp/the-robot-sends-a-group-message
    if (size > 15_000 + 1024) {
      reject(`body of ${size} bytes`);
      return { status: 200, body: { errcode: 460101, errmsg: 'message too long' } };
    }
    const now = Date.now();
    if (now < this.dingtalkBlockedUntil) return { status: 200, body: { errcode: 130101, errmsg: 'send too fast, exceed 20 times per minute' } };
    if (this.overRate('dingtalk', [[20, 60_000]])) {
      this.dingtalkBlockedUntil = now + 10 * 60_000;
      return { status: 200, body: { errcode: 130101, errmsg: 'send too fast, exceed 20 times per minute' } };
    }
    if (body.at?.isAtAll === true) ping('isAtAll');
    accept();
    return { status: 200, body: { errcode: 0, errmsg: 'ok' } };
  }

  /**
   * WeCom group robot: `msgtype` markdown with `content` ≤ 4,096 bytes (40058 otherwise); 20 a
   * minute (45009); errors as HTTP 200 with `errcode`. `<@userid>` in markdown mentions.
   * Source: https://developer.work.weixin.qq.com/document/path/91770
   */
  private wecom(json: boolean, body: any, accept: () => void, reject: (r: string) => void, ping: (t: string) => void): Answer {
    if (!json || !['text', 'markdown', 'markdown_v2', 'image', 'news', 'file', 'voice', 'template_card'].includes(body.msgtype))
      return { status: 200, body: { errcode: 40008, errmsg: 'invalid message type' } };
    const content = body.markdown?.content;
    if (body.msgtype === 'markdown' && typeof content !== 'string') return { status: 200, body: { errcode: 44004, errmsg: 'empty content' } };
    if (Buffer.byteLength(content ?? '') > 4096) {
      reject(`content of ${Buffer.byteLength(content)} bytes over 4096`);
      return { status: 200, body: { errcode: 40058, errmsg: 'markdown.content exceed max length 4096' } };
    }
    if (this.overRate('wecom', [[20, 60_000]])) return { status: 200, body: { errcode: 45009, errmsg: 'api freq out of limit' } };
    if (/<@/.test(content ?? '')) ping(content.match(/<@[^>]*>?/)![0]);
    accept();
    return { status: 200, body: { errcode: 0, errmsg: 'ok' } };
  }

  /**
   * PagerDuty Events API v2: `routing_key` (32 characters), `event_action` trigger/acknowledge/
   * resolve, `dedup_key` ≤ 255; a trigger needs `payload.summary` (≤ 1,024), `payload.source`
   * and `payload.severity` (critical/error/warning/info); the event ≤ 512 KB; 202 with
   * `{status, message, dedup_key}`, 400 `{status: 'invalid event', errors}`; 429 over the rate.
   * Source: https://developer.pagerduty.com/docs/events-api-v2/trigger-events/,
   * https://developer.pagerduty.com/api-reference/YXBpOjI3NDgyNjU-pager-duty-v2-events-api
   */
  private pagerduty(json: boolean, body: any, size: number, accept: () => void, reject: (r: string) => void): Answer {
    const errors: string[] = [];
    if (!json || typeof body !== 'object') errors.push('body is not JSON');
    else {
      if (body.routing_key !== this.secrets.routingKey || String(body.routing_key).length !== 32) errors.push('routing_key');
      if (!['trigger', 'acknowledge', 'resolve'].includes(body.event_action)) errors.push('event_action');
      if (body.dedup_key !== undefined && (typeof body.dedup_key !== 'string' || body.dedup_key.length > 255)) errors.push('dedup_key longer than 255');
      if (body.event_action === 'trigger') {
        const p = body.payload ?? {};
        if (typeof p.summary !== 'string' || p.summary === '' || p.summary.length > 1024) errors.push('payload.summary missing or over 1024');
        if (typeof p.source !== 'string' || p.source === '') errors.push('payload.source');
        if (!['critical', 'error', 'warning', 'info'].includes(p.severity)) errors.push('payload.severity');
      } else if (!body.dedup_key) errors.push('dedup_key required to acknowledge or resolve');
      if (size > 512 * 1024) errors.push('event over 512 KB');
    }
    if (errors.length > 0) {
      reject(errors.join('; '));
      return { status: 400, body: { status: 'invalid event', message: 'Event object is invalid', errors } };
    }
    if (this.overRate('pagerduty', [[120, 60_000]]))
      return { status: 429, body: { status: 'throttle event', message: 'Requests for this service are arriving too quickly.' } };
    accept();
    return { status: 202, body: { status: 'success', message: 'Event processed', dedup_key: body.dedup_key } };
  }

  /**
   * Opsgenie Alert API: `Authorization: GenieKey …`; create needs `message` ≤ 130, and bounds
   * `alias` 512, `description` 15,000, `entity` 512, `source` 100, ≤ 20 `tags` of ≤ 50,
   * `priority` P1–P5; 422 when a field is invalid; close by alias with a `note` ≤ 25,000.
   * Source: https://docs.opsgenie.com/docs/alert-api#create-alert
   */
  private opsgenie(headers: IncomingHttpHeaders, url: URL, json: boolean, body: any, accept: () => void, reject: (r: string) => void): Answer {
    if (headers.authorization !== `GenieKey ${this.secrets.opsgenie}`)
      return { status: 401, body: { message: 'Could not authenticate', took: 0, requestId: 'r' } };
    const errors: string[] = [];
    const within = (field: string, max: number) =>
      body[field] !== undefined && (typeof body[field] !== 'string' || body[field].length > max) && errors.push(`${field} over ${max} characters`);
    if (!json || typeof body !== 'object') errors.push('body is not JSON');
    else if (url.pathname === '/opsgenie/v2/alerts') {
      if (typeof body.message !== 'string' || body.message.trim() === '') errors.push('message is required');
      within('message', 130);
      within('alias', 512);
      within('description', 15_000);
      within('entity', 512);
      within('source', 100);
      if (
        body.tags !== undefined &&
        (!Array.isArray(body.tags) || body.tags.length > 20 || body.tags.some((t: unknown) => typeof t !== 'string' || t.length > 50))
      )
        errors.push('tags: at most 20 of at most 50 characters');
      if (body.priority !== undefined && !['P1', 'P2', 'P3', 'P4', 'P5'].includes(body.priority)) errors.push('priority');
    } else if (/\/close$/.test(url.pathname)) {
      within('note', 25_000);
      within('source', 100);
    }
    if (errors.length > 0) {
      reject(errors.join('; '));
      return { status: 422, body: { message: errors.join('; '), took: 0, requestId: 'r' } };
    }
    accept();
    return { status: 202, body: { result: 'Request will be processed', took: 0.1, requestId: 'r' } };
  }

  /**
   * A Standard Webhooks receiver, verified by the spec's reference library (`standardwebhooks`):
   * signature, id and a timestamp within 5 minutes, over the raw bytes.
   * Source: https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
   */
  private webhook(headers: IncomingHttpHeaders, raw: string, accept: () => void, reject: (r: string) => void): Answer {
    try {
      new Webhook(this.secrets.webhook).verify(raw, {
        'webhook-id': String(headers['webhook-id'] ?? ''),
        'webhook-timestamp': String(headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(headers['webhook-signature'] ?? ''),
      });
    } catch {
      reject('bad signature');
      return { status: 401, body: { error: 'bad signature' } };
    }
    accept();
    return { status: 204, body: '' };
  }

  /**
   * Jira. Cloud: `GET /rest/api/{2,3}/search` answers 410 (replaced by `/rest/api/3/search/jql`),
   * REST v3 takes descriptions and comments as Atlassian Document Format only. Data Center: REST
   * v2 with `/search` and wiki text. Both: `summary` required, ≤ 255, no line break; labels
   * without spaces. Sources: https://developer.atlassian.com/changelog/#CHANGE-2046,
   * https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-post,
   * https://developer.atlassian.com/cloud/jira/platform/apis/document/structure/
   */
  private jiraApi(method: string, url: URL, body: any, accept: () => void, reject: (r: string) => void): Answer {
    const cloud = (this.options.jira ?? 'cloud') === 'cloud';
    const path = url.pathname.replace(/^\/jira/, '');
    const version = /^\/rest\/api\/(2|3)\//.exec(path)?.[1];
    if (method === 'GET' && path === '/rest/api/2/serverInfo')
      return { status: 200, body: { deploymentType: cloud ? 'Cloud' : 'Server', version: cloud ? '1001.0.0' : '9.12.0' } };
    if (!version || (version === '3' && !cloud)) return { status: 404, body: { errorMessages: ['null for uri'] } };
    const rest = path.slice('/rest/api/2'.length);
    const adf = version === '3';
    const isAdf = (doc: any) => doc && doc.type === 'doc' && doc.version === 1 && Array.isArray(doc.content);
    const textOf = (value: any): string =>
      adf
        ? strings(value)
            .filter(([p]) => p.endsWith('.text'))
            .map(([, s]) => s)
            .join('\n')
        : String(value ?? '');
    if (method === 'GET' && (rest === '/search' || rest === '/search/jql')) {
      if (rest === '/search' && cloud)
        return {
          status: 410,
          body: {
            errorMessages: [
              'The requested API has been removed. Please migrate to the /rest/api/3/search/jql API. A full migration guideline is available at https://developer.atlassian.com/changelog/#CHANGE-2046',
            ],
          },
        };
      if (rest === '/search/jql' && !cloud) return { status: 404, body: { errorMessages: ['null for uri'] } };
      const label = /labels = "((?:[^"\\]|\\.)*)"/.exec(url.searchParams.get('jql') ?? '')?.[1]?.replace(/\\(.)/g, '$1');
      const issues = [...this.jiraIssues.values()].filter((i) => i.labels.includes(label ?? '') && i.status !== 'Done');
      return { status: 200, body: { issues: issues.map((i) => ({ id: i.key, key: i.key })), ...(rest === '/search' ? { total: issues.length } : {}) } };
    }
    if (method === 'POST' && rest === '/issue') {
      const errors: Record<string, string> = {};
      const f = body.fields ?? {};
      if (!f.project?.key) errors.project = 'project is required';
      if (!f.issuetype?.name) errors.issuetype = 'issue type is required';
      if (typeof f.summary !== 'string' || f.summary.trim() === '') errors.summary = 'You must specify a summary of the issue.';
      else if (/[\r\n]/.test(f.summary)) errors.summary = 'The summary is invalid because it contains newline characters.';
      else if (f.summary.length > 255) errors.summary = 'Summary must be less than 255 characters.';
      if (f.description !== undefined && (adf ? !isAdf(f.description) : typeof f.description !== 'string'))
        errors.description = adf ? 'Operation value must be an Atlassian Document (see the Atlassian Document Format)' : 'Operation value must be a string';
      if (Array.isArray(f.labels) && f.labels.some((l: unknown) => typeof l !== 'string' || /\s/.test(l) || l.length > 255))
        errors.labels = 'The label must not contain spaces and be at most 255 characters.';
      if (Object.keys(errors).length > 0) {
        reject(Object.values(errors).join('; '));
        return { status: 400, body: { errorMessages: [], errors } };
      }
      const key = `OPS-${this.jiraIssues.size + 1}`;
      this.jiraIssues.set(key, { key, labels: f.labels ?? [], status: 'Open', comments: [] });
      accept();
      return { status: 201, body: { id: String(this.jiraIssues.size), key } };
    }
    const comment = /^\/issue\/([^/]+)\/comment$/.exec(rest);
    if (method === 'POST' && comment) {
      if (adf ? !isAdf(body.body) : typeof body.body !== 'string') {
        reject('comment body');
        return { status: 400, body: { errorMessages: [adf ? 'Comment body must be an Atlassian Document' : 'Comment body can not be empty!'], errors: {} } };
      }
      const issue = this.jiraIssues.get(decodeURIComponent(comment[1]!));
      if (!issue) return { status: 404, body: { errorMessages: ['Issue does not exist or you do not have permission to see it.'], errors: {} } };
      issue.comments.push(textOf(body.body));
      accept();
      return { status: 201, body: {} };
    }
    const transitions = /^\/issue\/([^/]+)\/transitions$/.exec(rest);
    if (transitions && method === 'GET')
      return {
        status: 200,
        body: {
          transitions: [
            { id: '21', name: 'In Progress' },
            { id: '31', name: 'Done' },
          ],
        },
      };
    if (transitions && method === 'POST') {
      const issue = this.jiraIssues.get(decodeURIComponent(transitions[1]!));
      if (issue && body.transition?.id === '31') issue.status = 'Done';
      accept();
      return { status: 204, body: '' };
    }
    return { status: 404, body: { errorMessages: ['null for uri'] } };
  }

  /**
   * ServiceNow Table API on `incident`: `short_description` ≤ 160; `cmdb_ci` is a reference (a
   * 32-hex sys_id) unless `sysparm_input_display_value=true` lets a name be looked up; resolving
   * (state 6) needs a `close_code` from the instance's choice list and `close_notes`.
   * Sources: https://www.servicenow.com/docs/r/api-reference/rest-apis/c_TableAPI.html,
   * https://www.servicenow.com/docs/r/it-service-management/incident-management/resolve-and-close-an-incident.html
   */
  private snowApi(method: string, url: URL, body: any, accept: () => void, reject: (r: string) => void): Answer {
    const path = url.pathname.replace(/^\/snow/, '');
    const displayValues = url.searchParams.get('sysparm_input_display_value') === 'true';
    const invalid = (message: string): Answer => {
      reject(message);
      return { status: 400, body: { error: { message, detail: message }, status: 'failure' } };
    };
    if (method === 'GET' && path === '/api/now/table/incident') {
      const correlation = /correlation_id=([^^]+)/.exec(url.searchParams.get('sysparm_query') ?? '')?.[1];
      return {
        status: 200,
        body: {
          result: [...this.incidents.values()]
            .filter((i) => i.correlation_id === correlation && i.state !== '6' && i.state !== '7')
            .map((i) => ({ sys_id: i.sys_id })),
        },
      };
    }
    if (method === 'POST' && path === '/api/now/table/incident') {
      if (typeof body.short_description !== 'string' || body.short_description.length > 160) return invalid('short_description is over 160 characters');
      if (body.cmdb_ci !== undefined && !displayValues && !/^[0-9a-f]{32}$/.test(String(body.cmdb_ci)))
        return invalid('cmdb_ci is a reference: a sys_id, or a name with sysparm_input_display_value=true');
      const sys_id = `${(this.incidents.size + 1).toString(16).padStart(32, '0')}`;
      this.incidents.set(sys_id, {
        sys_id,
        correlation_id: body.correlation_id,
        state: '1',
        notes: [],
        ...(body.cmdb_ci !== undefined ? { cmdb_ci: String(body.cmdb_ci) } : {}),
      });
      accept();
      return { status: 201, body: { result: { sys_id } } };
    }
    const one = /^\/api\/now\/table\/incident\/([^/]+)$/.exec(path);
    if (method === 'PATCH' && one) {
      const incident = this.incidents.get(decodeURIComponent(one[1]!));
      if (!incident) return { status: 404, body: { error: { message: 'No Record found' }, status: 'failure' } };
      if (body.state === '6' && (!SERVICENOW_CLOSE_CODES.includes(body.close_code) || !body.close_notes))
        return invalid(`Data Policy Exception: resolution code "${String(body.close_code)}" is not in the choice list, and resolution notes are mandatory`);
      if (body.state) incident.state = body.state;
      if (body.close_code) incident.close_code = body.close_code;
      if (body.work_notes) incident.notes.push(body.work_notes);
      accept();
      return { status: 200, body: { result: incident } };
    }
    return { status: 404, body: { error: { message: 'Requested URI does not represent any resource' }, status: 'failure' } };
  }
}
