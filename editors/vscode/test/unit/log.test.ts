import { strict as assert } from 'assert';
import { failureLevel, LevelledLog, LevelRouter, parseLogLine } from '../../src/log';

class RecordingLog implements LevelledLog {
  readonly lines: string[] = [];
  trace(m: string) { this.lines.push(`trace ${m}`); }
  debug(m: string) { this.lines.push(`debug ${m}`); }
  info(m: string) { this.lines.push(`info ${m}`); }
  warn(m: string) { this.lines.push(`warn ${m}`); }
  error(m: string) { this.lines.push(`error ${m}`); }
}

describe('log levels', () => {
  it('routes the server stderr and the client lines at their level, without their timestamp', () => {
    const log = new RecordingLog();
    const router = new LevelRouter(log);
    router.append('2026-12-01 12:00:00,123 INFO lsp_server.surfaces.lsp.server: started\n2026-12-01 12:00:01,5');
    router.append('00 WARNING lsp_server.surfaces.lsp.server: logLevel \'loud\' is not one of …\n');
    router.appendLine('[Error - 12:00:02 PM] Server initialization failed.');
    router.appendLine('  Message: boom');
    router.appendLine('[Info  - 12:00:03 PM] Connection to server got closed.');
    router.append('2026-12-01 12:00:04,000 DEBUG pygls: x\n2026-12-01 12:00:05,000 CRITICAL lsp_server: down');
    router.flush();
    assert.deepEqual(log.lines, [
      'info lsp_server.surfaces.lsp.server: started',
      "warn lsp_server.surfaces.lsp.server: logLevel 'loud' is not one of …",
      'error Server initialization failed.',
      'error   Message: boom',
      'info Connection to server got closed.',
      'debug pygls: x',
      'error lsp_server: down',
    ]);
    assert.deepEqual(parseLogLine('plain'), { level: undefined, message: 'plain' });
  });

  it('says a normal stop (exit code 0) as information, any other exit as an error', () => {
    assert.deepEqual(parseLogLine('[Error - 12:00:00] Server process exited with code 0.'), {
      level: 'info',
      message: 'Server process exited with code 0.',
    });
    assert.equal(parseLogLine('[Error - 12:00:00] Server process exited with code 1.').level, 'error');
  });

  it('logs a cancellation as information, a refusal as a warning, a dead server as an error', () => {
    assert.equal(failureLevel('cancelled'), 'info');
    assert.equal(failureLevel('acceptance_checks_failed'), 'warn');
    assert.equal(failureLevel('invalid_params'), 'warn');
    assert.equal(failureLevel('server_unavailable'), 'error');
  });
});
