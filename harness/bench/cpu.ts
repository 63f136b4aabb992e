// Where a run's time went: CPU seconds per process of the bench's stack, read from /proc (Linux) before and
// after the run. Processes are picked by role — our workers by PID, the dev server by its port, PostgreSQL
// backends by the bench database's name in their title — so other work on the machine is not counted.
import { readdirSync, readFileSync } from 'node:fs';

/** Linux reports utime/stime in clock ticks of USER_HZ, 100 on every mainstream architecture. */
const TICKS_PER_SECOND = 100;

export type Role = (process: { pid: number; ppid: number; cmdline: string }) => boolean;

interface Stat {
  ppid: number;
  cpuSeconds: number;
}

function statOf(pid: number): Stat | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces and parentheses): state ppid … utime stime.
    const fields = raw.slice(raw.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), cpuSeconds: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND };
  } catch {
    return undefined; // gone meanwhile
  }
}

function cmdlineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '';
  }
}

/** CPU seconds used so far by the processes of each role (the first role that claims a process). */
export function cpuByRole(roles: Readonly<Record<string, Role>>): Record<string, number> {
  const totals: Record<string, number> = Object.fromEntries(Object.keys(roles).map((name) => [name, 0]));
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const stat = statOf(pid);
    if (!stat) continue;
    const process = { pid, ppid: stat.ppid, cmdline: cmdlineOf(pid) };
    const role = Object.entries(roles).find(([, claims]) => claims(process))?.[0];
    if (role) totals[role] = (totals[role] ?? 0) + stat.cpuSeconds;
  }
  return totals;
}

/** CPU milliseconds per effect of each role between two readings. */
export function cpuMsPerEffect(
  before: Record<string, number>,
  after: Record<string, number>,
  effects: number,
): Record<string, number> {
  return Object.fromEntries(
    Object.keys(after).map((role) => [role, (((after[role] ?? 0) - (before[role] ?? 0)) * 1000) / effects]),
  );
}
