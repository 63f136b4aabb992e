// PLANTED, test-only: the deliberately broken adapters as a destinations module for the kit, defined through the
// destination API as a user defines theirs (under names of their own), on the same real servers as the built-in
// ones (harness/conformance-targets.ts).
import { emailSettingsFrom } from '../../activities/destinations/built-in.js';
import { emailSmtpContract } from '../../activities/destinations/email-smtp.js';
import { keyedApiContract } from '../../activities/destinations/keyed-api.js';
import type { ConformanceTargets } from '../../conformance/target.js';
import { defineDestination } from '../../domain/destination.js';
import { emailTarget, keyedApiTarget } from '../../harness/conformance-targets.js';
import { emailSmtp as emailSmtpToday } from './email-smtp-today.js';
import { keyedApiTimeoutNotSent, PLANTED_TIMEOUT_NOT_SENT } from './keyed-api-timeout-not-sent.js';

export const PLANTED_EMAIL_TODAY = 'email-smtp-today';

export const plantedDestinations = [
  defineDestination({
    contract: { ...emailSmtpContract, name: PLANTED_EMAIL_TODAY },
    connect: ({ env }) => {
      const settings = emailSettingsFrom(env);
      return settings && emailSmtpToday(settings);
    },
  }),
  defineDestination({
    contract: { ...keyedApiContract, name: PLANTED_TIMEOUT_NOT_SENT },
    connect: ({ env }) =>
      env.EFFECT_LEDGER_PROVIDER_URL ? keyedApiTimeoutNotSent(env.EFFECT_LEDGER_PROVIDER_URL) : undefined,
  }),
];

export default plantedDestinations;

export const conformance: ConformanceTargets = {
  [PLANTED_EMAIL_TODAY]: emailTarget(),
  [PLANTED_TIMEOUT_NOT_SENT]: keyedApiTarget(),
};
