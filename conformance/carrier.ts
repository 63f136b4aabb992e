// The kit's own destination, so that any destination can be the further step of a multi-step effect: a note
// in a table of a throwaway PostgreSQL database (the orders-sql adapter's table and transactional send), and
// the operation `note.then`, whose second step is the sample send of the destination under test.
import { z } from 'zod';
import { ordersSql } from '../activities/destinations/orders-sql.js';
import { type Destination, defineDestination } from '../domain/destination.js';
import type { DestinationContract } from '../domain/destination-contract.js';
import { FURTHER_STEP } from './faults.js';
import type { Sample } from './requests.js';

/** One carrier per destination under test: its plan names that destination. */
export const carrierName = (destination: string) => `kit-carrier.${destination}`;

const note = z.object({ note: z.string().min(1).max(200) }).strict();

export function carrierContract(destination: string, sample: Sample): DestinationContract {
  const name = carrierName(destination);
  return {
    name,
    mechanism: 'transactional',
    keyRetentionSeconds: null,
    keyScope: 'effect',
    operations: { 'note.create': note, 'note.then': note },
    steps: {
      'note.then': (payload) => [
        { step: 'main', destination: name, operation: 'note.create', payload },
        { step: FURTHER_STEP, destination, operation: sample.operation, payload: sample.payload },
      ],
    },
    callTimeoutMs: 5_000,
    retryAfterProvenAbsence: true,
    absenceGraceMs: 5_000,
    readbackMaxIntervalMs: 60_000,
    buildPackage(effectId, _operation, payload) {
      return { target: 'a note of the conformance kit', body: { ...payload, effect_id: effectId } };
    },
    describe: () => `a note, then ${destination} ${sample.operation}`,
  };
}

/** The carrier as a destination: orders-sql's connection, on a database with its table (stack/orders-db.ts). */
export function carrierDestination(destination: string, sample: Sample, databaseUrl: string): Destination {
  return defineDestination({ contract: carrierContract(destination, sample), connect: () => ordersSql(databaseUrl) });
}
