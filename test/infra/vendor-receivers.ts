import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { close, listen } from './http.ts';

export type Failure = '500' | '429' | 'body-error' | 'slow';

export interface Received {
  readonly vendor: string;
  readonly path: string;
  readonly body: any;
  readonly at: number;
}

/**
 * Real HTTP servers on loopback that play Slack, Feishu, DingTalk, WeCom, PagerDuty, Opsgenie,
 * Jira, ServiceNow and a webhook receiver: each checks what its vendor checks (signatures,
 * routing keys) and answers as the vendor does, and can fail on demand.
 */
export class VendorReceivers {
  readonly received: Received[] = [];
  readonly rejected: { vendor: string; reason: string }[] = [];
  /** Every request as it arrives, before it is answered: a sender killed mid-request shows here. */
  readonly arrivals: { vendor: string; at: number }[] = [];
  private failures = new Map<string, { kind: Failure; until: number; count: number }>();
  private readonly jiraIssues = new Map<string, { key: string; labels: string[]; status: string; comments: string[] }>();
  private readonly incidents = new Map<string, { sys_id: string; correlation_id: string; state: string; notes: string[] }>();
  private server: Server | undefined;
  base = '';

  constructor(readonly secrets: { feishu: string; dingtalk: string; webhook: string; routingKey: string; opsgenie: string }) {}

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
    return [...this.incidents.values()];
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; body: unknown; headers?: Record<string, string> }> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://x');
    const vendor = url.pathname.split('/')[1] ?? '';
    this.arrivals.push({ vendor, at: Date.now() });
    const failure = this.failures.get(vendor);
    if (failure && failure.count > 0 && Date.now() < failure.until) {
      failure.count -= 1;
      if (failure.kind === '500') return { status: 500, body: 'internal error' };
      if (failure.kind === '429') return { status: 429, body: 'rate_limited', headers: { 'retry-after': '1' } };
      if (failure.kind === 'slow') await new Promise((r) => setTimeout(r, 15_000));
      if (failure.kind === 'body-error') {
        return { status: 200, body: vendor === 'feishu' ? { code: 9499, msg: 'too many requests' } : { errcode: 130101, errmsg: 'send too fast' } };
      }
    }
    const body = raw ? (() => { try { return JSON.parse(raw); } catch { return raw; } })() : {};
    const accept = () => this.received.push({ vendor, path: url.pathname, body, at: Date.now() });
    const reject = (reason: string) => this.rejected.push({ vendor, reason });
    switch (vendor) {
      case 'slack':
        if (typeof body.text !== 'string') return { status: 400, body: 'no_text' };
        accept();
        return { status: 200, body: 'ok' };
      case 'feishu': {
        const expected = createHmac('sha256', `${body.timestamp}\n${this.secrets.feishu}`).update('').digest('base64');
        if (body.sign !== expected || Math.abs(Date.now() / 1000 - Number(body.timestamp)) > 3600) {
          reject('bad signature');
          return { status: 200, body: { code: 19021, msg: 'sign match fail or timestamp is not within one hour from current time' } };
        }
        accept();
        return { status: 200, body: { code: 0, msg: 'success' } };
      }
      case 'dingtalk': {
        const ts = url.searchParams.get('timestamp') ?? '';
        const expected = createHmac('sha256', this.secrets.dingtalk).update(`${ts}\n${this.secrets.dingtalk}`).digest('base64');
        if (url.searchParams.get('sign') !== expected || Math.abs(Date.now() - Number(ts)) > 3_600_000) {
          reject('bad signature');
          return { status: 200, body: { errcode: 310000, errmsg: 'sign not match' } };
        }
        accept();
        return { status: 200, body: { errcode: 0, errmsg: 'ok' } };
      }
      case 'wecom':
        if (Buffer.byteLength(body.markdown?.content ?? '') > 4096) return { status: 200, body: { errcode: 40058, errmsg: 'content exceeds 4096 bytes' } };
        accept();
        return { status: 200, body: { errcode: 0, errmsg: 'ok' } };
      case 'pagerduty':
        if (body.routing_key !== this.secrets.routingKey) return { status: 400, body: { status: 'invalid event', message: 'routing_key' } };
        if (!['trigger', 'resolve', 'acknowledge'].includes(body.event_action) || !body.dedup_key || String(body.dedup_key).length > 255) return { status: 400, body: { status: 'invalid event' } };
        accept();
        return { status: 202, body: { status: 'success', dedup_key: body.dedup_key } };
      case 'opsgenie':
        if (req.headers.authorization !== `GenieKey ${this.secrets.opsgenie}`) return { status: 401, body: { message: 'unauthorized' } };
        if (url.pathname === '/opsgenie/v2/alerts' && String(body.message ?? '').length > 130) return { status: 422, body: { message: 'message too long' } };
        accept();
        return { status: 202, body: { result: 'Request will be processed' } };
      case 'webhook': {
        const id = String(req.headers['webhook-id'] ?? '');
        const ts = String(req.headers['webhook-timestamp'] ?? '');
        const key = Buffer.from(this.secrets.webhook.slice(6), 'base64');
        const expected = Buffer.from(createHmac('sha256', key).update(`${id}.${ts}.${raw}`).digest('base64'));
        const offered = String(req.headers['webhook-signature'] ?? '').split(' ').map((s) => Buffer.from(s.replace(/^v1,/, '')));
        if (!offered.some((o) => o.length === expected.length && timingSafeEqual(o, expected))) {
          reject('bad signature');
          return { status: 401, body: { error: 'bad signature' } };
        }
        accept();
        return { status: 204, body: '' };
      }
      case 'jira':
        return this.jiraApi(req.method ?? 'GET', url, body, accept);
      case 'snow':
        return this.snowApi(req.method ?? 'GET', url, body, accept);
      default:
        return { status: 404, body: { error: 'no such vendor' } };
    }
  }

  private jiraApi(method: string, url: URL, body: any, accept: () => void) {
    const path = url.pathname.replace(/^\/jira/, '');
    if (method === 'GET' && path === '/rest/api/2/search') {
      const label = /labels = "([^"]+)"/.exec(url.searchParams.get('jql') ?? '')?.[1];
      const issues = [...this.jiraIssues.values()].filter((i) => i.labels.includes(label ?? '') && i.status !== 'Done');
      return { status: 200, body: { issues: issues.map((i) => ({ key: i.key })) } };
    }
    if (method === 'POST' && path === '/rest/api/2/issue') {
      if (!body.fields?.project?.key || !body.fields?.summary || !body.fields?.issuetype?.name) return { status: 400, body: { errors: { summary: 'required' } } };
      const key = `OPS-${this.jiraIssues.size + 1}`;
      this.jiraIssues.set(key, { key, labels: body.fields.labels ?? [], status: 'Open', comments: [] });
      accept();
      return { status: 201, body: { key } };
    }
    const comment = /^\/rest\/api\/2\/issue\/([^/]+)\/comment$/.exec(path);
    if (method === 'POST' && comment) {
      this.jiraIssues.get(comment[1]!)?.comments.push(body.body);
      accept();
      return { status: 201, body: {} };
    }
    const transitions = /^\/rest\/api\/2\/issue\/([^/]+)\/transitions$/.exec(path);
    if (transitions && method === 'GET') return { status: 200, body: { transitions: [{ id: '21', name: 'In Progress' }, { id: '31', name: 'Done' }] } };
    if (transitions && method === 'POST') {
      const issue = this.jiraIssues.get(transitions[1]!);
      if (issue && body.transition?.id === '31') issue.status = 'Done';
      accept();
      return { status: 204, body: '' };
    }
    return { status: 404, body: {} };
  }

  private snowApi(method: string, url: URL, body: any, accept: () => void) {
    const path = url.pathname.replace(/^\/snow/, '');
    if (method === 'GET' && path === '/api/now/table/incident') {
      const correlation = /correlation_id=([^^]+)/.exec(url.searchParams.get('sysparm_query') ?? '')?.[1];
      return { status: 200, body: { result: [...this.incidents.values()].filter((i) => i.correlation_id === correlation && i.state !== '6') } };
    }
    if (method === 'POST' && path === '/api/now/table/incident') {
      const sys_id = `sys${this.incidents.size + 1}`;
      this.incidents.set(sys_id, { sys_id, correlation_id: body.correlation_id, state: '1', notes: [] });
      accept();
      return { status: 201, body: { result: { sys_id } } };
    }
    const one = /^\/api\/now\/table\/incident\/([^/]+)$/.exec(path);
    if (method === 'PATCH' && one) {
      const incident = this.incidents.get(one[1]!);
      if (!incident) return { status: 404, body: {} };
      if (body.state) incident.state = body.state;
      if (body.work_notes) incident.notes.push(body.work_notes);
      accept();
      return { status: 200, body: { result: incident } };
    }
    return { status: 404, body: {} };
  }
}
