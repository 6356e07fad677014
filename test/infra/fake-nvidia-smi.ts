import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type FakeMode = 'ok' | 'hang' | 'fail' | 'lost';

/**
 * A stand-in `nvidia-smi` executable: answers the queries the collectors make from files the
 * test controls, and can hang, fail, or print the lost-GPU message on demand.
 */
export class FakeNvidiaSmi {
  readonly dir = mkdtempSync(join(tmpdir(), 'gpualert-fake-smi-'));
  readonly path = join(this.dir, 'nvidia-smi');

  constructor() {
    writeFileSync(
      this.path,
      `#!/usr/bin/env bash
here="$(dirname "$0")"
mode="$(cat "$here/mode" 2>/dev/null || echo ok)"
case "$1" in
  --help-query-gpu) cat "$here/help.txt"; exit 0 ;;
esac
case "$mode" in
  hang) exec sleep 30 ;;
  fail) echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2; exit 9 ;;
  lost) echo "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error"; exit 15 ;;
esac
case "$1" in
  "") cat "$here/banner.txt" ;;
  --query-compute-apps=*) cat "$here/apps.csv" ;;
  --query-gpu=index,pci.bus_id) cat "$here/buses.csv" ;;
  --query-gpu=index,uuid,pci.bus_id,name,serial,vbios_version,driver_version) cat "$here/inventory.csv" ;;
  --query-gpu=*) cat "$here/rows.csv" ;;
  *) echo "unknown argument $1" >&2; exit 2 ;;
esac
`,
    );
    chmodSync(this.path, 0o755);
    this.file(
      'help.txt',
      ['index', 'uuid', 'name', 'pci.bus_id', 'utilization.gpu', 'temperature.gpu', 'power.draw', 'clocks_throttle_reasons.active']
        .map((f) => `"${f}"\n    Some help text.`)
        .join('\n'),
    );
    this.file(
      'rows.csv',
      '0, GPU-aaa, NVIDIA H100 80GB HBM3, 00000000:3B:00.0, 97, 61, 650.50, 0x0000000000000004\n1, GPU-bbb, NVIDIA H100 80GB HBM3, 00000000:5D:00.0, 95, 59, 640.00, 0x0000000000000000\n',
    );
    this.file('apps.csv', 'GPU-aaa, 4242\n');
    this.file('buses.csv', '0, 00000000:3B:00.0\n1, 00000000:5D:00.0\n');
    this.file(
      'inventory.csv',
      '0, GPU-aaa, 00000000:3B:00.0, NVIDIA H100 80GB HBM3, 1650123456789, 96.00.89.00.01, 550.54.15\n1, GPU-bbb, 00000000:5D:00.0, NVIDIA H100 80GB HBM3, 1650123456790, 96.00.89.00.01, 550.54.15\n',
    );
    this.file('banner.txt', '| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n');
    this.mode('ok');
  }

  mode(mode: FakeMode): void {
    this.file('mode', mode);
  }

  file(name: string, text: string): void {
    writeFileSync(join(this.dir, name), text);
  }
}
