// Which errors a worker survives: the driver's reports of a connection that is gone, nothing else.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isLostConnection } from '../workers/connection-loss.js';

describe('connection loss the worker survives', () => {
  test("a terminated backend's code, and postgres.js writing to the socket it dropped", () => {
    assert.equal(isLostConnection(Object.assign(new Error('terminating connection'), { code: '57P01' })), true);
    assert.equal(isLostConnection(Object.assign(new Error('closed'), { code: 'CONNECTION_CLOSED' })), true);
    const write = new TypeError("Cannot read properties of null (reading 'write')");
    write.stack = `${write.message}\n    at Immediate.nextWrite (/app/node_modules/postgres/src/connection.js:255:22)`;
    assert.equal(isLostConnection(write), true);
  });

  test('anything else still takes the worker down', () => {
    assert.equal(isLostConnection(new TypeError("Cannot read properties of null (reading 'write')")), false);
    assert.equal(isLostConnection(Object.assign(new Error('unique violation'), { code: '23505' })), false);
    assert.equal(isLostConnection(new Error('boom')), false);
    assert.equal(isLostConnection(null), false);
  });
});
