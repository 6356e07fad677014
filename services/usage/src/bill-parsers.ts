import { columnIndex, CsvError, csvRows } from './csv.ts';

/**
 * Provider bills as instance-hours: each parser keeps the rows that bill an instance's running
 * time and says for each which instance, when, how many hours and what it cost. Column layouts
 * are the providers' published export formats (test/fixtures/billing/README.md names the pages).
 */

export const BILL_FORMATS = ['aws-cur', 'gcp-billing', 'azure-cost', 'csv'] as const;
export type BillFormat = (typeof BILL_FORMATS)[number];

/** Errors kept per bill; the count goes on. */
export const MAX_BILL_ERRORS = 100;
/**
 * The most one bill row may bill: hours (a century of one instance) and money (a billion in the
 * bill's currency). No real row comes near; past them a number is junk (`1e308` sums to Infinity),
 * and the row is refused with its line.
 */
export const MAX_BILL_ROW_HOURS = 1_000_000;
export const MAX_BILL_ROW_COST = 1_000_000_000;
/** GCP's GPU-seconds: the hours' bound for 256 GPUs. */
const MAX_BILL_ROW_GPU_SECONDS = MAX_BILL_ROW_HOURS * 3600 * 256;

export interface BillLine {
  /** The instance as the bill names it (an ARN, a resource id, a name). */
  readonly instance: string;
  /** What it is matched on: the last path segment, lower case. */
  readonly key: string;
  readonly start: number;
  readonly end: number;
  /** Instance-hours billed. */
  readonly hours: number;
  /** GCP bills GPUs in GPU-seconds: turned into instance-hours once the instance's GPU count is known. */
  readonly gpu_seconds?: number;
  readonly cost?: number;
  /** The usage type, SKU or meter. */
  readonly what: string;
  /** `file:line` of the row, for the support case. */
  readonly ref: string;
}

export interface BillError {
  readonly line: number;
  readonly message: string;
}

export interface Bill {
  readonly lines: BillLine[];
  /** Rows that bill something other than an instance's running time (storage, transfer, tax…). */
  other_rows: number;
  readonly errors: BillError[];
  error_count: number;
}

/** The matching key of an instance id: `arn:…:instance/i-0abc`, `/subscriptions/…/virtualMachines/VM1` and `vm1` meet. */
export function instanceKey(id: string): string {
  const trimmed = id.trim().replace(/\/+$/, '');
  const last = trimmed.slice(trimmed.lastIndexOf('/') + 1);
  return last.toLowerCase();
}

export function parseBill(format: BillFormat, text: string, file: string): Bill {
  switch (format) {
    case 'aws-cur':
      return parseCsvBill(text, file, awsCur);
    case 'gcp-billing':
      return /^\s*[[{]/.test(text) ? parseGcpJson(text, file) : parseCsvBill(text, file, gcpRow);
    case 'azure-cost':
      return parseCsvBill(text, file, azureRow);
    case 'csv':
      return parseCsvBill(text, file, plainRow);
  }
}

type Get = (column: string) => string | undefined;
type RowReader = { readonly required: readonly string[]; read(get: Get, ref: string): BillLine | 'other' | string };

function parseCsvBill(text: string, file: string, reader: RowReader): Bill {
  const bill: Bill = { lines: [], other_rows: 0, errors: [], error_count: 0 };
  const fail = (line: number, message: string) => {
    bill.error_count += 1;
    if (bill.errors.length < MAX_BILL_ERRORS) bill.errors.push({ line, message });
  };
  let columns: Map<string, number> | undefined;
  try {
    for (const row of csvRows(text)) {
      if (row.problem !== undefined) {
        fail(row.line, row.problem);
        if (!columns) return bill; // a header that is not CSV: no row can be read against it
        continue;
      }
      if (!columns) {
        const index = columnIndex(row.fields);
        columns = index;
        const missing = reader.required.filter((alternatives) => !alternatives.split('|').some((c) => index.has(c)));
        if (missing.length > 0) {
          fail(row.line, `the header lacks ${missing.map((m) => m.split('|').join(' or ')).join(', ')}`);
          return bill;
        }
        continue;
      }
      const fields = row.fields;
      const index = columns;
      const get: Get = (column) => {
        for (const c of column.split('|')) {
          const i = index.get(c);
          if (i !== undefined) return fields[i];
        }
        return undefined;
      };
      const result = reader.read(get, `${file}:${row.line}`);
      if (result === 'other') bill.other_rows += 1;
      else if (typeof result === 'string') fail(row.line, result);
      else bill.lines.push(result);
    }
  } catch (error) {
    if (error instanceof CsvError) fail(error.line, error.message);
    else throw error;
  }
  if (!columns) fail(1, 'no header row');
  return bill;
}

/** A time as bills write it: ISO-8601 (with or without zone: UTC), `YYYY-MM-DD HH:MM:SS`, or Azure's `MM/DD/YYYY`. */
export function billTime(value: string | undefined): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  const us = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(v);
  if (us) return Date.UTC(Number(us[3]), Number(us[1]) - 1, Number(us[2]));
  const iso = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2}| UTC)?$/.exec(v);
  if (!iso) return undefined;
  let normal = v.replace(' UTC', 'Z').replace(' ', 'T');
  if (!iso[1]) normal += 'T00:00:00';
  if (!iso[4]) normal += 'Z';
  const at = Date.parse(normal);
  return Number.isFinite(at) ? at : undefined;
}

function number(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}

/** An amount of hours (or GPU-seconds): a finite number from 0 to the bound. */
function amount(value: string | undefined, max: number): number | undefined {
  const n = number(value);
  return n !== undefined && n >= 0 && n <= max ? n : undefined;
}

/** A row's cost: absent is fine; present, it is a number within ±MAX_BILL_ROW_COST (credits are negative), or the row's error. */
function cost(value: string | undefined, column: string): { cost?: number } | string {
  if (value === undefined || value.trim() === '') return {};
  const n = Number(value);
  if (!Number.isFinite(n) || Math.abs(n) > MAX_BILL_ROW_COST)
    return `${column}: expected an amount of at most ${MAX_BILL_ROW_COST} in the bill's currency, got "${value.slice(0, 40)}"`;
  return { cost: n };
}

/** AWS CUR 2.0 (Data Exports), CSV: EC2 instance-hour rows (`BoxUsage`, `SpotUsage`, dedicated and host usage). */
const INSTANCE_USAGE = /(^|[:-])(BoxUsage|SpotUsage|DedicatedUsage|HostBoxUsage|HostUsage|ReservedHostUsage|UnusedBox|UnusedDed)(:|$)/;
const awsCur: RowReader = {
  required: ['line_item_resource_id', 'line_item_usage_start_date', 'line_item_usage_end_date', 'line_item_usage_amount', 'line_item_usage_type'],
  read(get, ref) {
    const usageType = get('line_item_usage_type') ?? '';
    const resource = get('line_item_resource_id') ?? '';
    const type = get('line_item_line_item_type') ?? 'Usage';
    if (!INSTANCE_USAGE.test(usageType) || !/(^|\/)i-[0-9a-f]+$/.test(resource)) return 'other';
    // Credits, refunds and taxes are money, not hours.
    if (!['Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage'].includes(type)) return 'other';
    const start = billTime(get('line_item_usage_start_date'));
    const end = billTime(get('line_item_usage_end_date'));
    const hours = amount(get('line_item_usage_amount'), MAX_BILL_ROW_HOURS);
    if (start === undefined || end === undefined || end <= start)
      return 'line_item_usage_start_date/line_item_usage_end_date: expected two times, the end after the start';
    if (hours === undefined)
      return `line_item_usage_amount: expected a number of hours from 0 to ${MAX_BILL_ROW_HOURS}, got "${(get('line_item_usage_amount') ?? '').slice(0, 40)}"`;
    const money = cost(get('line_item_unblended_cost'), 'line_item_unblended_cost');
    if (typeof money === 'string') return money;
    return { instance: resource, key: instanceKey(resource), start, end, hours, ...money, what: usageType, ref };
  },
};

/** GCP's GPU SKUs ("Nvidia Tesla A100 GPU running in Americas", "Nvidia H100 80GB GPU…"). */
const GPU_SKU = /\bGPU\b|nvidia/i;

/** GCP detailed usage cost export (BigQuery `gcp_billing_export_resource_v1_…`) as CSV with dotted column names. */
const gcpRow: RowReader = {
  // BigQuery names nested fields with dots; a query that flattens them for a CSV export uses underscores.
  required: [
    'service.description|service_description',
    'sku.description|sku_description',
    'usage_start_time',
    'usage_end_time',
    'resource.name|resource_name',
    'usage.amount|usage_amount',
    'usage.unit|usage_unit',
  ],
  read(get, ref) {
    return gcpLine(
      {
        service: get('service.description|service_description'),
        sku: get('sku.description|sku_description'),
        start: get('usage_start_time'),
        end: get('usage_end_time'),
        name: get('resource.name|resource_name'),
        global: get('resource.global_name|resource_global_name'),
        amount: get('usage.amount|usage_amount'),
        unit: get('usage.unit|usage_unit'),
        cost: get('cost'),
      },
      ref,
    );
  },
};

function gcpLine(
  r: {
    service?: string | undefined;
    sku?: string | undefined;
    start?: string | undefined;
    end?: string | undefined;
    name?: string | undefined;
    global?: string | undefined;
    amount?: string | undefined;
    unit?: string | undefined;
    cost?: string | undefined;
  },
  ref: string,
): BillLine | 'other' | string {
  if (r.service !== 'Compute Engine' || !r.name || !GPU_SKU.test(r.sku ?? '')) return 'other';
  if (r.unit !== 'seconds') return 'other';
  const start = billTime(r.start);
  const end = billTime(r.end);
  const seconds = amount(r.amount, MAX_BILL_ROW_GPU_SECONDS);
  if (start === undefined || end === undefined || end <= start) return 'usage_start_time/usage_end_time: expected two times, the end after the start';
  if ((end - start) / 3_600_000 > MAX_BILL_ROW_HOURS) return `usage_start_time/usage_end_time: more than ${MAX_BILL_ROW_HOURS} hours apart`;
  if (seconds === undefined) return `usage.amount: expected GPU-seconds from 0 to ${MAX_BILL_ROW_GPU_SECONDS}, got "${(r.amount ?? '').slice(0, 40)}"`;
  const money = cost(r.cost, 'cost');
  if (typeof money === 'string') return money;
  return {
    instance: r.global || r.name,
    key: instanceKey(r.name),
    start,
    end,
    hours: (end - start) / 3_600_000,
    gpu_seconds: seconds,
    ...money,
    what: r.sku ?? '',
    ref,
  };
}

/** The same export as BigQuery writes JSON: one object per line (or an array), nested records. */
function parseGcpJson(text: string, file: string): Bill {
  const bill: Bill = { lines: [], other_rows: 0, errors: [], error_count: 0 };
  const rows: { line: number; value: unknown }[] = [];
  if (text.trimStart().startsWith('[')) {
    try {
      const all = JSON.parse(text) as unknown;
      if (Array.isArray(all)) all.forEach((value, i) => rows.push({ line: i + 1, value }));
    } catch (error) {
      bill.error_count += 1;
      bill.errors.push({ line: 1, message: `not JSON: ${(error as Error).message}` });
    }
  } else {
    text.split('\n').forEach((line, i) => {
      if (line.trim() === '') return;
      try {
        rows.push({ line: i + 1, value: JSON.parse(line) as unknown });
      } catch (error) {
        bill.error_count += 1;
        if (bill.errors.length < MAX_BILL_ERRORS) bill.errors.push({ line: i + 1, message: `not JSON: ${(error as Error).message}` });
      }
    });
  }
  const str = (v: unknown) => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined);
  for (const { line, value } of rows) {
    const r = (typeof value === 'object' && value !== null ? value : {}) as Record<string, Record<string, unknown> | unknown>;
    const sub = (k: string) => (typeof r[k] === 'object' && r[k] !== null ? (r[k] as Record<string, unknown>) : {});
    const result = gcpLine(
      {
        service: str(sub('service').description),
        sku: str(sub('sku').description),
        start: str(r.usage_start_time),
        end: str(r.usage_end_time),
        name: str(sub('resource').name),
        global: str(sub('resource').global_name),
        amount: str(sub('usage').amount),
        unit: str(sub('usage').unit),
        cost: str(r.cost),
      },
      `${file}:${line}`,
    );
    if (result === 'other') bill.other_rows += 1;
    else if (typeof result === 'string') {
      bill.error_count += 1;
      if (bill.errors.length < MAX_BILL_ERRORS) bill.errors.push({ line, message: result });
    } else bill.lines.push(result);
  }
  return bill;
}

/** Azure cost details (Cost Management exports, EA and MCA): daily rows; `Virtual Machines` meters bill hours. */
const azureRow: RowReader = {
  required: ['date|usagedatetime', 'resourceid|instanceid|instancename', 'metercategory', 'quantity'],
  read(get, ref) {
    if ((get('metercategory') ?? '').trim().toLowerCase() !== 'virtual machines') return 'other';
    const unit = (get('unitofmeasure') ?? '1 Hour').trim();
    const scale = /^(\d+)\s+Hours?$/i.exec(unit);
    if (!scale) return 'other'; // a VM meter in something other than hours (a license per core-day)
    const resource = get('resourceid|instanceid|instancename') ?? '';
    if (!resource) return 'other';
    const day = billTime(get('date|usagedatetime'));
    const quantity = amount(get('quantity'), MAX_BILL_ROW_HOURS / Number(scale[1]));
    if (day === undefined) return `Date: expected a day (YYYY-MM-DD or MM/DD/YYYY), got "${get('date|usagedatetime') ?? ''}"`;
    if (quantity === undefined)
      return `Quantity: expected a number of ${unit} units, at most ${MAX_BILL_ROW_HOURS} hours, got "${(get('quantity') ?? '').slice(0, 40)}"`;
    const money = cost(get('costinbillingcurrency|cost|pretaxcost'), 'CostInBillingCurrency');
    if (typeof money === 'string') return money;
    const what = [get('metersubcategory'), get('metername')].filter(Boolean).join(' ');
    return { instance: resource, key: instanceKey(resource), start: day, end: day + 24 * 3_600_000, hours: quantity * Number(scale[1]), ...money, what, ref };
  },
};

/** Anyone's bill as a plain CSV: `instance_id,start,end,hours[,cost]`. */
const plainRow: RowReader = {
  required: ['instance_id', 'start', 'end', 'hours'],
  read(get, ref) {
    const instance = get('instance_id') ?? '';
    const start = billTime(get('start'));
    const end = billTime(get('end'));
    const hours = amount(get('hours'), MAX_BILL_ROW_HOURS);
    if (!instance) return 'instance_id: expected an instance';
    if (start === undefined || end === undefined || end <= start) return 'start/end: expected two times, the end after the start';
    if (hours === undefined) return `hours: expected a number from 0 to ${MAX_BILL_ROW_HOURS}, got "${(get('hours') ?? '').slice(0, 40)}"`;
    const money = cost(get('cost'), 'cost');
    if (typeof money === 'string') return money;
    return { instance, key: instanceKey(instance), start, end, hours, ...money, what: get('what') ?? '', ref };
  },
};
