// A caller in another namespace (docs/nexus.md): the Nexus service's definition, from the package, as its workflow
// imports it.
import { effectLedgerNexusService } from 'effect-ledger/nexus';

const { name, operations } = effectLedgerNexusService;
process.stdout.write(JSON.stringify({ service: name, operations: Object.values(operations).map((o) => o.name) }));
