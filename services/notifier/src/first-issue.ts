import type { z } from 'zod';

/** A failed parse as one line for a 400: its first issue, `path: message`, the path `whole` when the input itself is wrong. */
export function firstIssue(error: z.ZodError, whole = ''): string {
  const [issue] = error.issues;
  if (!issue) return `${whole || 'input'}: invalid`;
  return `${issue.path.join('.') || whole}: ${issue.message}`;
}
