/** Which of nvidia-smi's outputs a text is: `-q -x` XML, `-q` text, or `--query-gpu` CSV. */
export type NvidiaSmiShape = 'xml' | 'query' | 'csv';

/** Told by their first lines: XML opens with `<?xml` or `<nvidia_smi_log>`, `-q` prints its `NVSMI LOG` banner or a `GPU <bus id>` line. */
export function nvidiaSmiShape(text: string): NvidiaSmiShape {
  const head = text.slice(0, 4_096);
  if (/^\s*(?:<\?xml|<!DOCTYPE nvidia_smi_log|<nvidia_smi_log)/.test(head)) return 'xml';
  if (/=+NVSMI LOG=+/.test(head) || /^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\s*$/m.test(head)) return 'query';
  return 'csv';
}
