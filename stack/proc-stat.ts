// What Linux's /proc says of a process: its parent and its start time (a PID can be reused; a PID with its
// start time names one process). Null where there is no /proc.
import { readFileSync } from 'node:fs';

function fieldsAfterName(pid: number): string[] | null {
  try {
    // The command name (field 2) may hold spaces and parentheses; the fields after its last ')' do not.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** Field 22 of /proc/<pid>/stat: clock ticks after boot when the process started. */
export function startTime(pid: number): string | null {
  return fieldsAfterName(pid)?.[19] ?? null;
}

export function parentPid(pid: number): number | null {
  const ppid = fieldsAfterName(pid)?.[1];
  return ppid === undefined ? null : Number(ppid);
}
