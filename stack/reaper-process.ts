// The reaper: a small process of its own that outlives the harness process it serves (stack/reaper.ts).
// It reads "<pid> <starttime>" lines on stdin; when stdin ends — the harness exited or was SIGKILLed, so
// the pipe closed — it stops every registered process still running: SIGTERM, then SIGKILL after a grace.
// The start time guards against a PID reused by an unrelated process meanwhile.
import { createInterface } from 'node:readline';
import { startTime } from './proc-stat.js';

const GRACE_MS = 5000;
const watched = new Map<number, string>();
const alive = (pid: number, started: string) => startTime(pid) === started;

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // gone meanwhile
  }
}

process.on('SIGINT', () => {}); // a terminal's Ctrl-C is the harness's to handle, not ours
createInterface({ input: process.stdin })
  .on('line', (line) => {
    const [pid, started] = line.split(' ');
    if (pid && started) watched.set(Number(pid), started);
  })
  .on('close', async () => {
    const targets = [...watched].filter(([pid, started]) => alive(pid, started));
    for (const [pid] of targets) signal(pid, 'SIGTERM');
    const deadline = Date.now() + GRACE_MS;
    while (targets.some(([pid, started]) => alive(pid, started)) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    for (const [pid, started] of targets) if (alive(pid, started)) signal(pid, 'SIGKILL');
    process.exit(0);
  });
