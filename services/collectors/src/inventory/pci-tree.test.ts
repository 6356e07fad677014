import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PciTopology } from '@gpualert/kernel-log';
import { afterEach, describe, expect, it } from 'vitest';
import { readPciTree } from './pci-tree.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A synthetic sysfs: /sys/devices/… directories with class files, and /sys/bus/pci/devices links to them. */
function fakeSysfs(devices: readonly { path: string; vendor: string; device: string; cls: string }[]): string {
  const root = mkdtempSync(join(tmpdir(), 'gpualert-sysfs-'));
  dirs.push(root);
  const bus = join(root, 'bus/pci/devices');
  mkdirSync(bus, { recursive: true });
  for (const d of devices) {
    const dir = join(root, 'devices', d.path);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'vendor'), `${d.vendor}\n`);
    writeFileSync(join(dir, 'device'), `${d.device}\n`);
    writeFileSync(join(dir, 'class'), `${d.cls}\n`);
    symlinkSync(`../../../devices/${d.path}`, join(bus, d.path.split('/').at(-1)!));
  }
  writeFileSync(join(bus, 'not-a-device'), 'x'); // ignored: not an address
  return bus;
}

describe("the host's PCI tree", () => {
  it('from sysfs links: the GPU and NVSwitch below a switch, with vendor, device and class', async () => {
    const sysfsDir = fakeSysfs([
      { path: 'pci0000:80/0000:80:01.0', vendor: '0x8086', device: '0x352a', cls: '0x060400' },
      { path: 'pci0000:80/0000:80:01.0/0000:81:00.0', vendor: '0x1000', device: '0xc030', cls: '0x060400' },
      { path: 'pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0', vendor: '0x1000', device: '0xc030', cls: '0x060400' },
      { path: 'pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0', vendor: '0x10de', device: '0x2330', cls: '0x030200' },
      { path: 'pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:01.0', vendor: '0x1000', device: '0xc030', cls: '0x060400' },
      { path: 'pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:01.0/0000:84:00.0', vendor: '0x10de', device: '0x22a3', cls: '0x068000' },
    ]);
    const tree = await readPciTree({ sysfsDir, lspci: '/nonexistent/lspci', timeoutMs: 2_000 });
    expect(tree?.source).toBe('sysfs');
    expect(tree?.devices).toContainEqual({ address: '0000:83:00.0', parent: '0000:82:00.0', vendor: '10de', device: '2330', class: '030200' });
    const topology = new PciTopology(tree!);
    expect(topology.below('0000:80:01.0')).toEqual({ gpus: ['0000:83:00.0'], nvswitches: ['0000:84:00.0'] });
  });

  it('falls back to lspci -tvnn when sysfs has no devices, and to nothing when neither answers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-lspci-'));
    dirs.push(dir);
    const fixture = readFileSync(new URL('../../../../test/fixtures/kernel/topology/lspci-tv-laptop.txt', import.meta.url), 'utf8');
    writeFileSync(join(dir, 'tree.txt'), fixture);
    const lspci = join(dir, 'lspci');
    writeFileSync(lspci, `#!/bin/sh\n[ "$1" = "-tvnn" ] || exit 2\ncat "${join(dir, 'tree.txt')}"\n`);
    chmodSync(lspci, 0o755);
    const tree = await readPciTree({ sysfsDir: join(dir, 'missing'), lspci, timeoutMs: 5_000 });
    expect(tree?.source).toBe('lspci');
    expect(new PciTopology(tree!).below('0000:00:1c.0').gpus).toEqual(['0000:01:00.0']);
    expect(await readPciTree({ sysfsDir: join(dir, 'missing'), lspci: join(dir, 'absent'), timeoutMs: 2_000 })).toBeUndefined();
  });
});
