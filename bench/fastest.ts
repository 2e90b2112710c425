/**
 * The fastest of `repeats` timed runs of each side, the sides taking turns (in the order given),
 * each run returning the milliseconds it timed: the machine is shared, and a process's first run
 * of a side also pays one-time costs (modules loaded, code compiled) that a memory in use does not.
 */
export async function fastestOfAlternating<Side extends string>(repeats: number, sides: Record<Side, () => Promise<number>>): Promise<Record<Side, number>> {
  const names = Object.keys(sides) as Side[];
  const fastest = Object.fromEntries(names.map((side) => [side, Number.POSITIVE_INFINITY])) as Record<Side, number>;
  for (let run = 0; run < repeats; run++) {
    for (const side of names) fastest[side] = Math.min(fastest[side], await sides[side]());
  }
  return fastest;
}
