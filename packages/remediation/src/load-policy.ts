import { bundledPath, loadYamlFile, parseYamlText, type LoadResult } from '@gpualert/rules';
import { PolicyFile, policyOf, type Policy } from './policy-file.ts';

/** The bundled policy: drain suggested (with a person's approval) for faults NVIDIA says need a reset or a reboot. */
export const DEFAULT_POLICY = bundledPath('rules/remediation.yaml');

/** A remediation policy file; every error names the file, the line and the field. */
export function loadPolicy(file: string = DEFAULT_POLICY): LoadResult<Policy> {
  const loaded = loadYamlFile(file, PolicyFile);
  return loaded.ok ? { ok: true, value: policyOf(loaded.value) } : loaded;
}

/** The same from text (tests, `gpualert rules check`). */
export function parsePolicy(file: string, text: string): LoadResult<Policy> {
  const loaded = parseYamlText(file, text, PolicyFile);
  return loaded.ok ? { ok: true, value: policyOf(loaded.value) } : loaded;
}
