// PLANTED, test-only: the conformance targets of the deliberately broken adapters, on the same real servers
// as the built-in ones (harness/conformance-targets.ts), under names of their own.
import type { ConformanceTargets } from '../../conformance/target.js';
import { emailTarget, keyedApiTarget } from '../../harness/conformance-targets.js';
import { emailSmtp as emailSmtpToday } from './email-smtp-today.js';
import { keyedApiTimeoutNotSent, PLANTED_TIMEOUT_NOT_SENT } from './keyed-api-timeout-not-sent.js';

export const PLANTED_EMAIL_TODAY = 'email-smtp-today';

export const conformance: ConformanceTargets = {
  [PLANTED_EMAIL_TODAY]: emailTarget((settings) => ({ ...emailSmtpToday(settings), name: PLANTED_EMAIL_TODAY })),
  [PLANTED_TIMEOUT_NOT_SENT]: keyedApiTarget(keyedApiTimeoutNotSent),
};
