// Loaded (`--import`) into every test file's process by the runner: when a test file's process exits, it
// appends the CPU time of its process tree — its own and what it waited for (dev server, workers, simulator,
// CLI runs, Go servers) — to $EL_TEST_USAGE, one JSON line per file. Linux (/proc); elsewhere nothing.
// Plain JavaScript: Node also loads it into worker threads (the SDK's workflow threads), where tsx is not.
import { appendFileSync, readFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const out = process.env.EL_TEST_USAGE;
const file = process.argv[1] ?? '';
const TICKS_PER_SECOND = 100; // USER_HZ, 100 on every Linux the suite runs on

if (out && isMainThread && /\.test\.[cm]?[jt]s$/.test(file)) {
  process.once('exit', () => {
    try {
      const stat = readFileSync('/proc/self/stat', 'utf8');
      // utime stime cutime cstime are fields 14–17; the fields after the command name's ')' start at 3.
      const [utime = 0, stime = 0, cutime = 0, cstime = 0] = stat
        .slice(stat.lastIndexOf(')') + 2)
        .split(' ')
        .slice(11, 15)
        .map(Number);
      const cpuMs = ((utime + stime + cutime + cstime) * 1000) / TICKS_PER_SECOND;
      appendFileSync(out, `${JSON.stringify({ file, cpuMs })}\n`);
    } catch {
      // no /proc: no CPU figure
    }
  });
}
