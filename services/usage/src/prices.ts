import { z } from 'zod';

/**
 * rules/prices.yaml: what a GPU-hour costs, by provider, instance type or GPU model, on demand,
 * reserved or on spot. The most specific entry that matches a rollup's labels prices it.
 */

export const PRICING_TERMS = ['on_demand', 'reserved', 'spot'] as const;
export type PricingTerm = (typeof PRICING_TERMS)[number];

const rate = z.number().finite().nonnegative();
const text = z.string().min(1).max(256);

export const PriceEntry = z
  .object({
    provider: text.optional(),
    instance_type: text.optional(),
    gpu_model: text.optional(),
    /** Per GPU-hour, in the file's currency. */
    on_demand: rate,
    reserved: rate.optional(),
    spot: rate.optional(),
  })
  .strict()
  .refine(
    (e) => e.provider !== undefined || e.instance_type !== undefined || e.gpu_model !== undefined,
    'an entry names a provider, an instance_type or a gpu_model',
  );
export type PriceEntry = z.infer<typeof PriceEntry>;

/** At most this many entries: a price list per instance type of every provider is a few hundred. */
export const MAX_PRICE_ENTRIES = 10_000;

export const PricesFile = z
  .object({
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/, 'an ISO 4217 code such as USD')
      .default('USD'),
    /** The term a GPU is priced at when its labels carry no `pricing` label. */
    default_term: z.enum(PRICING_TERMS).default('on_demand'),
    prices: z.array(PriceEntry).max(MAX_PRICE_ENTRIES),
  })
  .strict();
export type PricesFile = z.infer<typeof PricesFile>;

export interface PriceLookup {
  readonly currency: string;
  /** Per GPU-hour, or undefined when no entry matches. */
  rate(labels: Readonly<Record<string, string>>): number | undefined;
}

/** Prices as a lookup: the entry naming the most of provider, instance type and model wins; the first of equals. */
export function priceLookup(file: PricesFile): PriceLookup {
  const cache = new Map<string, number | undefined>();
  return {
    currency: file.currency,
    rate(labels) {
      const term = (PRICING_TERMS as readonly string[]).includes(labels.pricing ?? '') ? (labels.pricing as PricingTerm) : file.default_term;
      const key = `${labels.provider ?? ''}\u0000${labels.instance_type ?? ''}\u0000${labels.gpu_model ?? ''}\u0000${term}`;
      if (cache.has(key)) return cache.get(key);
      let best: PriceEntry | undefined;
      let bestScore = -1;
      for (const e of file.prices) {
        if (e.provider !== undefined && e.provider !== labels.provider) continue;
        if (e.instance_type !== undefined && e.instance_type !== labels.instance_type) continue;
        if (e.gpu_model !== undefined && e.gpu_model !== labels.gpu_model) continue;
        // An instance type says more than a model, a model more than a provider.
        const score = (e.instance_type !== undefined ? 4 : 0) + (e.gpu_model !== undefined ? 2 : 0) + (e.provider !== undefined ? 1 : 0);
        if (score > bestScore) {
          best = e;
          bestScore = score;
        }
      }
      const value = best ? (best[term] ?? best.on_demand) : undefined;
      if (cache.size < 100_000) cache.set(key, value);
      return value;
    },
  };
}

/** No prices: every GPU-hour is counted, none is priced. */
export const NO_PRICES: PriceLookup = { currency: 'USD', rate: () => undefined };
