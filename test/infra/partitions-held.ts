/**
 * The partitions a gpualert service holds since its group's last rebalance, as its log says: each
 * lane's latest `group_joined` line (the engine reads its faults in a lane of their own), summed.
 */
export function partitionsHeld(output: string): number {
  const lanes = new Map<string, number>();
  for (const line of output.split('\n')) {
    if (!line.includes('"group_joined"')) continue;
    const join = JSON.parse(line) as { partitions: number; lane?: string };
    lanes.set(join.lane ?? 'main', join.partitions);
  }
  return [...lanes.values()].reduce((n, p) => n + p, 0);
}
