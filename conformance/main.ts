#!/usr/bin/env node
// npm run conformance -- <destinations module> [destination...]: the kit on the command line. The module is
// named as EFFECT_LEDGER_DESTINATIONS names one (module.ts). Prints the table and every violation; exits 0 when
// there is none, 1 when there are, 2 when it could not run.
import { writeFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { FAULT_DESCRIPTIONS, FAULTS, type FaultName, STEP_KINDS, type StepKind } from './faults.js';
import { loadConformanceModule } from './module.js';
import { runConformance } from './run.js';

function listOf<T extends string>(allowed: readonly T[]) {
  return (value: string): T[] => {
    const items = value.split(',').map((s) => s.trim());
    const wrong = items.filter((i) => !allowed.includes(i as T));
    if (wrong.length) throw new InvalidArgumentError(`unknown: ${wrong.join(', ')} (known: ${allowed.join(', ')})`);
    return items as T[];
  };
}

function milliseconds(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 100) throw new InvalidArgumentError('a whole number of milliseconds, at least 100');
  return n;
}

const program = new Command('effect-ledger-conformance')
  .description('Runs destination adapters against their real servers through Toxiproxy, fault by fault.')
  .argument(
    '<module>',
    'a destinations module, as EFFECT_LEDGER_DESTINATIONS names it (a path, a package, several comma-separated), exporting `conformance` beside its destinations (docs/conformance.md)',
  )
  .argument('[destinations...]', "the destinations to run (default: every one the module's `conformance` names)")
  .addOption(new Option('--faults <list>', `comma-separated faults (default all)`).argParser(listOf<FaultName>(FAULTS)))
  .addOption(
    new Option('--kinds <list>', 'comma-separated step kinds (default all)').argParser(listOf<StepKind>(STEP_KINDS)),
  )
  .option('--call-timeout <ms>', 'the call timeout every fault is scaled to', milliseconds, 3000)
  .option('--absence-grace <ms>', "overrides every destination's absence grace (default: each one's own)", milliseconds)
  .option('--json <file>', 'also write the whole report, every observation of every cell, as JSON to <file>')
  .addHelpText('after', `\nFaults:\n${FAULTS.map((f) => `  ${f.padEnd(23)} ${FAULT_DESCRIPTIONS[f]}`).join('\n')}\n`);

program.parse();
const [modulePath, names] = program.processedArgs as [string, string[]];
const options = program.opts<{
  faults?: FaultName[];
  kinds?: StepKind[];
  callTimeout: number;
  absenceGrace?: number;
  json?: string;
}>();

try {
  const { destinations, targets } = await loadConformanceModule(modulePath);
  const report = await runConformance({
    destinations,
    targets,
    only: names,
    ...(options.faults ? { faults: options.faults } : {}),
    ...(options.kinds ? { kinds: options.kinds } : {}),
    callTimeoutMs: options.callTimeout,
    ...(options.absenceGrace === undefined ? {} : { absenceGraceMs: options.absenceGrace }),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  // A file, not stdout: stdout is the table (the dev server's output goes to the log the table names on failure).
  if (options.json) writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`${report.table}\n`);
  process.exit(report.ok ? 0 : 1);
} catch (error) {
  process.stderr.write(`conformance: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
}
