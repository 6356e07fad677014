import { Severity } from '@gpualert/schema';
import { z } from 'zod';
import { bundledPath } from './bundled-path.ts';
import { loadYamlFile, type LoadResult } from './load-yaml.ts';

export const XID_CAUSES = ['app', 'driver', 'memory', 'nvlink', 'pcie', 'thermal', 'firmware'] as const;

export const XidEntry = z.object({
  code: z.number().int().nonnegative(),
  mnemonic: z.string(),
  meaning: z.string().min(1),
  cause: z.enum(XID_CAUSES),
  severity: Severity,
  action: z.string().min(1),
  /** NVIDIA's own resolution buckets, for reference. */
  nvidia: z.string().optional(),
  /** Why we chose where well-known tools disagree. */
  why: z.string().optional(),
});
export type XidEntry = z.infer<typeof XidEntry>;

export const XidCatalogFile = z
  .object({ codes: z.array(XidEntry).min(1) })
  .superRefine((file, ctx) => {
    const seen = new Set<number>();
    file.codes.forEach((entry, index) => {
      if (seen.has(entry.code)) ctx.addIssue({ code: 'custom', path: ['codes', index, 'code'], message: `code ${entry.code} appears twice` });
      seen.add(entry.code);
    });
  });

export interface XidCatalog {
  /** The entry for a code; an unknown code gets a warning entry, never nothing. */
  lookup(code: number): XidEntry & { readonly known: boolean };
  readonly size: number;
}

export function xidCatalogOf(entries: readonly XidEntry[]): XidCatalog {
  const byCode = new Map(entries.map((e) => [e.code, { ...e, known: true }] as const));
  return {
    size: byCode.size,
    lookup(code) {
      return (
        byCode.get(code) ?? {
          code,
          mnemonic: 'UNKNOWN',
          meaning: 'unknown Xid',
          cause: 'driver',
          severity: 'warning',
          action: 'A code this catalog does not know yet (new driver?): look it up in NVIDIA\'s Xid catalog and add it to rules/xid-catalog.yaml.',
          known: false,
        }
      );
    },
  };
}

export const DEFAULT_XID_CATALOG_PATH = bundledPath('rules/xid-catalog.yaml');

export function loadXidCatalog(path: string = DEFAULT_XID_CATALOG_PATH): LoadResult<XidCatalog> {
  const result = loadYamlFile(path, XidCatalogFile);
  return result.ok ? { ok: true, value: xidCatalogOf(result.value.codes) } : result;
}
