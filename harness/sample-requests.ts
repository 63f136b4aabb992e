// Approval requests as backend code would send them.
export function taskRequest(effectId: string, request: string, title = 'Prepare preview') {
  return {
    effectId,
    destination: 'keyed-api',
    operation: 'task.create',
    payload: { title, request },
    approvedBy: 'ana@example.com',
    authorizationRef: `APPROVAL-${request}`,
  };
}

export function refundRequest(effectId: string, amount: number, charge = 'ch_1001') {
  return {
    effectId,
    destination: 'keyed-api',
    operation: 'refund.create',
    payload: { charge, amount, currency: 'EUR' },
    approvedBy: 'ana@example.com',
    authorizationRef: 'REFUND-POLICY-7',
  };
}

export function postRequest(effectId: string, text: string) {
  return {
    effectId,
    destination: 'social-feed',
    operation: 'post.publish',
    payload: { channel: 'linkedin-ru', text },
    approvedBy: 'ana@example.com',
    authorizationRef: 'EDITORIAL-3',
  };
}

/** Two outbound steps: a task at the keyed API (main), then a post announcing it (step `announce`). */
export function taskAnnouncedRequest(effectId: string, request: string, text = 'A new task is up') {
  return {
    effectId,
    destination: 'keyed-api',
    operation: 'task.announce',
    payload: { title: 'Prepare preview', request, channel: 'team-updates', text },
    approvedBy: 'ana@example.com',
    authorizationRef: `APPROVAL-${request}`,
  };
}
